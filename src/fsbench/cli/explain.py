"""`fsbench explain RUN [--pair A,B]`: why one config of a stored run beats another. It runs
the instrumented pass (execute/explain.py: a few extra trials of the run's cells with the
tracers attached, stored as a run of their own, never counted) and prints its document:
per pair, the mechanisms that differ, ranked, and how much of the gap they account for.
Given an explain run, it prints that run's document again."""

from __future__ import annotations

from typing import Annotated

import typer

from fsbench.cli.common import DbOption, OutputOption, ReportFormatOption
from fsbench.cli.report import run_document, write
from fsbench.execute import explain, session
from fsbench.reports import export, formats
from fsbench.reports.document import Wants
from fsbench.store import runkinds
from fsbench.store.results import Store
from fsbench.system.errors import FsbenchError


def explain_command(
    run_id: Annotated[
        int | None, typer.Argument(metavar="[RUN]", help="Run id \\[default: the latest].")
    ] = None,
    pair: Annotated[
        str,
        typer.Option("--pair", help="Two configs of the run, A,B (default: every pair)."),
    ] = "",
    reps: Annotated[
        int, typer.Option("--reps", min=2, max=100, help="Instrumented trials per config.")
    ] = explain.REPS,
    resume: Annotated[
        bool, typer.Option("--resume", help="Finish an interrupted explain run (RUN or the last).")
    ] = False,
    fmt: ReportFormatOption = formats.TABLE,
    output: OutputOption = None,
    db: DbOption = None,
) -> None:
    """Explain a run's verdicts: extra trials of its cells with tracers (block requests,
    off-CPU stacks, a CPU profile), never counted, and per pair of configs the mechanisms
    that differ, ranked, with the share of the gap they account for."""
    exporter = export.exporter(fmt)
    store = Store(db)
    if resume:
        record = session.to_resume(store, runkinds.EXPLAIN, None if run_id is None else str(run_id))
        life = session.run(session.driver_for(store, record))
    else:
        rid = run_id if run_id is not None else store.latest_run_id()
        if rid is None:
            raise FsbenchError(f"no runs in {store.url}: start one with `fsbench run`")
        source = store.get_run(rid)
        if runkinds.kind_of(source).name == runkinds.EXPLAIN.name:
            if pair:
                raise FsbenchError(f"run {rid} is an explain run: its pair is {source.facts}")
            write(run_document(store, rid, Wants(charts=exporter.draws)), exporter, output)
            return
        wanted = [p.strip() for p in pair.split(",")] if pair else []
        life = session.run(explain.driver(store, source, wanted, reps))
    write(run_document(store, life.run_id, Wants(charts=exporter.draws)), exporter, output)
    record = store.get_run(life.run_id)
    raise typer.Exit(session.driver_class(record).exit_code(store, record))


# Where `fsbench --help` lists it (app.py registers every command module by its rank).
RANK = 42


def register(app: typer.Typer) -> None:
    app.command("explain")(explain_command)
