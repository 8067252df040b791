"""The plan flags every command that runs a plan takes (`run`, `calibrate`, and
the run on many machines),
and the plan they build. Help texts and defaults come from the plan model's own fields,
so a default is stated once."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Annotated, Any, TypeVar, get_type_hints

import typer
from pydantic import BaseModel, ValidationError

from fsbench import workloads
from fsbench.cli import targetflags
from fsbench.plan import model as planning
from fsbench.plan import presets, targets
from fsbench.plan.model import FsConfig, Plan, WorkloadSpec
from fsbench.plan.space import expand_space
from fsbench.system.errors import FsbenchError
from fsbench.system.units import format_size, parse_size
from fsbench.workloads import aging
from fsbench.workloads.base import Scale


def field_help(model: type[BaseModel], name: str, text: str | None = None) -> str:
    """A flag's help: the field's description and its default, as the model says."""
    info = model.model_fields[name]
    help_text = text or info.description or ""
    default = info.default
    if default is None or isinstance(default, (dict, list)):
        return help_text
    if name == "image_size" and isinstance(default, int):
        default = format_size(default)
    shown = default.value if hasattr(default, "value") else default
    return f"{help_text} \\[default: {shown}]"


FS_HELP = (
    "Filesystem configs: 'ext4,xfs' or one config with options "
    "'TYPE[:mkfs=OPTS][:mount=OPTS][:label=NAME]', e.g. "
    "'ext4:mkfs=-I 256 -O ^flex_bg:mount=data=writeback,nodelalloc'. Repeatable."
)

PlanFile = Annotated[
    Path | None, typer.Argument(metavar="[PLAN.toml]", help="A plan file.", show_default=False)
]
PresetOpt = Annotated[
    str | None,
    typer.Option(
        "--preset",
        "-p",
        help=f"A shipped plan: see `fsbench list presets`. \\[default: {presets.DEFAULT_PRESET}]",
    ),
]
FsOpt = Annotated[list[str], typer.Option("--fs", help=FS_HELP)]
WorkloadOpt = Annotated[list[str], typer.Option("--workload", "-w", help="Workloads, comma list.")]
SetOpt = Annotated[
    list[str],
    typer.Option(
        "--set",
        help="NAME=VALUE[,VALUE...] for any workload parameter; a list makes one cell per value.",
    ),
]
KnobOpt = Annotated[
    list[str],
    typer.Option(
        "--knob",
        help="System knob NAME=VALUE[,VALUE...], a dimension of the matrix, set before "
        "and restored after every trial: a sysctl (vm.dirty_ratio=1,20), "
        "scheduler=none,mq-deadline,bfq,kyber, contention=idle,busy.",
    ),
]
AgeOpt = Annotated[
    list[str],
    typer.Option(
        "--age",
        help="The filesystem's age, a dimension like a knob: none (fresh), or a recipe "
        "with its parameters: git-pulls[:pulls=N][:repo=PATH], churn[:fullness=F]"
        "[:written=X]; a comma list makes one cell per age (--age none,git-pulls).",
    ),
]
RepsOpt = Annotated[str | None, typer.Option("--reps", help=field_help(Plan, "reps"))]
MaxRepsOpt = Annotated[int | None, typer.Option("--max-reps", help=field_help(Plan, "max_reps"))]
MarginOpt = Annotated[float | None, typer.Option("--margin", help=field_help(Plan, "margin"))]
BudgetOpt = Annotated[str | None, typer.Option("--budget", help=field_help(Plan, "budget"))]
SteadyOpt = Annotated[str | None, typer.Option("--steady", help=field_help(Plan, "steady"))]
CiTargetOpt = Annotated[
    float | None, typer.Option("--ci-target", help=field_help(Plan, "ci_target"))
]
ScaleOpt = Annotated[Scale | None, typer.Option("--scale", help=field_help(Plan, "scale"))]
TrialTimeoutOpt = Annotated[
    float | None, typer.Option("--trial-timeout", help=field_help(Plan, "trial_timeout"))
]
StoreWaitOpt = Annotated[
    str | None, typer.Option("--store-wait", help=field_help(Plan, "store_wait"))
]
SeedOpt = Annotated[int | None, typer.Option("--seed", help=field_help(Plan, "seed"))]
WarmupOpt = Annotated[int | None, typer.Option("--warmup", help=field_help(Plan, "warmup"))]
CpuIdleOpt = Annotated[str | None, typer.Option("--cpu-idle", help=field_help(Plan, "cpu_idle"))]
TargetOpt = targetflags.TargetOpt


F = TypeVar("F", bound=Callable[..., Any])


def with_plan_flags(skip: Collection[str] = ()) -> Callable[[F], F]:
    """A command that takes the plan flags (all but `skip`, and but those it declares
    itself) in its `**kwargs`, listed first by `--help`; `flags_of(kwargs)` gathers
    them. Stated once here rather than in every command's signature."""

    def decorate(func: F) -> F:
        added = [
            inspect.Parameter(
                name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=kind
            )
            for name, kind, default in _plan_params()
            if name not in skip
        ]
        return targetflags.with_params(func, added, [])

    return decorate


# The flags that set a plan field of the same name as given.
PLAN_FIELDS = (
    "scale", "max_reps", "ci_target", "margin", "steady", "trial_timeout", "store_wait", "seed",
    "warmup", "cpu_idle",
)  # fmt: skip


@dataclass
class PlanFlags:
    """Every plan flag as given (None: not given). Each field's annotation is its flag,
    and the fields' order is the order `--help` lists them (with_plan_flags)."""

    plan_file: PlanFile = None
    preset: PresetOpt = None
    fs: FsOpt = field(default_factory=list)
    workload: WorkloadOpt = field(default_factory=list)
    set_: SetOpt = field(default_factory=list)
    knob: KnobOpt = field(default_factory=list)
    age: AgeOpt = field(default_factory=list)
    reps: RepsOpt = None
    max_reps: MaxRepsOpt = None
    ci_target: CiTargetOpt = None
    margin: MarginOpt = None
    budget: BudgetOpt = None
    steady: SteadyOpt = None
    scale: ScaleOpt = None
    trial_timeout: TrialTimeoutOpt = None
    store_wait: StoreWaitOpt = None
    seed: SeedOpt = None
    warmup: WarmupOpt = None
    cpu_idle: CpuIdleOpt = None
    target_kind: TargetOpt = None
    # The target flags given, by flag name ({"image-size": "2G"}): cli/targetflags.py.
    target: dict[str, Any] = field(default_factory=dict)


def _plan_params() -> list[tuple[str, Any, Any]]:
    """Every plan flag as (parameter name, annotation, default), from PlanFlags."""
    hints, blank = get_type_hints(PlanFlags, include_extras=True), PlanFlags()
    return [
        (f.name, hints[f.name], getattr(blank, f.name))
        for f in fields(PlanFlags)
        if f.name != "target"
    ]


def flags_of(arguments: Mapping[str, Any], **changes: Any) -> PlanFlags:
    """The plan flags among a command's arguments, by parameter name (the `**given` of
    with_plan_flags and with_target_flags, and any the command declares itself, named):
    the one place they become a PlanFlags; `changes` win over what was given."""
    names = {f.name for f in fields(PlanFlags)} - {"target"}
    given = {**arguments, **changes}
    return PlanFlags(
        **{k: v for k, v in given.items() if k in names}, target=targetflags.given(given)
    )


def parse_budget(text: str | None) -> float | None:
    """--budget in seconds (9m, 1h, 540), None when not given; a bad one refused."""
    if text is None:
        return None
    try:
        return planning.parse_duration(text)
    except ValueError as exc:
        raise FsbenchError(f"--budget: {exc}") from None


@dataclass
class Built:
    plan: Plan
    overrides: dict[str, list[str]]  # --set values
    cells: list[planning.Cell]


def build(flags: PlanFlags) -> Built:
    """The plan the flags describe, its --set overrides, and its matrix."""
    plan = build_plan(flags)
    overrides = planning.parse_set(flags.set_)
    if flags.knob:  # kept in the plan, so the stored run says which knobs it swept
        plan = plan.model_copy(
            update={"knobs": {**plan.knobs, **planning.parse_set(flags.knob, flag="--knob")}}
        )
    if flags.age:  # the plan's ages, as given: each is checked when the matrix expands
        ages = [a.strip() for given in flags.age for a in given.split(",") if a.strip()]
        plan = plan.model_copy(update={"age": [], "knobs": {**plan.knobs, aging.KNOB: ages}})
    return Built(plan, overrides, planning.expand(plan, overrides))


def build_plan(flags: PlanFlags) -> Plan:
    if flags.plan_file and flags.preset:
        raise FsbenchError("give a plan file or --preset, not both")
    explicit = bool(flags.plan_file or flags.preset)
    if flags.plan_file:
        base = planning.load_plan_file(flags.plan_file)
    else:
        base = presets.load_preset(flags.preset or presets.DEFAULT_PRESET)
    data = base.model_dump(by_alias=True)
    if flags.fs:
        data["fs"] = [c for spec in flags.fs for c in planning.parse_fs_spec(spec)]
    elif base.search:  # the grid of the plan's search space, its own configs first
        grid = expand_space([c.spec for c in base.fs], base.search)
        data["fs"] = [c.model_dump() for c in grid.configs]
    if flags.workload:
        names = [w.strip() for spec in flags.workload for w in spec.split(",") if w.strip()]
        # An explicit preset or plan keeps its parameters for the workloads it has;
        # otherwise a workload runs with its own defaults for the scale.
        keep = {w.name: w for w in base.workloads} if explicit else {}
        try:
            data["workload"] = [keep.get(n) or WorkloadSpec(name=n) for n in names]
        except ValidationError as exc:
            raise FsbenchError(f"--workload: {planning.one_line(exc)}") from None
    for name in PLAN_FIELDS:
        value = getattr(flags, name)
        if value is not None:
            data[name] = value
    steps = [
        workloads.get(step)
        for spec in (data["workload"] if flags.workload and not explicit else [])
        for step in (spec.steps if isinstance(spec, WorkloadSpec) else [spec["name"]])
    ]
    if not explicit and flags.workload:
        # A preset's budget is sized for its own workloads, not for the ones given here.
        data["budget"] = None
    if flags.budget is not None:
        data["budget"] = parse_budget(flags.budget)
    if flags.reps is not None:
        data["reps"] = _parse_reps(flags.reps)
    elif wanted := [w.default_reps for w in steps if w.default_reps]:
        # Workloads whose differences hide in the noise with fewer (boot: 10) set the
        # default of an ad-hoc run; a preset or plan says its own number.
        data["reps"] = max(wanted)
    if steps and flags.warmup is None and not any(w.warms for w in steps):
        # No warm-up round where no workload warms (a crash series boots fresh guests):
        # the stored plan, the banner and the report then say what ran.
        data["warmup"] = 0
    data["target"] = target_of(dict(data["target"]), flags)
    if not explicit and (flags.fs or flags.workload):
        data["name"] = "custom"
        data["description"] = ""
        if flags.cpu_idle is None:
            # The default comparison holds the CPUs (its priors were measured so); an
            # ad-hoc run lets them idle unless asked, as every other plan.
            data["cpu_idle"] = "any"
    try:
        data["fs"] = [c if isinstance(c, FsConfig) else FsConfig(**c) for c in data["fs"]]
        return Plan.model_validate(data)
    except ValidationError as exc:
        raise FsbenchError(planning.one_line(exc)) from None


def target_of(target: dict[str, Any], flags: PlanFlags) -> dict[str, Any]:
    """The plan's target with the target flags applied. Each target kind says which flags
    it takes (TargetSpec.flags()); a flag another kind takes is refused."""
    kinds = targets.kinds()
    default = next(iter(kinds))
    kind = flags.target_kind or target.get("kind") or default
    spec = kinds.get(kind)
    if spec is None:
        raise FsbenchError(f"--target {kind!r}: {' or '.join(kinds)} (a disk: --device)")
    if kind != target.get("kind", default):
        # Only what every kind has carries over.
        common = set.intersection(*(set(k.model_fields) for k in kinds.values())) - {"kind"}
        target = {k: v for k, v in target.items() if k in common}
    target["kind"] = kind
    for flag, value in flags.target.items():
        name = spec.flags().get(flag)
        if name is None:
            takers = [k for k, s in kinds.items() if flag in s.flags()]
            raise FsbenchError(
                f"--{flag} needs --target {takers[0]} (this plan's target is {kind})"
            )
        if name == "image_size":
            try:
                value = parse_size(str(value))
            except ValueError as exc:
                raise FsbenchError(f"--image-size: {exc}") from None
        target[name] = value
    return target


def _parse_reps(text: str) -> int | str:
    if text.strip().lower() in ("auto", "decide"):
        return text.strip().lower()
    try:
        return int(text)
    except ValueError:
        raise FsbenchError(f"--reps {text!r}: a number, decide or auto") from None
