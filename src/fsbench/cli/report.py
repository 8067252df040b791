"""`fsbench report [RUN]`: a stored run's document (its kind's: a grid's tables, a race, a
bisection) in any format: a table, markdown, CSV, JSON, an HTML page, or a plugin's."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from fsbench.cli.common import AllMetricsOption, DbOption, OutputOption, ReportFormatOption
from fsbench.reports import export, formats, run_report
from fsbench.reports.document import Document, Wants
from fsbench.store.results import Store
from fsbench.store.runkinds import kind_of
from fsbench.system.errors import FsbenchError
from fsbench.system.plugins import load

# The terminal's width when stdout is no terminal (piped: a table is not wrapped at 80
# columns), and in a file written with -o.
PIPED_WIDTH, FILE_WIDTH = 200, 160


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
    exporter = export.exporter(fmt)
    if charts is not None and not exporter.draws:
        raise FsbenchError(f"--charts goes with a format that draws them ({formats.HTML})")
    store = Store(db)
    rid = run_id if run_id is not None else store.latest_run_id()
    if rid is None:
        raise FsbenchError(f"no runs in {store.url}: start one with `fsbench run`")
    document = run_document(store, rid, Wants(all_metrics, exporter.draws))
    write(document, exporter, output, charts, FILE_WIDTH)


def run_document(store: Store, run_id: int, wants: Wants) -> Document:
    """The run's document, as its kind builds it (a grid's or a calibration's: its report)."""
    kind = kind_of(store.get_run(run_id))
    build = load(kind.report) if kind.report else run_report.build
    document: Document = build(store, run_id, wants)
    return document


def write(
    document: Document,
    exporter: export.Exporter,
    output: Path | None,
    charts: Path | None = None,
    file_width: int = FILE_WIDTH,
) -> None:
    """The document to stdout (a terminal's width and colours, or a pipe's), or into a
    file (`output`), in the exporter's format."""
    tty = output is None and sys.stdout.isatty()
    width = Console().width if tty else PIPED_WIDTH if output is None else file_width
    text = exporter.serialize(document, export.Options(width, tty, charts))
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        Console(stderr=True).print(f"wrote {output}", style="dim", highlight=False)


def emit(store: Store, run_id: int, fmt: str, output: Path | None, all_metrics: bool) -> None:
    """A run's document in a format (what `fsbench run` prints at its end)."""
    exporter = export.exporter(fmt)
    document = run_document(store, run_id, Wants(all_metrics, exporter.draws))
    write(document, exporter, output)


# Where `fsbench --help` lists it (app.py registers every command module by its rank).
RANK = 40


def register(app: typer.Typer) -> None:
    app.command("report")(report)
