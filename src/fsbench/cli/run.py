"""`fsbench run`: build the plan from a file, a preset or flags; run it; print the table."""

from __future__ import annotations

import re
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Annotated, Any, NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from fsbench.cli import planflags as pf
from fsbench.cli import targetflags
from fsbench.cli.common import DbOption, JsonOption, NoReportOption
from fsbench.cli.report import emit
from fsbench.execute import loop as matrix
from fsbench.execute import session
from fsbench.execute.hooks import Hooks
from fsbench.execute.schedule import Slot
from fsbench.plan import model as planning
from fsbench.plan.model import Plan
from fsbench.reports import source
from fsbench.store import runkinds, trialfacts
from fsbench.store.dburl import default_db_path
from fsbench.store.records import TrialRecord
from fsbench.store.results import Store
from fsbench.system.errors import FsbenchError

# Exit codes: a run that measured everything is 0; unsupported cells are results, not
# errors, but scripts should be able to tell.
EXIT_OK, EXIT_USAGE, EXIT_UNSUPPORTED, EXIT_FAILED, EXIT_INTERRUPTED = 0, 2, 3, 4, 130

RESUME_HELP = (
    "Finish an interrupted run: the last unfinished one in --db, or the run id given in place "
    "of PLAN. Finished trials are kept, the rest run."
)

# What a caller wraps around the run's progress bar (a progress file others poll).
Watch = Callable[[Hooks], Hooks]


@pf.with_plan_flags()
@targetflags.with_target_flags()
def run(
    no_report: NoReportOption = False,
    resume: Annotated[bool, typer.Option("--resume", help=RESUME_HELP)] = False,
    tag: Annotated[
        str,
        typer.Option(
            "--tag",
            help="Name the series this run belongs to (a nightly job's): `fsbench history "
            "--tag NAME` follows it.",
        ),
    ] = "",
    db: DbOption = None,
    json_out: JsonOption = False,
    **given: Any,
) -> None:
    """Format the target with every filesystem config, run the workloads, print the table."""
    flags = pf.flags_of(given)
    if tag and resume:
        raise FsbenchError("--tag names a new run; a resumed run keeps the tag it has")
    store = Store(db)
    if resume:
        outcome = resume_run(store, flags.plan_file)
    else:
        built = pf.build(flags)
        outcome = execute(built.plan, built.cells, store, built.overrides, tag=check_tag(tag))
    finish(store, outcome, json_out, report=not no_report)


def resume_run(store: Store, run_arg: Path | None, watch: Watch | None = None) -> matrix.Outcome:
    """Finish the run given (or the last unfinished one) where it stopped."""
    run_id, plan, overrides = resumable(store, run_arg)
    cells = planning.expand(plan, overrides)
    done = len({t.seq for t in store.get_trials(run_id)})
    Console(stderr=True).print(
        f"fsbench: resuming run {run_id} ({done} trials stored)", highlight=False
    )
    return execute(plan, cells, store, overrides, resume_run=run_id, watch=watch)


def resumable(
    store: Store, run_arg: Path | None, kind: runkinds.RunKind = runkinds.GRID
) -> tuple[int, Plan, dict[str, list[str]]]:
    """The run of `kind` to resume (the id given, or the last unfinished one), its plan and
    --set; a run of another kind is refused with the command that resumes it."""
    record = session.to_resume(store, kind, None if run_arg is None else str(run_arg))
    run_id = record.id
    try:
        plan = Plan.model_validate(record.plan)
    except ValidationError as exc:
        raise FsbenchError(
            f"run {run_id}: stored plan no longer valid: {planning.one_line(exc)}"
        ) from None
    return run_id, plan, record.overrides


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM ends a run like Ctrl-C: finished trials stay, everything is released."""
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class Display(Hooks):
    """Hooks drawn live on stderr (rich): `stop` ends the drawing."""

    progress: Progress

    def stop(self) -> None:
        # Never started (refused before the run began): rich would print an empty line.
        if self.progress.live.is_started:
            self.progress.stop()


class ProgressHooks(Display):
    """A progress bar on stderr (trial i of n, elapsed, ETA, the current cell) and one line
    per trial that is not ok."""

    def __init__(self, plan: Plan, n_cells: int, store: Store, err: Console) -> None:
        self.plan, self.n_cells, self.store, self.err = plan, n_cells, store, err
        self.progress = Progress(
            TextColumn("trial"),
            MofNCompleteColumn(),
            BarColumn(bar_width=24),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TextColumn("{task.description}"),
            console=err,
            transient=False,
        )
        self.task = self.progress.add_task("", total=None)

    def note(self, text: str) -> None:
        style = "yellow" if text.startswith(("warning", "released")) else None
        self.err.print(text, style=style, markup=False, highlight=False)

    def begin(self, run_id: int, plan: Plan, done: int, total: int, banner: str) -> None:
        warm = f" + {plan.warmup} warm-up" if plan.warmup else ""
        if plan.reps == "decide" and plan.warmup:
            warm = " + a warm-up trial per group"
        reps = {
            "auto": f"up to {plan.max_reps}",
            "decide": f"2 to {plan.max_reps} (until decided)",
        }.get(str(plan.reps), str(plan.reps))
        self.err.print(
            f"fsbench: run {run_id}, {plan.name}: {len(plan.fs)} configs, {self.n_cells} cells "
            f"x {reps} reps{warm} = {'up to ' if plan.adaptive else ''}{total} trials, "
            f"scale {plan.scale}, order seed "
            f"{plan.seed}, store {self.store.url}" + (f"; {banner}" if banner else ""),
            markup=False,
            highlight=False,
        )
        self.progress.update(self.task, total=total, completed=done)
        self.progress.start()  # only now: a refusal before the run prints one line, no bar

    def started(self, slot: Slot, done: int, total: int) -> None:
        rep = "warm-up" if slot.warmup else f"rep {slot.rep}"
        self.progress.update(
            self.task, total=total, completed=done, description=f"{rep}: {slot.cell.describe()}"
        )

    def finished(self, slot: Slot, records: list[TrialRecord], done: int, total: int) -> None:
        self.progress.update(self.task, total=total, completed=done)
        for record in records[:1]:  # the cell's knobs, once for all its steps
            knob = trialfacts.flags(record.provenance).get("knob-restore-failed")
            if knob:
                self.progress.console.print(
                    f"  warning: knob not restored after {record.config}: {knob}",
                    style="red",
                    markup=False,
                    highlight=False,
                )
        for record in records:
            if record.status == "ok":
                continue
            shown = " ".join(f"{k}={v}" for k, v in record.params.items() if v is not None)
            self.progress.console.print(
                f"  {record.status}: {record.config} · {record.workload} {shown}: {record.message}",
                style="yellow",
                markup=False,
                highlight=False,
            )


def execute(
    plan: Plan,
    cells: list[planning.Cell],
    store: Store,
    overrides: dict[str, list[str]],
    resume_run: int | None = None,
    kind: str = "run",
    part: session.Part | None = None,
    watch: Watch | None = None,
    tag: str = "",
    display: Display | None = None,
    after_interrupt: Callable[[matrix.Outcome], None] | None = None,
    resume_command: str = "fsbench run --resume {run}",
) -> matrix.Outcome:
    """The run with a progress bar (or `display`; and whatever else `watch` wraps around
    it); exits 130 after an interrupt, naming the run and the command that finishes it
    (`after_interrupt` first says more)."""
    err = Console(stderr=True)
    bar = display or ProgressHooks(plan, len(cells), store, err)
    hooks = bar if watch is None else watch(bar)
    state = "failed"
    with sigterm_interrupts():
        try:
            outcome = matrix.run(
                plan,
                cells,
                store,
                argv=sys.argv,
                overrides=overrides,
                hooks=hooks,
                resume_run=resume_run,
                kind=kind,
                part=part,
                tag=tag,
            )
            state = "interrupted" if outcome.interrupted else "finished"
        finally:
            bar.stop()
            hooks.ended(state)
    if outcome.interrupted:
        if after_interrupt is not None:
            after_interrupt(outcome)
        interrupted(
            f"finished trials are stored in run {outcome.run_id} "
            f"(`{resume_command.replace('{run}', str(outcome.run_id))}` finishes it)"
        )
    return outcome


# What a tag may be: a name a nightly job gives on a command line, and a store column.
TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,79}$")


def check_tag(tag: str) -> str:
    if tag and not TAG.match(tag):
        raise FsbenchError(
            f"--tag {tag!r}: up to 80 letters, digits and . _ : / @ + -, starting with a "
            "letter or digit"
        )
    return tag


def interrupted(what_now: str) -> NoReturn:
    """After Ctrl-C or SIGTERM: one line saying what was kept and how to go on; exit 130."""
    Console(stderr=True).print(
        f"fsbench: interrupted; {what_now}", style="yellow", highlight=False, soft_wrap=True
    )
    raise typer.Exit(EXIT_INTERRUPTED)


def finish(store: Store, outcome: matrix.Outcome, json_out: bool, report: bool = True) -> None:
    err = Console(stderr=True)
    for line in outcome.unfinished:  # one line each (a host that failed), for grep
        err.print(line, style="red", markup=False, highlight=False, soft_wrap=True)
    emit(store, outcome.run_id, "json" if json_out else "table", None, False)
    if report:
        write_report(store, outcome.run_id)
    raise typer.Exit(EXIT_FAILED if outcome.unfinished else exit_status(store, outcome.run_id))


def exit_status(store: Store, run_id: int) -> int:
    statuses = {t.status for t in source.trials_of(store, store.get_run(run_id))}
    if "failed" in statuses:
        return EXIT_FAILED
    if "unsupported" in statuses:
        return EXIT_UNSUPPORTED
    return EXIT_OK


def report_dir(store: Store, run_id: int) -> Path:
    """Next to the database: <dir of results.db>/reports/run-<id>/."""
    path = store.sqlite_path
    base = path.parent if path is not None else default_db_path().parent
    return base / "reports" / f"run-{run_id}"


def write_report(store: Store, run_id: int) -> None:
    # Imported here: matplotlib costs most of a second at every start of fsbench.
    from fsbench.reports.html import write_run_report

    err = Console(stderr=True)
    paths = write_run_report(store, run_id, report_dir(store, run_id))
    charts = [p for p in paths[1:] if p.suffix == ".png"]
    err.print(f"report: {paths[0]}", highlight=False, markup=False)
    if charts:
        err.print(
            f"charts: {len(charts)} PNG (and SVG) in {paths[0].parent}",
            highlight=False,
            markup=False,
        )


# Where `fsbench --help` lists it (app.py registers every command module by its rank).
RANK = 10


def register(app: typer.Typer) -> None:
    app.command("run")(run)
