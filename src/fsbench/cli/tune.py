"""`fsbench tune`: race filesystem configs on a workload, drop the worse ones round by
round, end with the best (or a group of equally good ones). See docs/tune.md."""

from __future__ import annotations

import sys
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from fsbench import workloads
from fsbench.analysis.design import DEFAULT_MARGIN
from fsbench.analysis.rows import build_rows
from fsbench.cli import planflags as pf
from fsbench.cli import targetflags
from fsbench.cli.common import DbOption, JsonOption, NoReportOption
from fsbench.cli.run import execute, interrupted, report_dir, sigterm_interrupts, write_report
from fsbench.execute import session
from fsbench.execute.race import safety
from fsbench.execute.race.checks import parse_requirements
from fsbench.execute.race.driver import TuneOutcome, Watch, races, run_race
from fsbench.execute.race.rule import MAX_ROUNDS, Drop
from fsbench.execute.race.trials import SafetyVerdict, TuneSpec
from fsbench.execute.schedule import Slot
from fsbench.plan import model as planning
from fsbench.plan import presets
from fsbench.plan.model import Plan
from fsbench.plan.space import describe, expand_space
from fsbench.reports import export, formats
from fsbench.reports import tune as tune_report
from fsbench.store import runkinds
from fsbench.store.records import TrialRecord
from fsbench.store.results import Store
from fsbench.store.values import value_of
from fsbench.system.errors import FsbenchError

F = TypeVar("F", bound=typing.Callable[..., Any])

RESUME_HELP = (
    "Go on with an interrupted race: the last unfinished one in --db, or the run id given in "
    "place of PLAN. Its stored rounds are replayed, the rest run."
)


@targetflags.with_target_flags()
def tune(
    plan_file: pf.PlanFile = None,
    preset: Annotated[
        str | None,
        typer.Option(
            "--preset",
            "-p",
            help="A shipped plan (`fsbench list presets`); those with a search space: "
            + ", ".join(n for n in presets.preset_names() if n.startswith("tune-"))
            + ".",
        ),
    ] = None,
    fs: Annotated[
        list[str],
        typer.Option(
            "--fs",
            help="Configs to race, with alternatives in braces: "
            "'ext4:mount=data={ordered,writeback},commit={5,30}' is 4 configs. Repeatable; "
            "replaces the plan's configs and its [search] table.",
        ),
    ] = [],  # noqa: B006 - typer's list options
    workload: pf.WorkloadOpt = [],  # noqa: B006
    set_: pf.SetOpt = [],  # noqa: B006
    metric: Annotated[
        str | None,
        typer.Option(
            "--metric",
            help="The objective: a metric of the workload (STEP:NAME in a chain); its "
            "direction is the metric's own \\[default: the workload's first headline metric].",
        ),
    ] = None,
    margin: pf.MarginOpt = None,
    max_rounds: Annotated[
        int, typer.Option("--max-rounds", help="The race stops after this many rounds.")
    ] = MAX_ROUNDS,
    budget: pf.BudgetOpt = None,
    require: Annotated[
        list[str],
        typer.Option(
            "--require",
            help="A constraint on another metric, METRIC<VALUE (<=, >, >=): a config whose "
            "mean is clearly past it leaves the race; or 'safe': crash tests in a VM first, "
            "and only configs that lose nothing race. Repeatable.",
        ),
    ] = [],  # noqa: B006
    safety_set: Annotated[
        list[str],
        typer.Option(
            "--safety-set",
            help="With --require safe: a setting of the crash tests, KEY=VALUE "
            "(pattern=fsync-append,replace-rename-fsync, crashes=5, seed=3). Repeatable.",
        ),
    ] = [],  # noqa: B006
    scale: pf.ScaleOpt = None,
    trial_timeout: pf.TrialTimeoutOpt = None,
    seed: pf.SeedOpt = None,
    target_kind: pf.TargetOpt = None,
    no_report: NoReportOption = False,
    resume: Annotated[bool, typer.Option("--resume", help=RESUME_HELP)] = False,
    db: DbOption = None,
    json_out: JsonOption = False,
    **target_flags: Any,
) -> None:
    """Race filesystem configs on one workload: every config alive runs once per round
    (after an uncounted warm-up round, in a balanced shuffled order); from the third round
    the ones a test shows worse than the best are dropped; ends with the winner or a group
    of equally good configs, and the trials a full grid would have spent."""
    err = Console(stderr=True)
    out = err if json_out else Console(highlight=False)
    store = Store(db)
    if resume:
        run_id = _resumable(store, plan_file)
        run = store.get_run(run_id)
        plan = Plan.model_validate(run.plan)
        spec = TuneSpec.model_validate(run.facts)
        cells = planning.expand(plan, run.overrides)
        done = len({t.seq for t in store.get_trials(run_id)})
        err.print(f"fsbench: resuming race {run_id} ({done} trials stored)", highlight=False)
        outcome = _run(plan, cells, store, spec, run.overrides, err, resume_run=run_id)
    else:
        constraints, safe = parse_requirements(require)
        if safety_set and not safe:
            raise FsbenchError("--safety-set sets the crash tests of --require safe: give both")
        budget_s = pf.parse_budget(budget)
        margin = DEFAULT_MARGIN if margin is None else margin
        arguments = {
            "plan_file": plan_file, "preset": preset, "fs": fs, "workload": workload,
            "set_": set_, "scale": scale, "trial_timeout": trial_timeout, "seed": seed,
            "target_kind": target_kind,
        }  # fmt: skip
        # The flags only a VM takes (--guest-ram, --guest-cpus, --kernel) size the safety
        # checks' guest, and the race's own when it runs in a VM too.
        guest_only = {f.param: f.field for f in targetflags.only_of(safety.VM)}
        guest = {
            field: target_flags[param]
            for param, field in guest_only.items()
            if safe and target_flags.get(param) not in (None, False)
        }
        if guest and pf.build(pf.flags_of(arguments)).plan.target.kind != safety.VM:
            target_flags = {k: v for k, v in target_flags.items() if k not in guest_only}
        arguments.update(target_flags)
        # The space: --fs with its braces, else the plan's configs (its search space's
        # grid among them, planflags.build_plan).
        if fs:
            space = expand_space(fs)
        else:
            space = expand_space([c.spec for c in pf.build(pf.flags_of(arguments)).plan.fs])
        built = pf.build(
            pf.flags_of(
                arguments,
                fs=space.specs,
                budget=None,
                max_reps=max(max_rounds, planning.MIN_AUTO_REPS),
                margin=margin,
            )
        )
        summary = describe(space)
        out.print("search space:", highlight=False)
        for line in summary.lines():
            out.print(f"  {line}", highlight=False)
        for spec_text in summary.specs:
            out.print(f"    {spec_text}", highlight=False, markup=False)
        spec = TuneSpec(
            metric=metric or default_metric(built.plan),
            margin=margin,
            max_rounds=max_rounds,
            require=[str(c) for c in constraints],
            budget=budget_s,
            duplicates=space.duplicates,
        )
        spec.settings(True)  # refuse bad settings before anything runs
        planned = races(built.cells)  # a space that is no race is refused before its crash tests
        if safe:
            safety_run, verdicts = check_safety(built.plan, store, safety_set, out, guest)
            spec = spec.model_copy(update={"safety_run": safety_run, "safety": verdicts})
        if len(planned) > 1:
            share = budget_s / len(planned) if budget_s else 0.0
            each = f"; the budget split evenly, {share:.0f} s each" if share else ""
            out.print(
                f"{len(planned)} races, one per value of {', '.join(planned[0][1])}: "
                + "; ".join(" ".join(f"{k}={v[0]}" for k, v in n.items()) for _, n in planned)
                + each,
                highlight=False,
                soft_wrap=True,  # one line: scripts grep it
            )
            if budget_s:
                spec = spec.model_copy(update={"budget": budget_s / len(planned)})
        outcomes = [
            _run(built.plan, cells, store, spec, {**built.overrides, **narrow}, err)
            for cells, narrow in planned
        ]
        _show(store, [o.run_id for o in outcomes], json_out, no_report, err)
        return
    _show(store, [outcome.run_id], json_out, no_report, err)


def _show(store: Store, run_ids: list[int], json_out: bool, no_report: bool, err: Console) -> None:
    """Each race's document (a JSON array when there are several), and its pages."""
    races = [tune_report.document(store, run_id) for run_id in run_ids]
    docs = [tune_report.race_document(race) for race in races]
    if json_out:
        texts = [export.write(doc, formats.JSON) for doc in docs]
        if len(texts) == 1:
            typer.echo(texts[0], nl=False)
        else:
            typer.echo("[\n" + ",\n".join(text.rstrip() for text in texts) + "\n]")
    else:
        tty = sys.stdout.isatty()
        options = export.Options(Console().width if tty else 160, tty)
        for doc in docs:
            typer.echo(export.write(doc, formats.TABLE, options), nl=False)
    if no_report:
        return
    # Imported here: matplotlib costs most of a second at every start of fsbench.
    from fsbench.reports.html.race import write_race_page

    for race in races:
        write_report(store, race.run_id)
        page = write_race_page(race, report_dir(store, race.run_id))
        err.print(f"race: {page}", highlight=False, markup=False)


def check_safety(
    plan: Plan, store: Store, settings: list[str], out: Console, guest: dict[str, Any]
) -> tuple[int, dict[str, SafetyVerdict]]:
    """Run the crash tests of the race's configs (`settings`: the crash workload's
    KEY=VALUE, e.g. pattern=fsync-append; `guest`: the VM target's fields the command line
    gave); their run id and each config's verdict."""
    checks = safety.safety_plan(plan, guest)
    overrides = planning.parse_set(settings, flag="--safety-set")
    cells = planning.expand(checks, overrides)
    out.print(
        f"safety: crash tests of {len(plan.fs)} configs in a VM before the race "
        f"({', '.join(settings) or 'the crash workload defaults'})",
        highlight=False,
    )
    outcome = execute(checks, cells, store, overrides)
    rows = build_rows(store.get_trials(outcome.run_id))
    verdicts = {c.display: safety.verdict(rows, c.display) for c in plan.fs}
    for config, found in verdicts.items():
        word = "safe" if found.safe else "UNSAFE"
        out.print(f"  {word}: {config}: {found.evidence}", highlight=False, markup=False)
    return outcome.run_id, verdicts


def default_metric(plan: Plan) -> str:
    """The first headline metric of the plan's (first) workload; STEP:NAME in a chain."""
    steps = plan.workloads[0].steps
    name = workloads.get(steps[0]).headline[0]
    return f"{steps[0]}:{name}" if len(steps) > 1 else name


def _resumable(store: Store, run_arg: Path | None) -> int:
    record = session.to_resume(store, runkinds.TUNE, None if run_arg is None else str(run_arg))
    if not record.facts:
        raise FsbenchError(f"run {record.id} keeps no race settings: it cannot be resumed")
    return record.id


def _run(
    plan: Plan,
    cells: list[planning.Cell],
    store: Store,
    spec: TuneSpec,
    overrides: dict[str, list[str]],
    err: Console,
    resume_run: int | None = None,
) -> TuneOutcome:
    with sigterm_interrupts():
        outcome = run_race(
            plan,
            cells,
            store,
            spec,
            argv=sys.argv,
            overrides=overrides,
            watch=LiveView(err, spec, store),
            resume_run=resume_run,
        )
    if outcome.interrupted:
        interrupted(
            f"the race's trials are stored in run {outcome.run_id} "
            f"(`fsbench tune --resume {outcome.run_id}` goes on from its last round)"
        )
    return outcome


class LiveView(Watch):
    """The race on stderr, round by round: configs alive, each trial, who was dropped."""

    def __init__(self, err: Console, spec: TuneSpec, store: Store) -> None:
        self.err, self.spec, self.store = err, spec, store
        self.done = 0
        self.pending = 0

    def _say(self, text: str, style: str | None = None) -> None:
        self.err.print(text, style=style, markup=False, highlight=False)

    def note(self, text: str) -> None:
        self._say(text, "yellow")

    def begin(self, run_id: int, plan: Plan, resumed: int, banner: str) -> None:
        self._say(
            f"fsbench tune: run {run_id}, {len(plan.fs)} configs, {self.spec.metric}, up to "
            f"{self.spec.max_rounds} rounds after {plan.warmup} warm-up, margin "
            f"±{self.spec.margin:.0%}, scale {plan.scale}, order seed {plan.seed}, store "
            f"{self.store.url}" + (f"; {banner}" if banner else "")
        )

    def round_begins(self, rnd: int, alive: Sequence[str], pending: int) -> None:
        self.done, self.pending = 0, pending
        what = "warm-up round (not counted)" if rnd == 0 else f"round {rnd}"
        ran = f", {pending} trials to run" if pending else ", stored (replayed)"
        self._say(f"{what}: {len(alive)} configs alive{ran}", "bold")

    def trial(self, slot: Slot, records: list[TrialRecord]) -> None:
        if not slot.warmup:
            self.done += 1
        first = records[0]
        value = value_of(records, self.spec.metric)
        shown = f"{value:.4g}" if value is not None else f"{first.status}: {first.message}"
        tag = "warm-up" if slot.warmup else f"{self.done}/{self.pending}"
        self._say(f"  [{tag}] {first.config}: {self.spec.metric} {shown}", "dim")

    def round_ends(self, rnd: int, alive: Sequence[str], dropped: Sequence[Drop]) -> None:
        for d in dropped:
            self._say(f"  dropped {d.config} ({d.reason}): {d.detail or d.test}", "yellow")
        if rnd > 0:
            self._say(f"  after round {rnd}: {len(alive)} alive: {', '.join(alive)}")


# Where `fsbench --help` lists it (app.py registers every command module by its rank).
RANK = 15


def register(app: typer.Typer) -> None:
    app.command("tune")(tune)
