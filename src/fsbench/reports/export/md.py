"""`md`: a document as markdown, a mailing-list post. The title a heading and its facts a
list; each table under its heading (one level below the document's), caption in italics,
numbers right-aligned, the best or worst cells in bold, the summary row in italics, the
lines saying why under it a list, then its legend and numbered footnotes; verdicts a
list, their evidence after a colon; a log in a fenced block. Every text that reaches a
table or a list is escaped."""

from __future__ import annotations

from fsbench.reports import document as d
from fsbench.reports.export import Exporter, Options

BOLD: set[d.Tone] = {"best", "worst", "marked"}


def escape(text: str) -> str:
    """Text in a markdown table cell or list item: pipes escaped, on one line."""
    return text.replace("|", "\\|").replace("\n", " ")


def _cell(cell: d.Cell) -> str:
    text = escape(cell.text)
    return f"**{text}**" if cell.tone in BOLD and text else text


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def table(t: d.Table) -> list[str]:
    lines = [f"{'#' * t.level} {escape(t.title)}", ""] if t.title else []
    if t.caption:
        lines += [f"_{escape(t.caption)}_", ""]
    lines.append(_row([c.name for c in t.columns]))
    lines.append("|" + "".join("---:|" if c.numeric else "---|" for c in t.columns))
    lines += [_row([_cell(c) for c in row]) for row in t.rows]
    if t.summary:
        lines.append(_row([f"_{escape(c.text)}_" if c.text else "" for c in t.summary]))
    lines.append("")
    if t.why:
        lines += [*(f"- {escape(w)}" for w in t.why), ""]
    if t.legend:
        lines += [f"_{escape(t.legend)}._", ""]
    if t.footnotes:
        lines += [*(f"{i}. {escape(n)}" for i, n in enumerate(t.footnotes, 1)), ""]
    return lines


def block(b: d.Block) -> list[str]:
    if isinstance(b, d.Title):
        return [f"{'#' * b.level} {b.text}", ""]
    if isinstance(b, d.Facts):
        head = [f"### {escape(b.title)}", ""] if b.title else []
        return [*head, *(f"- {escape(f.text)}" for f in b.facts), ""]
    if isinstance(b, d.Table):
        return table(b)
    if isinstance(b, d.Verdicts):
        lines = [f"### {escape(b.title)}", ""] if b.title else []
        if b.caption:
            lines += [f"_{escape(b.caption)}_", ""]
        for v in b.items:
            said = f": {escape('; '.join(v.details))}" if v.details else ""
            lines.append(f"- **{escape(v.text)}**{said}")
        return [*lines, ""]
    if isinstance(b, d.Notes):
        return [*(f"_{escape(n)}_" for n in b.lines), ""]
    if isinstance(b, d.Preformatted):
        return [f"### {escape(b.title)}", "", "```", b.text.rstrip("\n"), "```", ""]
    if isinstance(b, d.Histogram | d.FlameDiff):
        return table(b.as_table())
    return []  # a chart is drawn only where a page shows it


def serialize(document: d.Document, options: Options) -> str:
    return "\n".join(line for b in document.blocks for line in block(b))


EXPORTER = Exporter("md", serialize)
