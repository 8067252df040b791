"""Plans: what to compare, validated (pydantic), loaded from TOML or built from CLI flags,
and expanded into the matrix of cells the runner measures."""

from __future__ import annotations

import functools
import itertools
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    ValidationError,
    field_validator,
    model_validator,
)

from fsbench import workloads
from fsbench.plan import targets
from fsbench.plan.fsconfig import FsConfig as FsConfig  # what plans are made of
from fsbench.plan.fsconfig import one_line as one_line
from fsbench.plan.fsconfig import parse_fs_spec as parse_fs_spec  # what plans are built of
from fsbench.plan.space import search_configs
from fsbench.plan.targets import LoopTargetSpec, TargetSpec
from fsbench.system import knobs, monitors, numbers
from fsbench.system.errors import FsbenchError
from fsbench.workloads import aging
from fsbench.workloads.base import Scale

CHAIN_SEP = "+"


class WorkloadSpec(BaseModel):
    """A workload, or a chain `untar+tree-read+fsck` whose steps share one mkfs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    # Scalars or lists; a list is a sweep: one cell per value. In a chain, a parameter
    # applies to every step that has it.
    params: dict[str, Any] = Field(default_factory=dict)
    # Parameters for one scale only, over `params` (`[workload.params_at.quick]`): a preset
    # sized for its own scale still shrinks to the workload's tiny defaults at --scale tiny.
    params_at: dict[Scale, dict[str, Any]] = Field(default_factory=dict)
    # Run only on these configs (by label: `ext4`, `btrfs zstd`); empty = every config.
    configs: tuple[str, ...] = ()
    # Run only at these scales (kernel-build: full); empty = every scale.
    scales: tuple[Scale, ...] = ()
    # Knobs for this workload only (added to the plan's): {"vm.dirty_ratio": [1, 20]}.
    knobs: dict[str, Any] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _known_workload(cls, value: str) -> str:
        for step in value.split(CHAIN_SEP):
            try:
                workloads.get(step.strip())
            except KeyError as exc:
                raise ValueError(exc.args[0]) from None
        return CHAIN_SEP.join(step.strip() for step in value.split(CHAIN_SEP))

    @property
    def steps(self) -> list[str]:
        return self.name.split(CHAIN_SEP)


class AgeSpec(BaseModel):
    """`[[age]] recipe = "git-pulls"  pulls = 500`: a recipe and its parameters."""

    model_config = ConfigDict(extra="allow", frozen=True)

    recipe: str

    @property
    def text(self) -> str:
        """As the age knob writes it: 'git-pulls:pulls=500'."""
        params = self.model_extra or {}
        return ":".join([self.recipe, *(f"{k}={v}" for k, v in sorted(params.items()))])

    @model_validator(mode="after")
    def _known(self) -> AgeSpec:
        try:
            aging.parse(self.text)
        except FsbenchError as exc:
            raise ValueError(str(exc)) from None
        return self


MIN_AUTO_REPS = 3
# Two configs are equivalent when the ratio's interval is within 1 ± this (the plan's
# --margin; the statistics read it from here).
DEFAULT_MARGIN = 0.05
DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """'90', '90s', '9m', '1h30m' -> seconds."""
    given = text.strip().lower()
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*([smhd]?)", given)
    if not given or not parts or re.sub(r"(\d+(?:\.\d+)?)\s*([smhd]?)", "", given).strip():
        raise ValueError(f"duration {text!r}: a number of seconds or e.g. 90s, 9m, 1h30m")
    return sum(float(n) * DURATION_UNITS[u or "s"] for n, u in parts)


DEFAULT_TRIAL_TIMEOUT = {Scale.TINY: 600.0, Scale.QUICK: 3600.0, Scale.FULL: 12 * 3600.0}
# Seconds a run waits out an unreachable result store (a server restarting) by default.
DEFAULT_STORE_WAIT = 300.0


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = "custom"
    description: str = ""
    scale: Scale = Field(
        default=Scale.QUICK, description="tiny, quick or full: each workload's sizes per scale."
    )
    # "decide" (the default): balanced rounds per comparison group until every pair of its
    # configs is ordered or equivalent (decisions.py), at most max_reps, within the budget;
    # a number: a fixed design; "auto": rounds until the 95% CI half-width of every cell
    # is within ci_target of the mean.
    reps: int | Literal["decide", "auto"] = Field(
        default="decide",
        description="Repetitions per cell: decide (rounds until every pair of configs is "
        "ordered or equivalent, at most --max-reps, within --budget), a number (a fixed "
        "design), or auto (until the 95% CI half-width is within --ci-target).",
    )
    margin: float = Field(
        default=DEFAULT_MARGIN,
        gt=0,
        lt=1,
        description="Two configs are equivalent when the 90% CI of their ratio is within "
        "1 ± this margin (0.05: ±5%).",
    )
    steady: Literal["both", "spread", "slope"] = Field(
        default="both",
        description="What makes a per-second series steady (fio's ss=): both its spread and "
        "its slope within their limits, or one of them.",
    )
    budget: float | None = Field(
        default=None,
        gt=0,
        description="Seconds the whole run may take (--budget 9m, 1h; default: none): with "
        "--reps decide, each group's looks are planned to fit it; a race of fsbench tune "
        "starts no round that would go past it.",
    )
    ci_target: float = Field(
        default=0.05, gt=0, lt=1, description="CI half-width / mean that --reps auto aims at."
    )
    # Seconds one cell (mkfs + every step) may take before it is failed; default by scale.
    trial_timeout: float | None = Field(
        default=None,
        gt=0,
        description="Seconds a trial may take before it is failed and the run goes on "
        "(default by scale: "
        + ", ".join(f"{k} {v:.0f}" for k, v in DEFAULT_TRIAL_TIMEOUT.items())
        + ").",
    )
    # Left out of the stored plan at its default: plans stored before it stay as they were.
    store_wait: float = Field(
        default=DEFAULT_STORE_WAIT,
        ge=0,
        exclude_if=lambda seconds: seconds == DEFAULT_STORE_WAIT,
        description="Seconds a run waits out an unreachable result store (a server "
        "restarting; --store-wait 10m) before it stops, interrupted and resumable; its "
        "trials measure on meanwhile and are written when the store is back (0: stop at "
        "once).",
    )
    # Left out of the stored plan at its default: plans stored before it stay as they were.
    cpu_idle: Literal["any", "shallow"] = Field(
        default="any",
        exclude_if=lambda idle: idle == "any",
        description="any: the CPUs idle as the machine lets them; shallow: held out of their "
        "deeper idle states for the whole run (a wake-up latency of 0 requested through "
        "/dev/cpu_dma_latency; idle CPUs poll): on a virtual machine, waking a halted vCPU "
        "is an exit to the hypervisor, which every fsync's completion may pay.",
    )
    max_reps: int = Field(
        default=10,
        le=1000,
        description="The most repetitions of --reps decide or auto (fsbench bisect: per "
        "commit, the endpoints get all of them; default 5 there).",
    )
    warmup: int = Field(
        default=1,
        ge=0,
        le=3,
        description="Warm-up rounds per comparison group: each cell runs once more, stored "
        "but never counted.",
    )
    seed: int | None = Field(
        default=None,
        ge=0,
        description="Seed of the shuffled, balanced order of configs in each round "
        "(default: a fresh one, recorded with the run).",
    )
    fs: list[FsConfig] = Field(min_length=1)
    workloads: list[WorkloadSpec] = Field(min_length=1, alias="workload")
    # The spec of its kind (plan/targets.py), dumped with every field of that kind.
    target: SerializeAsAny[TargetSpec] = Field(default_factory=LoopTargetSpec)
    # System knobs, each a dimension when a list: {"vm.dirty_ratio": [1, 20],
    # "scheduler": ["none", "bfq"], "contention": ["idle", "busy"]}.
    knobs: dict[str, Any] = Field(default_factory=dict)
    # The filesystem's age, a dimension like a knob (`[[age]]` tables; --age): fresh
    # (`recipe = "none"`) or aged by a recipe with its parameters.
    age: list[AgeSpec] = Field(default_factory=list)
    # A search space (`[search]`: per filesystem, lists of mkfs and mount alternatives;
    # plan/space.py): `fsbench tune` races it, `fsbench run` runs its whole grid. Its
    # configs join `fs` when the plan is built (cli/planflags.py); kept as written.
    search: dict[str, Any] | None = None
    # Beside every trial's timed phase (system/monitors); the default is left out of the
    # stored plan, which stays as it was before plans named their monitors.
    monitors: list[str] = Field(
        default_factory=lambda: list(monitors.DEFAULT),
        exclude_if=lambda names: tuple(names) == monitors.DEFAULT,
        description="The monitors beside every trial (fsbench list monitors); tracers run "
        "only in an instrumented pass.",
    )

    # An instrumented pass (an explain run's plan, never a user's): its trials run with
    # tracers beside the timed phase, each step in a cgroup of its own, and its values are
    # never counted by a comparison. Left out of a plan that is not one.
    instrumented: bool = Field(
        default=False,
        exclude_if=lambda on: not on,
        description="The plan of an instrumented pass (fsbench explain): tracers allowed.",
    )

    @field_validator("monitors")
    @classmethod
    def _known_monitors(cls, value: list[str]) -> list[str]:
        return list(monitors.check(value, instrumented=True))  # one line for an unknown name

    @model_validator(mode="after")
    def _tracers_only_instrumented(self) -> Plan:
        try:
            monitors.check(self.monitors, instrumented=self.instrumented)
        except ValueError as exc:  # one line, at the plan's field
            raise ValueError(f"monitors: {exc}") from None
        return self

    @field_validator("search")
    @classmethod
    def _search_space(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value:
            search_configs(value)  # refuses a bad table at load, in one line
        return value

    @field_validator("target", mode="before")
    @classmethod
    def _target_kind(cls, value: Any) -> Any:
        return targets.parse(value)

    @field_validator("reps")
    @classmethod
    def _reps_range(cls, value: int | str) -> int | str:
        if isinstance(value, int) and not 1 <= value <= 1000:
            raise ValueError("reps must be between 1 and 1000, decide or auto")
        return value

    @field_validator("budget", "store_wait", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return parse_duration(value) if isinstance(value, str) else value

    @field_validator("max_reps")
    @classmethod
    def _max_reps_floor(cls, value: int) -> int:
        if value < MIN_AUTO_REPS:
            raise ValueError(
                f"max_reps {value}: at least {MIN_AUTO_REPS} (--reps decide and auto make "
                f"{MIN_AUTO_REPS} repetitions before they judge)"
            )
        return value

    @property
    def timeout(self) -> float:
        return self.trial_timeout or DEFAULT_TRIAL_TIMEOUT[self.scale]

    @property
    def planned_reps(self) -> int:
        """Repetitions per cell at most."""
        return int(self.reps) if isinstance(self.reps, int) else self.max_reps

    @property
    def adaptive(self) -> bool:
        """Whether the repetition loop decides, round by round, when a group has enough."""
        return not isinstance(self.reps, int)


@dataclass(frozen=True)
class Cell:
    """One point of the matrix: a filesystem config, a workload, scalar parameters."""

    config: FsConfig
    workload: str
    params: dict[str, Any]
    knobs: dict[str, str] = field(default_factory=dict)

    @functools.cached_property
    def key(self) -> str:
        key = f"{self.config.display}|{self.workload}|{json.dumps(self.params, sort_keys=True)}"
        return key + (f"|{json.dumps(self.knobs, sort_keys=True)}" if self.knobs else "")

    @property
    def is_chain(self) -> bool:
        return CHAIN_SEP in self.workload

    @property
    def steps(self) -> list[tuple[str, dict[str, Any]]]:
        """(workload, its own parameters) for each step of the cell."""
        out = []
        for name in self.workload.split(CHAIN_SEP):
            fields = workloads.get(name).params_model.model_fields
            out.append((name, {k: v for k, v in self.params.items() if k in fields}))
        return out

    def describe(self) -> str:
        """'ext4 · fio profile=seq-write size=6G': the parameters set (numbers.settings)."""
        shown = numbers.settings({**self.params, **self.knobs})
        return f"{self.config.display} · {self.workload} {shown}".rstrip()


def parse_set(items: list[str], flag: str = "--set") -> dict[str, list[str]]:
    """`--set method=fallocate,write-4k --set size=64M` -> {name: [values]}. A comma in
    quotes or brackets is part of its value (`--set "run=git log '--format=%h,%s'"`)."""
    out: dict[str, list[str]] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name or not value.strip():
            raise FsbenchError(f"{flag} {item!r}: expected NAME=VALUE[,VALUE...]")
        out[name] = [v.strip() for v in _split_values(value) if v.strip()]
    return out


def _split_values(text: str) -> list[str]:
    """`a,b` -> [a, b]; the commas inside quotes ('...', "...") or brackets ([], {}) stay."""
    pieces, current, quote, depth = [], "", "", 0
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth = max(0, depth - 1)
        elif char == "," and depth == 0:
            pieces.append(current)
            current = ""
            continue
        current += char
    return [*pieces, current]


def _whole_values(names: list[str]) -> frozenset[str]:
    """The parameters of these workloads whose one value is a list (a command's argv)."""
    found: frozenset[str] = frozenset()
    for name in names:
        found |= workloads.get(name).params_model.whole_values()
    return found


def _set_value(name: str, values: list[str], whole: frozenset[str]) -> Any:
    """A --set parameter's values as the plan takes them: one value, or a sweep; a
    parameter whose value is itself a list (a command) is never swept."""
    if name in whole and len(values) != 1:
        raise FsbenchError(
            f"--set {name}: one value (a comma outside quotes or brackets makes a sweep, and "
            f"{name} is not swept): quote the comma, or write the plan in a file"
        )
    return values[0] if len(values) == 1 else list(values)


def load_toml(text: str, source: str) -> Plan:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FsbenchError(f"{source}: invalid TOML: {exc}") from None
    try:
        return Plan.model_validate(data)
    except ValidationError as exc:
        raise FsbenchError(f"{source}: {one_line(exc)}") from None


def load_plan_file(path: Path) -> Plan:
    try:
        text = path.read_text()
    except OSError as exc:
        raise FsbenchError(f"cannot read plan {path}: {exc.strerror}") from None
    if (
        path.suffix == ".json"
    ):  # a plan as fsbench stores it (each host of a run on many hosts gets one)
        try:
            return Plan.model_validate_json(text)
        except ValidationError as exc:
            raise FsbenchError(f"{path}: {one_line(exc)}") from None
    return load_toml(text, str(path))


def knob_combinations(
    plan: Plan,
    knob_overrides: dict[str, list[str]] | None = None,
    spec: WorkloadSpec | None = None,
) -> list[dict[str, str]]:
    """Every combination of the plan's knobs, the workload's own and --knob, validated."""
    values: dict[str, Any] = {
        **plan.knobs,
        **({aging.KNOB: [a.text for a in plan.age]} if plan.age else {}),
        **(spec.knobs if spec else {}),
        **(knob_overrides or {}),
    }
    if spec is not None and aging.KNOB not in values:
        # A workload that ages the filesystem itself needs an age: its own default.
        own = [workloads.get(s).default_age for s in spec.steps]
        if any(own):
            values[aging.KNOB] = [next(a for a in own if a)]
    if knobs.KERNEL in values:
        raise FsbenchError(
            "knob kernel: the kernel is chosen by the VM target: --target vm --kernel A,B"
        )
    values.update(plan.target.dimensions())
    dims: dict[str, list[str]] = {}
    for name, value in values.items():
        vals = value if isinstance(value, list) else [value]
        if not vals:
            raise FsbenchError(f"knob {name} has an empty list")
        dims[name] = [knob_value(name, v) for v in vals]
    names = list(dims)
    return [
        dict(zip(names, combo, strict=True))
        for combo in itertools.product(*(dims[n] for n in names))
    ]


def knob_value(name: str, value: Any) -> str:
    """A dimension's value as a cell stores it: the filesystem's age as aging writes it (a
    recipe and its parameters), every other knob as the system's knobs do."""
    return aging.normalize(str(value)) if name == aging.KNOB else knobs.validate(name, value)


def with_overrides(plan: Plan, overrides: dict[str, list[str]]) -> Plan:
    """The plan with --set values written into its workloads' parameters (a list of
    several values stays a sweep): the same cells as expand(plan, overrides), from the
    plan alone. Each host of a run on many hosts gets this plan."""
    if not overrides:
        return plan
    specs = []
    for spec in plan.workloads:
        fields: set[str] = set()
        for step in spec.steps:
            fields |= set(workloads.get(step).params_model.model_fields)
        params = dict(spec.params)
        given = {n: v for n, v in overrides.items() if n in fields}
        whole = _whole_values(spec.steps)
        for name, values in given.items():
            params[name] = _set_value(name, values, whole)
        # --set beats a preset's per-scale values too.
        params_at = {
            s: {k: v for k, v in p.items() if k not in given} for s, p in spec.params_at.items()
        }
        specs.append(spec.model_copy(update={"params": params, "params_at": params_at}))
    return plan.model_copy(update={"workloads": specs})


def expand(
    plan: Plan,
    overrides: dict[str, list[str]] | None = None,
    knob_overrides: dict[str, list[str]] | None = None,
) -> list[Cell]:
    """The matrix: configs x workloads x parameter sweeps, with scale defaults filled in.

    Cells of one workload and parameter set are adjacent for every config, so configs that
    are compared with each other run close together in time.
    """
    overrides = overrides or {}
    labels = [c.display for c in plan.fs]
    dup = next((lab for lab in labels if labels.count(lab) > 1), None)
    if dup:
        raise FsbenchError(f"two filesystem configs share the label {dup!r}: add label=NAME")
    known_names: set[str] = set()
    for spec in plan.workloads:
        for step in spec.steps:
            known_names |= set(workloads.get(step).params_model.model_fields)
    unknown = sorted(set(overrides) - known_names)
    if unknown:
        names = ", ".join(s.name for s in plan.workloads)
        raise FsbenchError(
            f"--set {unknown[0]}: no such parameter for {names} "
            f"(known: {', '.join(sorted(known_names))})"
        )
    cells: list[Cell] = []
    for spec in plan.workloads:
        if spec.scales and plan.scale not in spec.scales:
            continue
        knob_sets = knob_combinations(plan, knob_overrides, spec)
        if unknown := sorted(set(spec.configs) - set(labels)):
            raise FsbenchError(f"workload {spec.name}: no config labelled {unknown[0]!r}")
        steps = [workloads.get(step) for step in spec.steps]
        fields: dict[str, None] = {}
        values: dict[str, Any] = {}
        for wl in steps:
            fields.update(dict.fromkeys(wl.params_model.model_fields))
            for k, v in wl.defaults(plan.scale).items():
                values.setdefault(k, v)
        given = {**spec.params, **spec.params_at.get(plan.scale, {})}
        unknown_params = sorted(
            {k for p in (spec.params, *spec.params_at.values()) for k in p} - set(fields)
        )
        if unknown_params:
            raise FsbenchError(
                f"workload {spec.name}: unknown parameter {unknown_params[0]!r} "
                f"(known: {', '.join(fields)})"
            )
        values.update(given)
        whole = _whole_values(spec.steps)
        values.update({k: _set_value(k, v, whole) for k, v in overrides.items() if k in fields})
        # A list is a sweep, one cell per value, unless the parameter's value is a list.
        dims = {
            k: (v if isinstance(v, list) and k not in whole else [v]) for k, v in values.items()
        }
        for pname, vals in dims.items():
            if not vals:
                raise FsbenchError(f"workload {spec.name}: parameter {pname} has an empty list")
        param_names = list(dims)
        for combo in itertools.product(*(dims[n] for n in param_names)):
            chosen = dict(zip(param_names, combo, strict=True))
            dumped: dict[str, Any] = {}
            for wl in steps:
                own = {k: v for k, v in chosen.items() if k in wl.params_model.model_fields}
                try:
                    dumped.update(wl.params_model.model_validate(own).model_dump(mode="json"))
                except ValidationError as exc:
                    raise FsbenchError(f"workload {wl.name}: {one_line(exc)}") from None
            for knob_set in knob_sets:
                for config in plan.fs:
                    if not spec.configs or config.display in spec.configs:
                        cells.append(Cell(config, spec.name, dumped, knob_set))
    if not cells:
        raise FsbenchError(
            f"nothing to run at scale {plan.scale}: every workload is limited to other scales"
        )
    return cells
