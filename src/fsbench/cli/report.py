"""`fsbench report [RUN]`: a stored run as a table, markdown, CSV, JSON or an HTML page."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from fsbench.analysis.race_trials import KIND as TUNE_KIND
from fsbench.cli.common import DbOption
from fsbench.reports import formats, render, source
from fsbench.reports import tune as tune_report
from fsbench.store.results import Store
from fsbench.system.errors import FsbenchError


def report(
    run_id: Annotated[
        int | None, typer.Argument(metavar="[RUN]", help="Run id \\[default: the latest].")
    ] = None,
    fmt: Annotated[
        str, typer.Option("--format", "-f", help=f"{formats.listed(formats.REPORT)}.")
    ] = formats.TABLE,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to a file.")] = None,
    all_metrics: Annotated[
        bool,
        typer.Option("--all-metrics", help="Tables for every metric, not only the headline ones."),
    ] = False,
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
    if store.get_run(rid).kind == TUNE_KIND and fmt in (formats.TABLE, formats.JSON, formats.HTML):
        race(store, rid, fmt, output, charts)
        return
    if fmt == formats.HTML:
        # Imported here: matplotlib costs most of a second at every start of fsbench.
        from fsbench.reports import html

        page = html.html_report(store, rid, charts)
        _write(page, output)
        return
    emit(store, rid, fmt, output, all_metrics)


def race(store: Store, run_id: int, fmt: str, output: Path | None, charts: Path | None) -> None:
    """A race of `fsbench tune`: what the race decided, round by round (the per-config
    tables of an ordinary run would compare configs that ran different numbers of rounds);
    markdown and CSV give those tables all the same."""
    doc = tune_report.document(store, run_id)
    if fmt == formats.HTML:
        from fsbench.reports.html.race import race_report_html

        _write(race_report_html(doc, charts), output)
    elif fmt == formats.JSON:
        _write(tune_report.as_json(doc), output)
    elif output is None:
        tune_report.print_report(Console() if sys.stdout.isatty() else Console(width=200), doc)
    else:
        with output.open("w", encoding="utf-8") as handle:
            tune_report.print_report(Console(file=handle, width=200), doc)


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
