"""`fsbench tune`: race filesystem configs on a workload, drop the worse ones round by
round, end with the best (or a group of equally good ones). See docs/tune.md."""

from __future__ import annotations

import sys
import typing
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from fsbench import workloads
from fsbench.analysis.design import DEFAULT_MARGIN
from fsbench.analysis.rows import build_rows
from fsbench.cli import planflags as pf
from fsbench.cli import targetflags
from fsbench.cli.common import DbOption, JsonOption, NoReportOption
from fsbench.cli.run import report_dir, write_report
from fsbench.execute import explain, session
from fsbench.execute.loop import GridDriver
from fsbench.execute.race import safety
from fsbench.execute.race.checks import parse_requirements
from fsbench.execute.race.driver import RaceDriver, split
from fsbench.execute.race.rule import MAX_ROUNDS
from fsbench.execute.race.trials import RaceSpace, SafetyVerdict, TuneSpec
from fsbench.plan import model as planning
from fsbench.plan import presets
from fsbench.plan.model import Plan
from fsbench.plan.space import describe, expand_space
from fsbench.reports import export, formats
from fsbench.reports import tune as tune_report
from fsbench.store import runkinds
from fsbench.store.results import Store
from fsbench.system.errors import FsbenchError

F = TypeVar("F", bound=typing.Callable[..., Any])

EXPLAIN_HELP = (
    "Then the instrumented pass of `fsbench explain` for the winner against the runner-up "
    "(the second left, else the best of the last dropped) on the race's cell: a few traced "
    "trials of each, never counted; the race's report says why under its winner."
)
RESUME_HELP = (
    "Go on with an interrupted race: the last unfinished one in --db, or the run id given in "
    "place of PLAN. Its stored rounds are replayed, the rest run (the race's spelling of "
    "`fsbench resume`)."
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
    explain_after: Annotated[bool, typer.Option("--explain", help=EXPLAIN_HELP)] = False,
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
        arg = None if plan_file is None else str(plan_file)
        record = session.to_resume(store, runkinds.TUNE, arg)
        life = session.run(session.driver_for(store, record))
        if explain_after:
            explain_race(store, life.run_id, err)
        _show(store, [life.run_id], json_out, no_report, err)
        return
    constraints, safe = parse_requirements(require)
    if safety_set and not safe:
        raise FsbenchError("--safety-set sets the crash tests of --require safe: give both")
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
    # The space: --fs with its braces, else the plan's configs (its search space's grid
    # among them, planflags.build_plan).
    if fs:
        space = expand_space(fs)
    else:
        space = expand_space([c.spec for c in pf.build(pf.flags_of(arguments)).plan.fs])
    # The budget is the plan's (--budget, or its plan file's), the tune's whole wall time.
    built = pf.build(
        pf.flags_of(
            arguments,
            fs=space.specs,
            budget=budget,
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
    # The races the space makes (one per value of a swept parameter), refused before the
    # crash tests when it makes none.
    shape, planned = split(built.cells, space.duplicates)
    spec = TuneSpec(
        metric=metric or default_metric(built.plan),
        margin=margin,
        max_rounds=max_rounds,
        require=[str(c) for c in constraints],
        space=shape,
    )
    spec.settings(True)  # refuse bad settings before anything runs
    if safe:
        safety_run, verdicts = check_safety(built.plan, store, safety_set, out, guest)
        spec = spec.model_copy(update={"safety_run": safety_run, "safety": verdicts})
    if shape.races > 1:
        out.print(
            _races_line(shape, [narrow for _, narrow in planned], built.plan.budget),
            highlight=False,
            soft_wrap=True,  # one line: scripts grep it
        )
    lives = [
        session.run(
            RaceDriver(store, built.plan, cells, spec, overrides={**built.overrides, **narrow})
        )
        for cells, narrow in planned
    ]
    if explain_after:
        for life in lives:
            explain_race(store, life.run_id, err)
    _show(store, [life.run_id for life in lives], json_out, no_report, err)


def explain_race(store: Store, run_id: int, err: Console) -> None:
    """The instrumented pass of a finished race for its winner against its runner-up, and
    what it spent, one line; its why goes under the race's winner."""
    race = tune_report.document(store, run_id)
    if race.status != "finished" or not race.winners or race.runner_up is None:
        err.print(f"explain: race {run_id} has no winner and runner-up to explain", highlight=False)
        return
    pair = [race.winners[0].config, race.runner_up]
    life = session.run(explain.driver(store, store.get_run(run_id), pair))
    made = store.get_run(life.run_id)
    err.print(
        f"explain: run {made.id}, {pair[0]} against {pair[1]}: "
        f"{len(store.run_trials(made))} instrumented trials in {made.seconds:.0f} s "
        f"(`fsbench report {made.id}`)",
        highlight=False,
        markup=False,
    )


def _races_line(shape: RaceSpace, narrows: list[dict[str, list[str]]], budget: float | None) -> str:
    """The races of a split space, in one line: their values and each one's budget."""
    share = shape.budget(budget)
    return (
        f"{shape.races} races, one per value of {', '.join(shape.by)}: "
        + "; ".join(" ".join(f"{k}={v[0]}" for k, v in n.items()) for n in narrows)
        + (f"; the budget split evenly, {share:.0f} s each" if share else "")
    )


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
    life = session.run(GridDriver(store, checks, cells, overrides=overrides))
    rows = build_rows(store.get_trials(life.run_id))
    verdicts = {c.display: safety.verdict(rows, c.display) for c in plan.fs}
    for config, found in verdicts.items():
        word = "safe" if found.safe else "UNSAFE"
        out.print(f"  {word}: {config}: {found.evidence}", highlight=False, markup=False)
    return life.run_id, verdicts


def default_metric(plan: Plan) -> str:
    """The first headline metric of the plan's (first) workload; STEP:NAME in a chain."""
    steps = plan.workloads[0].steps
    name = workloads.get(steps[0]).headline[0]
    return f"{steps[0]}:{name}" if len(steps) > 1 else name


# Where `fsbench --help` lists it (app.py registers every command module by its rank).
RANK = 15


def register(app: typer.Typer) -> None:
    app.command("tune")(tune)
