"""`fsbench compare` in the terminal (rich) or as plain text."""

from __future__ import annotations

import io

from rich import box
from rich.console import Console
from rich.table import Table as RichTable

from fsbench.reports.compare import sections as layout
from fsbench.reports.compare.cells import BETTER, NOT_COMPARED, WORSE, Comparison
from fsbench.reports.formats import rich_escape
from fsbench.store.records import RunRecord

STYLES = {BETTER: "bold green", WORSE: "bold red", NOT_COMPARED: "yellow", "equivalent": "blue"}


def _table(title: str, header: list[str], numeric: set[str], caption: str = "") -> RichTable:
    table = RichTable(
        title=title,
        caption=caption or None,
        box=box.SIMPLE_HEAD,
        title_justify="left",
        caption_justify="left",
    )
    for h in header:
        table.add_column(h, justify="right" if h in numeric else "left")
    table.columns[0].no_wrap = True
    return table


def print_comparison(console: Console, a: RunRecord, b: RunRecord, cmp: Comparison) -> None:
    for line in layout.header_lines(a, b, cmp):
        console.print(line, style="dim", highlight=False, markup=False)
    for s in layout.sections(cmp):
        table = _table(s.title, s.header, layout.NUMERIC, s.caption)
        for row, verdict in zip(s.rows, s.verdicts, strict=True):
            cells = [rich_escape(x) for x in row]
            style = STYLES.get(verdict)
            if style:
                cells[-1] = f"[{style}]{cells[-1]}[/]"
            table.add_row(*cells)
        console.print()
        console.print(table)
    if cmp.geomeans:
        table = _table(
            "geometric mean of B/A per workload and metric",
            layout.GEOMEAN_HEADER,
            layout.GEOMEAN_NUMERIC,
        )
        for row in layout.geomean_rows(cmp):
            table.add_row(*(rich_escape(x) for x in row))
        console.print()
        console.print(table)
    for side, lines in layout.unmatched(cmp):
        console.print()
        console.print(f"only in {side} (not compared):", highlight=False, markup=False)
        for line in lines:
            console.print(f"  {line}", style="dim", highlight=False, markup=False)


def render_compare_text(a: RunRecord, b: RunRecord, cmp: Comparison, width: int = 200) -> str:
    console = Console(record=True, width=width, file=io.StringIO(), color_system=None)
    print_comparison(console, a, b, cmp)
    return console.export_text()
