"""`fsbench report [RUN]`: a stored run as a table, markdown, CSV, JSON or an HTML page."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from fsbench.cli.common import AllMetricsOption, DbOption, OutputOption, ReportFormatOption
from fsbench.reports import formats, render, source
from fsbench.store.results import Store
from fsbench.store.runkinds import kind_of
from fsbench.system.errors import FsbenchError
from fsbench.system.plugins import load


def report(
    run_id: Annotated[
        int | None, typer.Argument(metavar="[RUN]", help="Run id \\[default: the latest].")
    ] = None,
    fmt: ReportFormatOption = formats.TABLE,
    output: OutputOption = None,
    all_metrics: AllMetricsOption = False,
    charts: Annotated[
        Path | None,
        typer.Option(
            "--charts",
            help="With --format html: also write every chart as PNG and SVG into this directory.",
        ),
    ] = None,
    db: DbOption = None,
) -> None:
    """Print a stored run like a mailing-list post: configs x metrics, mean ± 95% CI (n),
    the best config marked where the difference is significant. `--format html -o FILE`
    writes one self-contained page with every chart."""
    formats.check(fmt, render.report_formats())
    if charts is not None and fmt != formats.HTML:
        raise FsbenchError("--charts goes with --format html")
    store = Store(db)
    rid = run_id if run_id is not None else store.latest_run_id()
    if rid is None:
        raise FsbenchError(f"no runs in {store.url}: start one with `fsbench run`")
    kind = kind_of(store.get_run(rid))
    if kind.report:
        written = load(kind.report)(store, rid, fmt, charts)
        if written is not None:
            _write(written, output)
            return
    if fmt == formats.HTML:
        # Imported here: matplotlib costs most of a second at every start of fsbench.
        from fsbench.reports import html

        page = html.html_report(store, rid, charts)
        _write(page, output)
        return
    emit(store, rid, fmt, output, all_metrics)


def _write(text: str, output: Path | None) -> None:
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        Console(stderr=True).print(f"wrote {output}", style="dim", highlight=False)


def emit(store: Store, run_id: int, fmt: str, output: Path | None, all_metrics: bool) -> None:
    loaded = source.load(store, run_id)
    run, rows, cal = loaded.run, loaded.rows, loaded.calibration_run
    if fmt == formats.TABLE and output is None:
        # Piped or redirected: do not wrap the table at 80 columns.
        console = Console() if sys.stdout.isatty() else Console(width=200)
        render.print_tables(console, run, rows, all_metrics, cal)
        return
    _write(render.renderer(fmt)(loaded, all_metrics), output)


# Where `fsbench --help` lists it (app.py registers every command module by its rank).
RANK = 40


def register(app: typer.Typer) -> None:
    app.command("report")(report)
