"""`fsbench compare --format md`: the comparison as markdown tables."""

from __future__ import annotations

from fsbench.reports.compare import sections as layout
from fsbench.reports.compare.cells import BETTER, WORSE, Comparison
from fsbench.reports.formats import md_escape
from fsbench.store.records import RunRecord


def _table(header: list[str], numeric: set[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "".join("---:|" if h in numeric else "---|" for h in header))
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


def render_compare_markdown(a: RunRecord, b: RunRecord, cmp: Comparison) -> str:
    lines = [f"## fsbench compare: run {a.id} (A) vs run {b.id} (B)", ""]
    lines += [f"- {md_escape(x)}" for x in layout.header_lines(a, b, cmp)]
    lines.append("")
    for s in layout.sections(cmp):
        lines += [f"### {md_escape(s.title)}", "", f"_{md_escape(s.caption)}_", ""]
        rows = []
        for row, verdict in zip(s.rows, s.verdicts, strict=True):
            cells = [md_escape(x) for x in row]
            if verdict in (BETTER, WORSE):
                cells[-1] = f"**{cells[-1]}**"
            rows.append(cells)
        lines += _table(s.header, layout.NUMERIC, rows)
    if cmp.geomeans:
        lines += ["### geometric mean of B/A", ""]
        rows = [[md_escape(x) for x in row] for row in layout.geomean_rows(cmp)]
        lines += _table(layout.GEOMEAN_HEADER, layout.GEOMEAN_NUMERIC, rows)
    for side, unmatched_lines in layout.unmatched(cmp):
        lines += [f"### only in {side} (not compared)", ""]
        lines += [f"- {md_escape(x)}" for x in unmatched_lines]
        lines.append("")
    return "\n".join(lines)
