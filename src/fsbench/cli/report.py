"""`fsbench report [RUN]`: a stored run as a table, markdown, CSV or JSON."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from fsbench.cli.common import DbOption
from fsbench.errors import FsbenchError
from fsbench.reports import render
from fsbench.reports.rows import build_rows
from fsbench.store import Store


def report(
    run_id: Annotated[
        int | None, typer.Argument(metavar="[RUN]", help="Run id \\[default: the latest].")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table, md, csv or json.")] = "table",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to a file.")] = None,
    all_metrics: Annotated[
        bool,
        typer.Option("--all-metrics", help="Tables for every metric, not only the headline ones."),
    ] = False,
    db: DbOption = None,
) -> None:
    """Print a stored run like a mailing-list post: configs x metrics, mean ± 95% CI (n)."""
    if fmt not in render.FORMATS:
        raise FsbenchError(f"unknown format {fmt!r} (known: {', '.join(render.FORMATS)})")
    store = Store(db)
    rid = run_id if run_id is not None else store.latest_run_id()
    if rid is None:
        raise FsbenchError(f"no runs in {store.url}: start one with `fsbench run`")
    emit(store, rid, fmt, output, all_metrics)


def emit(store: Store, run_id: int, fmt: str, output: Path | None, all_metrics: bool) -> None:
    run = store.get_run(run_id)
    rows = build_rows(store.get_trials(run_id))
    if fmt == "table" and output is None:
        # Piped or redirected: do not wrap the table at 80 columns.
        console = Console() if sys.stdout.isatty() else Console(width=200)
        render.print_tables(console, run, rows, all_metrics)
        return
    text = {
        "table": lambda: render.render_text(run, rows, all_metrics=all_metrics),
        "md": lambda: render.render_markdown(run, rows, all_metrics),
        "csv": lambda: render.render_csv(run, rows),
        "json": lambda: render.render_json(run, rows),
    }[fmt]()
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text)
        Console(stderr=True).print(f"wrote {output}", style="dim")
