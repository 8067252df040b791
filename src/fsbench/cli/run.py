"""`fsbench run`: build the plan from a file, a preset or flags; run it; print the table."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from fsbench.cli import planflags as pf
from fsbench.cli import targetflags
from fsbench.cli.common import DbOption, JsonOption, NoReportOption
from fsbench.cli.report import emit
from fsbench.execute import explain, session
from fsbench.execute.loop import GridDriver
from fsbench.store import runkinds
from fsbench.store.dburl import default_db_path
from fsbench.store.records import RunRecord
from fsbench.store.results import Store
from fsbench.system.errors import FsbenchError

EXPLAIN_HELP = (
    "Then the instrumented pass (`fsbench explain RUN`): a few traced trials of every cell, "
    "never counted; the report says why under each verdict. With --reps decide and a budget "
    "(--budget, a preset's), the pass's projected cost is reserved from the budget before the "
    "counted rounds are planned; after the pass, what it spent against what was reserved."
)
RESUME_HELP = (
    "Finish an interrupted run: the last unfinished one in --db, or the run id given in place "
    "of PLAN. Finished trials are kept, the rest run (the grid's spelling of `fsbench resume`)."
)


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
    explain_after: Annotated[bool, typer.Option("--explain", help=EXPLAIN_HELP)] = False,
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
        record = session.to_resume(store, runkinds.GRID, _arg(flags.plan_file))
        driver = session.driver_for(store, record)
    else:
        built = pf.build(flags)
        driver = GridDriver(
            store, built.plan, built.cells, overrides=built.overrides, tag=check_tag(tag),
            instrumented=explain.reservation() if explain_after else None,
        )  # fmt: skip
    life = session.run(driver)
    if explain_after:
        instrumented(store, life.run_id)
    finish(store, life.run_id, json_out, report=not no_report)


def instrumented(store: Store, run_id: int) -> None:
    """The instrumented pass of a finished run (`fsbench explain RUN`), and what it spent
    against what the counted run reserved for it, one line; its why goes under the run's
    verdicts."""
    source = store.get_run(run_id)
    life = session.run(explain.driver(store, source))
    made = store.get_run(life.run_id)
    Console(stderr=True).print(
        spent_line(made.id or 0, len(store.run_trials(made)), made.seconds, source),
        highlight=False,
        markup=False,
    )


def spent_line(made: int, trials: int, seconds: float, source: RunRecord) -> str:
    """'explain: run 2, 6 instrumented trials in 31 s of the 36 s reserved from the 150 s
    budget (the counted run: 84 s)'."""
    design = runkinds.design(source)
    head = f"explain: run {made}, {trials} instrumented trials in {seconds:.0f} s"
    tail = f"(`fsbench report {made}`)"
    if design.reserved_s is None or design.budget_s is None:
        return f"{head}, beside the counted run's {source.seconds:.0f} s, nothing reserved {tail}"
    return (
        f"{head} of the {design.reserved_s:.0f} s reserved from the {design.budget_s:.0f} s "
        f"budget (the counted run: {source.seconds:.0f} s) {tail}"
    )


def _arg(path: Path | None) -> str | None:
    """The run id given in place of PLAN (None: none)."""
    return None if path is None else str(path)


# What a tag may be: a name a nightly job gives on a command line, and a store column.
TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,79}$")


def check_tag(tag: str) -> str:
    if tag and not TAG.match(tag):
        raise FsbenchError(
            f"--tag {tag!r}: up to 80 letters, digits and . _ : / @ + -, starting with a "
            "letter or digit"
        )
    return tag


def finish(store: Store, run_id: int, json_out: bool, report: bool = True) -> None:
    """The run's table (or JSON), its pages unless not wanted; exits as its kind says."""
    emit(store, run_id, "json" if json_out else "table", None, False)
    if report:
        write_report(store, run_id)
    record = store.get_run(run_id)
    raise typer.Exit(session.driver_class(record).exit_code(store, record))


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
