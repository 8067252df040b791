"""`table`: a document for the terminal. Its title's byline and its facts first, dimmed;
then every table as rich draws it (the row names never wrapped, numbers right-aligned;
under it the lines saying why its verdicts came out so, its footnotes and legend),
verdicts with their evidence indented, notes dimmed; a blank line before each. Styles
only where the terminal shows them (`Options.color`)."""

from __future__ import annotations

import io

from rich import box
from rich.console import Console, JustifyMethod
from rich.table import Table as RichTable

from fsbench.reports import document as d
from fsbench.reports.export import Exporter, Options

STYLES: dict[d.Tone, str] = {
    "best": "bold green",
    "worst": "bold red",
    "warn": "yellow",
    "same": "blue",
    "good": "green",
    "bad": "red",
    "muted": "dim",
    "marked": "bold on grey27",
}


def escape(text: str) -> str:
    """Text in rich markup: a '[' never opens a tag."""
    return text.replace("[", "\\[")


def _cell(cell: d.Cell) -> str:
    style = STYLES.get(cell.tone)
    return f"[{style}]{escape(cell.text)}[/]" if style and cell.text else escape(cell.text)


def rich_table(t: d.Table) -> RichTable:
    table = RichTable(
        title=escape(t.title) or None,
        caption=escape(t.caption) or None,
        box=box.SIMPLE_HEAD,
        title_justify="left",
        caption_justify="left",
    )
    for i, col in enumerate(t.columns):
        justify: JustifyMethod = "right" if col.numeric else "left"
        table.add_column(escape(col.name), justify=justify, no_wrap=i == 0)
    for i, row in enumerate(t.rows):
        table.add_row(*(_cell(c) for c in row), end_section=i == len(t.rows) - 1)
    if t.summary:
        table.add_row(*(_cell(c) for c in t.summary))
    return table


class _Printer:
    def __init__(self, console: Console) -> None:
        self.console = console
        self.started = False

    def line(self, text: str, tone: d.Tone = "", bold: bool = False) -> None:
        style = "bold" if bold else STYLES.get(tone)
        self.console.print(text, style=style, highlight=False, markup=False)
        self.started = True

    def gap(self) -> None:
        """A blank line between blocks (none above the first)."""
        if self.started:
            self.console.print()

    def block(self, block: d.Block) -> None:
        if isinstance(block, d.Title):
            if block.byline:
                self.line(block.byline, "muted")
        elif isinstance(block, d.Facts):
            indent = "  " if block.title else ""
            if block.title:
                self.gap()
                self.line(f"{block.title}:")
            for fact in block.facts:
                self.line(f"{indent}{fact.text}", "muted")
        elif isinstance(block, d.Table):
            self.gap()
            self.console.print(rich_table(block))
            for why in block.why:
                self.line(f"  {why}", "good")
            for i, note in enumerate(block.footnotes, 1):
                self.line(f"  [{i}] {note}", "muted")
            if block.legend:
                self.line(f"  {block.legend}", "muted")
            self.started = True
        elif isinstance(block, d.Verdicts):
            self.gap()
            indent = "  " if block.title else ""
            if block.title:
                self.line(block.title, bold=True)
            if block.caption:
                self.line(f"  {block.caption}", "muted")
            for v in block.items:
                self.line(f"{indent}{v.text}", bold=True)
                for detail in v.details:
                    self.line(f"{indent}  {detail}", v.tone)
        elif isinstance(block, d.Notes):
            self.gap()
            for note in block.lines:
                self.line(note, "muted")
        elif isinstance(block, d.Preformatted):
            self.gap()
            self.line(f"{block.title}:")
            for text in block.text.rstrip("\n").splitlines():
                self.line(f"  {text}")
        elif isinstance(block, d.Histogram | d.FlameDiff):
            self.block(block.as_table())
        # A chart is drawn only where a page shows it.


def serialize(document: d.Document, options: Options) -> str:
    out = io.StringIO()
    console = Console(
        file=out,
        width=options.width,
        force_terminal=options.color,
        color_system="auto" if options.color else None,
    )
    printer = _Printer(console)
    for block in document.blocks:
        printer.block(block)
    return out.getvalue()


EXPORTER = Exporter("table", serialize)
