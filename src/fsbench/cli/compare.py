"""`fsbench compare RUN_A RUN_B`: two stored runs cell by cell, significance marked."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from fsbench.cli.common import DbOption, JsonOption
from fsbench.errors import FsbenchError
from fsbench.reports import compare as cmp
from fsbench.reports.rows import build_rows
from fsbench.store import Store


def compare(
    run_a: Annotated[int, typer.Argument(metavar="RUN_A", help="The baseline run (A).")],
    run_b: Annotated[int, typer.Argument(metavar="RUN_B", help="The run compared with it (B).")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="table, md or json.")] = "table",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to a file.")] = None,
    all_metrics: Annotated[
        bool, typer.Option("--all-metrics", help="Every metric, not only the headline ones.")
    ] = False,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """B against A for every cell both runs have: means, ratio B/A with its 95% CI, and a
    verdict only where Welch's t-test says so (p < 0.05, Holm-corrected)."""
    if json_out:
        fmt = "json"
    if fmt not in cmp.FORMATS:
        raise FsbenchError(f"unknown format {fmt!r} (known: {', '.join(cmp.FORMATS)})")
    store = Store(db)
    a, b = store.get_run(run_a), store.get_run(run_b)
    result = cmp.compare_runs(
        a,
        build_rows(store.get_trials(run_a), a.convergence),
        b,
        build_rows(store.get_trials(run_b), b.convergence),
        all_metrics,
    )
    if fmt == "table" and output is None:
        console = Console() if sys.stdout.isatty() else Console(width=200)
        cmp.print_comparison(console, a, b, result)
        return
    text = {
        "table": lambda: cmp.render_compare_text(a, b, result),
        "md": lambda: cmp.render_compare_markdown(a, b, result),
        "json": lambda: cmp.render_compare_json(a, b, result),
    }[fmt]()
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text)
        Console(stderr=True).print(f"wrote {output}", style="dim")
