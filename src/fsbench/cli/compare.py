"""`fsbench compare RUN_A RUN_B`: two stored runs cell by cell, significance marked."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from fsbench.cli.common import DbOption, JsonOption
from fsbench.errors import FsbenchError
from fsbench.reports import compare as cmp
from fsbench.reports import source
from fsbench.store import RunRecord, Store


def compare(
    run_a: Annotated[int, typer.Argument(metavar="RUN_A", help="The baseline run (A).")],
    run_b: Annotated[
        int | None,
        typer.Argument(metavar="[RUN_B]", help="The run compared with it (B); not with --by."),
    ] = None,
    by: Annotated[
        str | None,
        typer.Option(
            "--by",
            metavar="KNOB[=A,B]",
            help="Within RUN_A: the cells under one value of a dimension against another, "
            "e.g. --by kernel (two kernels) or --by vm.dirty_ratio=10,40.",
        ),
    ] = None,
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
    if by is not None:
        if run_b is not None:
            raise FsbenchError("--by compares within one run: give RUN_A only")
        a, b, result = _compare_levels(store, run_a, by, all_metrics)
    elif run_b is None:
        raise FsbenchError("compare needs RUN_B, or --by KNOB to compare within RUN_A")
    else:
        a, b = store.get_run(run_a), store.get_run(run_b)
        result = cmp.compare_runs(
            a,
            source.rows_of(a, store.get_trials(run_a)),
            b,
            source.rows_of(b, store.get_trials(run_b)),
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


def _compare_levels(
    store: Store, run_id: int, by: str, all_metrics: bool
) -> tuple[RunRecord, RunRecord, cmp.Comparison]:
    """Level A of a knob against level B within one run (kernel 6.1 vs 6.12)."""
    knob, _, wanted = by.partition("=")
    knob = knob.strip()
    run = store.get_run(run_id)
    rows = source.rows_of(run, store.get_trials(run_id))
    levels = cmp.knob_levels(rows, knob)
    if not levels:
        known = sorted({k for r in rows for k in r.knobs})
        raise FsbenchError(
            f"run {run_id} has no dimension {knob!r}"
            + (f" (it has: {', '.join(known)})" if known else " (it has no knob dimensions)")
        )
    chosen = [v.strip() for v in wanted.split(",") if v.strip()] if wanted else levels
    if len(chosen) != 2:
        raise FsbenchError(
            f"--by {knob}: run {run_id} has {len(levels)} values ({', '.join(levels)}); "
            f"choose two: --by {knob}=A,B"
        )
    for level in chosen:
        if level not in levels:
            raise FsbenchError(f"--by {knob}: no {level!r} in run {run_id} ({', '.join(levels)})")
    level_a, level_b = chosen
    a = replace(run, name=f"{run.name}, {knob}={level_a}")
    b = replace(run, name=f"{run.name}, {knob}={level_b}")
    result = cmp.compare_rows(
        cmp.split_by_knob(rows, knob, level_a), cmp.split_by_knob(rows, knob, level_b), all_metrics
    )
    return a, b, result
