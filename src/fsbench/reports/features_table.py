"""The feature table for people: terminal (rich), markdown, HTML (a fragment for the run
report, or a page of its own), and JSON. Pure functions of a FeatureTable."""

from __future__ import annotations

import io
from html import escape
from importlib import resources

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from fsbench.execute.features.tables import LEGEND, MARKS, cell_text, differs, unavailable
from fsbench.reports import formats
from fsbench.store.features import FeatureRow, FeatureTable, Result

FORMATS = formats.FEATURES

_STYLE = {"yes": "green", "no": "red", "n/a": "dim", "unsupported": "dim", "error": "yellow"}
DIFF_STYLE = "bold on grey27"


def _header(table: FeatureTable) -> str:
    took = f" in {table.seconds:.0f} s" if table.seconds is not None else ""
    return f"Filesystem features measured on Linux {table.kernel}{took}"


# --- terminal -----------------------------------------------------------------------------


def _rich_cell(row: FeatureRow, r: Result, diff: bool) -> Text:
    text = cell_text(row, r)
    out = Text()
    mark = MARKS[r.supported]
    if text.startswith(mark):
        out.append(mark, style=_STYLE[r.supported])
        out.append(text[len(mark) :])
    else:
        out.append(text)
    if r.supported in ("unsupported", "n/a"):
        out.stylize("dim")
    if diff:
        out.stylize(DIFF_STYLE)
    return out


def rich_table(table: FeatureTable) -> Table:
    t = Table(box=box.SIMPLE_HEAD, title=_header(table), title_justify="left")
    t.add_column("feature", no_wrap=True)
    for fs in table.filesystems:
        t.add_column(fs, overflow="fold")
    for row in table.features:
        odd = differs(row, table.filesystems)
        cells = [_rich_cell(row, row.results[fs], fs in odd) for fs in table.filesystems]
        t.add_row(row.name, *cells)
    return t


def print_table(table: FeatureTable, console: Console, evidence: bool = False) -> None:
    console.print(rich_table(table))
    console.print(LEGEND, style="dim", markup=False, highlight=False)
    for fs, reason in unavailable(table).items():
        console.print(f"{fs}: unavailable: {reason}", style="dim", markup=False)
    if evidence:
        for row in table.features:
            console.print(f"\n{row.name}: {row.question}", style="bold", markup=False)
            for fs in table.filesystems:
                r = row.results[fs]
                if r.supported == "unsupported":
                    continue
                console.print(f"  {fs}: {cell_text(row, r)}  {r.note}", markup=False)
                for e in r.evidence:
                    console.print("    " + e.replace("\n", "\n    "), style="dim", markup=False)


def text_table(table: FeatureTable, evidence: bool = False, width: int = 160) -> str:
    """The terminal table as plain text (for -o FILE)."""
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False)
    print_table(table, console, evidence)
    return buf.getvalue()


# --- markdown -----------------------------------------------------------------------------


def _md(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def markdown(table: FeatureTable, evidence: bool = False) -> str:
    lines = [f"### {_header(table)}", ""]
    lines.append("| feature | " + " | ".join(_md(fs) for fs in table.filesystems) + " |")
    lines.append("|---|" + "---|" * len(table.filesystems))
    for row in table.features:
        odd = differs(row, table.filesystems)
        cells = []
        for fs in table.filesystems:
            text = _md(cell_text(row, row.results[fs]))
            cells.append(f"**{text}**" if fs in odd else text)
        lines.append(f"| {_md(row.name)} | " + " | ".join(cells) + " |")
    lines += ["", LEGEND.replace("highlighted", "**bold**"), ""]
    for fs, reason in unavailable(table).items():
        lines.append(f"- {_md(fs)}: unavailable: {_md(reason)}")
    lines += ["", "#### Questions and notes", ""]
    for row in table.features:
        lines.append(f"- **{_md(row.name)}**: {_md(row.question)}")
        for fs in table.filesystems:
            r = row.results[fs]
            if r.note and r.supported != "unsupported":
                lines.append(f"  - {_md(fs)}: {_md(r.note)}")
            if evidence and r.evidence and r.supported != "unsupported":
                lines.append("")
                lines.append("    ```")
                for e in r.evidence:
                    lines += ["    " + ln for ln in e.splitlines()]
                lines.append("    ```")
    return "\n".join(lines) + "\n"


# --- html ---------------------------------------------------------------------------------

# The feature table's stylesheet, a package resource beside this module.
FEATURES_CSS = (
    resources.files("fsbench.reports").joinpath("html", "features.css").read_text(encoding="utf-8")
)

_CLASS = {
    "yes": "feat-yes",
    "no": "feat-no",
    "n/a": "feat-na",
    "unsupported": "feat-unsupported",
    "error": "feat-error",
}


def e(value: object) -> str:
    return escape("" if value is None else str(value), quote=True)


def _html_cell(row: FeatureRow, r: Result, diff: bool) -> str:
    text = cell_text(row, r)
    mark = MARKS[r.supported]
    if text.startswith(mark):
        summary = f'<span class="mark">{e(mark)}</span>{e(text[len(mark) :])}'
    else:
        summary = e(text)
    classes = _CLASS[r.supported] + (" feat-diff" if diff else "")
    inner = summary
    if r.note or r.evidence:
        body = f'<p class="feat-note">{e(r.note)}</p>' if r.note else ""
        if r.evidence:
            body += f"<pre>{e(chr(10).join(r.evidence))}</pre>"
        inner = f"<details><summary>{summary}</summary>{body}</details>"
    return f'<td class="{classes}">{inner}</td>'


def features_table_html(table: FeatureTable) -> str:
    """The table as an HTML fragment (every string escaped), for the run report: style it
    with FEATURES_CSS. Cells open to show the note and the evidence."""
    head = '<th scope="col">feature</th>' + "".join(
        f'<th scope="col">{e(fs)}</th>' for fs in table.filesystems
    )
    rows = []
    for row in table.features:
        odd = differs(row, table.filesystems)
        cells = "".join(_html_cell(row, row.results[fs], fs in odd) for fs in table.filesystems)
        rows.append(f'<tr><th scope="row" title="{e(row.question)}">{e(row.name)}</th>{cells}</tr>')
    caption = f"<caption>{e(_header(table))}</caption>"
    foot = "".join(
        f"<li>{e(fs)}: unavailable: {e(reason)}</li>" for fs, reason in unavailable(table).items()
    )
    legend = f'<p class="fsb-features-legend">{e(LEGEND)}</p>'
    if foot:
        legend += f'<ul class="fsb-features-unavailable">{foot}</ul>'
    return (
        f'<table class="fsb-features">{caption}<thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>{legend}"
    )


def html_page(table: FeatureTable) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{e(_header(table))}</title><style>{FEATURES_CSS}</style></head>"
        f"<body>{features_table_html(table)}</body></html>\n"
    )


# --- json ---------------------------------------------------------------------------------


def json_text(table: FeatureTable) -> str:
    return table.model_dump_json(indent=2) + "\n"


def render(table: FeatureTable, fmt: str, evidence: bool = False) -> str:
    if fmt == "json":
        return json_text(table)
    if fmt == "md":
        return markdown(table, evidence)
    if fmt == "html":
        return html_page(table)
    if fmt == "table":
        return text_table(table, evidence)
    raise ValueError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
