"""`fsbench history`: a metric over the stored runs of one series, and where it changed.
Read only: it makes no run. See docs/history.md."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console

from fsbench.analysis import history, history_gate
from fsbench.cli import planflags as pf
from fsbench.cli.common import AllMetricsOption, DbOption, OutputOption, ReportFormatOption
from fsbench.cli.report import PIPED_WIDTH, write
from fsbench.execute.git import Git
from fsbench.plan import model as planning
from fsbench.reports import explain as explaining
from fsbench.reports import export, formats
from fsbench.reports import history as show
from fsbench.store.records import RunRecord, TrialRecord
from fsbench.store.results import Store
from fsbench.store.runkinds import known_kind
from fsbench.system import numbers
from fsbench.system.errors import FsbenchError

RANK = 45
# The gate's exit code: a change point for the worse that the newest run starts (or, with
# --since, any that a run after RUN starts). Distinct from run's 3/4 and bisect's 5/6.
EXIT_REGRESSION = 7
FAIL_ON = ("regression",)
# The runs a series is made of: ended ones (a run still going, or one that failed before
# its cells were measured, is no point of a series).
ENDED = ("finished", "incomplete")


def history_command(
    tag: Annotated[
        str | None, typer.Option("--tag", help="Only the runs given this tag by fsbench run.")
    ] = None,
    plan: Annotated[
        str | None, typer.Option("--plan", help="Only the runs of the plan of this name.")
    ] = None,
    workload: Annotated[
        list[str], typer.Option("--workload", "-w", help="Only this workload (or chain).")
    ] = [],  # noqa: B006 - typer's list options
    fs: Annotated[
        list[str], typer.Option("--fs", help="Only this config label or filesystem type.")
    ] = [],  # noqa: B006
    set_: Annotated[
        list[str], typer.Option("--set", help="NAME=VALUE: only cells with this parameter or knob.")
    ] = [],  # noqa: B006
    host: Annotated[str | None, typer.Option("--host", help="Only this host's runs.")] = None,
    by: Annotated[
        str,
        typer.Option(
            "--by",
            help="Order runs by date, kernel (version) or commit (the kernel's, in --linux's "
            "history); host: one series across hosts, by date.",
        ),
    ] = "date",
    all_metrics: AllMetricsOption = False,
    fmt: ReportFormatOption = formats.TABLE,
    output: OutputOption = None,
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            help=f"regression: exit {EXIT_REGRESSION} when the newest run starts a change "
            "point for the worse on a headline metric.",
        ),
    ] = None,
    since: Annotated[
        int | None,
        typer.Option(
            "--since",
            metavar="RUN",
            help="With --fail-on: every change point a run after RUN starts, not only the "
            "newest run's.",
        ),
    ] = None,
    linux: Annotated[
        Path | None,
        typer.Option("--linux", help="Your Linux git tree: --by commit, --bisect."),
    ] = None,
    bisect_n: Annotated[
        int | None,
        typer.Option(
            "--bisect",
            metavar="N",
            help="Bisect change point N (as listed) between its kernel commits with fsbench "
            "bisect, in --linux.",
        ),
    ] = None,
    max_reps: pf.MaxRepsOpt = None,
    db: DbOption = None,
) -> None:
    """The run means of every series (host, config, workload, metric) over the stored runs,
    and the change points in them, each with the runs on either side, the means before and
    after, their ratio and p, and what else changed there (fsbench, tools, options, host)."""
    exporter = export.exporter(fmt)
    if by not in history.BY:
        raise FsbenchError(f"--by {by!r}: expected one of {', '.join(history.BY)}")
    if fail_on is not None and fail_on not in FAIL_ON:
        raise FsbenchError(f"--fail-on {fail_on!r}: expected {', '.join(FAIL_ON)}")
    if since is not None and fail_on is None:
        raise FsbenchError("--since goes with --fail-on")
    if (by == "commit" or bisect_n is not None) and linux is None:
        raise FsbenchError(f"{'--bisect' if bisect_n is not None else '--by commit'} needs --linux")
    store = Store(db, create=False)
    filters = history.Filters(tuple(_split(workload)), tuple(_split(fs)), _sets(set_))
    runs, notes = _runs(store, tag, plan, host)
    rank = _commit_rank(linux) if by == "commit" and linux is not None else None
    series = history.build(runs, filters, by, rank, all_metrics)
    if rank is not None:
        notes.append("--by commit: runs whose kernel commit is not in --linux are left out")
    if bisect_n is not None:
        assert linux is not None
        _bisect(store, series, bisect_n, linux, max_reps)
        return
    explaining.changes_why(store, series)
    write(show.document(series, by, notes), exporter, output, file_width=PIPED_WIDTH)
    if fail_on is not None:
        newer = store.get_run(since).created_at if since is not None else None
        alarms = history_gate.regressions(series, newer)
        err = Console(stderr=True, highlight=False)
        for alarm in alarms:
            err.print(
                f"fsbench: regression: {alarm.series.title}: "
                f"{show.ratio_text(alarm.change)} from {show.run_label(alarm.change.after_run)}, "
                f"{numbers.p(alarm.p)} (the gate's level: "
                f"{history_gate.GATE_ALPHA:g} / {alarm.checked} series)"
                + (f" ({show.HARNESS_NOTE})" if alarm.change.harness else ""),
                markup=False,
                soft_wrap=True,
            )
        if alarms:
            raise typer.Exit(EXIT_REGRESSION)


def _split(values: list[str]) -> list[str]:
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def _sets(values: list[str]) -> tuple[tuple[str, str], ...]:
    out = []
    for value in values:
        name, sep, wanted = value.partition("=")
        if not sep or not name.strip():
            raise FsbenchError(f"--set {value!r}: expected NAME=VALUE")
        out.append((name.strip(), wanted.strip()))
    return tuple(out)


def _runs(
    store: Store, tag: str | None, plan: str | None, host: str | None
) -> tuple[list[tuple[RunRecord, list[TrialRecord]]], list[str]]:
    """The runs selected, each with its trials: those of the kinds whose runs form series;
    a run made of parts gives each host's part (its own host's facts, the run's tag)."""
    out: list[tuple[RunRecord, list[TrialRecord]]] = []
    skipped = 0
    for run in store.list_runs():
        kind = known_kind(run)
        if run.part_of or kind is None or not kind.series:
            continue  # a part comes with its run; races and bisections are no series
        if (tag is not None and run.tag != tag) or (plan is not None and run.name != plan):
            continue
        points = [replace(p, tag=run.tag) for p in store.parts(run.uid)] if kind.has_parts else []
        for point in points or [run]:
            if run.status not in ENDED or point.status not in ENDED:
                skipped += 1
                continue
            trials = store.get_trials(point.id)
            for t in trials:
                t.host = point.part_host
            if host is not None:
                trials = [t for t in trials if history.host_of(point, t) == host]
            out.append((point, trials))
    notes = [f"{skipped} runs that did not end (running, interrupted, failed) left out"]
    return out, notes if skipped else []


def _commit_rank(linux: Path) -> dict[str, int]:
    listed = Git(linux.resolve()).run("rev-list", "--topo-order", "--reverse", "--all").stdout
    return {commit: i for i, commit in enumerate(listed.split())}


def _bisect(
    store: Store, series: list[history.Series], number: int, linux: Path, max_reps: int | None
) -> None:
    """Change point `number` handed to fsbench bisect: the last commit before it good,
    the first after it bad, the same cell of the same plan, the same metric."""
    from fsbench.cli import bisect as bisect_cli  # the VM target's command: only when asked
    from fsbench.vm.bisect import Bisection
    from fsbench.vm.bisect_kind import BisectArgs

    reps = bisect_cli.reps_per_commit(max_reps)
    found = {n: (s, c) for n, s, c in show.numbered(series)}
    if number not in found:
        raise FsbenchError(f"--bisect {number}: there are {len(found)} change points")
    s, change = found[number]
    before, after = s.points[change.index - 1], s.points[change.index]
    if not before.commit or not after.commit:
        raise FsbenchError(
            f"change point {number}: runs {before.run} and {after.run} record no kernel commit "
            "on both sides (a VM run of kernels built from a tree records one)"
        )
    run = store.get_run(after.run)
    try:
        plan = planning.Plan.model_validate(run.plan)
    except ValidationError as exc:
        raise FsbenchError(f"run {run.id}: stored plan no longer valid: {exc}") from None
    cells = [c for c in planning.expand(plan, run.overrides) if c.key == after.cell_key]
    if not cells:
        raise FsbenchError(f"run {run.id}: its plan no longer makes cell {after.cell_key}")
    metric = f"{s.workload}:{s.metric}" if s.chain else s.metric
    args = BisectArgs(linux, before.commit, after.commit, metric=metric, max_reps=reps)
    err = Console(stderr=True, highlight=False)
    err.print(
        f"bisecting change point {number}: {s.title}, {before.commit[:12]}..{after.commit[:12]}"
    )
    job = Bisection(store, args, plan, cells, overrides=run.overrides)
    bisect_cli.drive(job, store)


def register(app: typer.Typer) -> None:
    app.command("history")(history_command)
