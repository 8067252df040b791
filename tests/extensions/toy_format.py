"""A toy report format, whole in this one file: `--format tsv` writes any document (a run's
report, a comparison, a race, a bisection, a history, the features table) as tab-separated
lines, one per block line: its kind first, then its texts."""

from __future__ import annotations

from fsbench.reports import document as d
from fsbench.reports.export import EXPORTERS, Exporter, Options


def lines(block: d.Block) -> list[list[str]]:
    if isinstance(block, d.Title):
        return [["title", block.text]]
    if isinstance(block, d.Facts):
        return [["fact", block.title, f.text] for f in block.facts]
    if isinstance(block, d.Table):
        rows = [*block.rows, *([block.summary] if block.summary else [])]
        return [
            ["table", block.title],
            ["columns", *(c.name for c in block.columns)],
            *(["row", *(c.text for c in row)] for row in rows),
            *(["footnote", note] for note in block.footnotes),
        ]
    if isinstance(block, d.Verdicts):
        return [["verdict", v.text, *v.details] for v in block.items]
    if isinstance(block, d.Notes):
        return [["note", line] for line in block.lines]
    if isinstance(block, d.Preformatted):
        return [["text", block.title, line] for line in block.text.splitlines()]
    return [["chart", block.title, str(len(block.points))]]


def serialize(document: d.Document, options: Options) -> str:
    return "".join("\t".join(cells) + "\n" for b in document.blocks for cells in lines(b))


EXPORTERS.register(Exporter("tsv", serialize))
