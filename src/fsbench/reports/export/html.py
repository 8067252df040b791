"""`html`: a document as one self-contained page (the stylesheet inline, the charts
embedded). A run's report, a race, a history and the features table each have a page of
their own (reports/html/, PAGES below: drawn from the data their document holds); any
other document is written block by block in the same look.

matplotlib and the pages are imported when a page is written: they cost most of a second
at every start of fsbench."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from fsbench import __version__
from fsbench.reports import document as d
from fsbench.reports.export import Exporter, Options
from fsbench.system.plugins import load

# The documents with a page of their own, by kind: "module:function(document, chart_dir)".
PAGES = {
    "report": "fsbench.reports.html.page:run_page",
    "race": "fsbench.reports.html.race:race_page",
    "history": "fsbench.reports.html.history_page:history_page",
    "features": "fsbench.reports.features_table:features_page",
}
TONES: dict[d.Tone, str] = {
    "best": "best",
    "worst": "worst",
    "bad": "worst",
    "warn": "warn",
    "good": "good",
}
# The cells a block page marks, beside the run page's stylesheet (which has td.best).
CELLS_CSS = (
    "td.worst{background:var(--bad-bg);color:var(--bad)}td.warn{color:var(--warn)}"
    "td.good{color:var(--good)}h1+p.lede{margin-bottom:12px}"
)


def serialize(document: d.Document, options: Options) -> str:
    page = PAGES.get(document.kind)
    if page is not None:
        text: str = load(page)(document, options.charts)
        return text
    if options.charts is not None:
        options.charts.mkdir(parents=True, exist_ok=True)
        return _page(document, options.charts, ("png", "svg"))
    with tempfile.TemporaryDirectory(prefix="fsbench-charts-") as tmp:
        return _page(document, Path(tmp), ("svg",))


def _page(document: d.Document, chart_dir: Path, kept: tuple[str, ...]) -> str:
    from fsbench.reports.html.markup import e, tag
    from fsbench.reports.html.page import css

    body = "".join(_block(b, chart_dir, kept) for b in document.blocks)
    body += tag("footer", e(f"fsbench {__version__}"))
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{e(document.title)}</title>\n"
        f'<style>{css()}{CELLS_CSS}</style>\n</head>\n<body>\n<div class="wrap">{body}</div>\n'
        "</body>\n</html>\n"
    )


def _cell(cell: d.Cell, numeric: bool) -> str:
    from fsbench.reports.html.markup import e, tag

    classes = " ".join(c for c in ("num" if numeric else "", TONES.get(cell.tone, "")) if c)
    return tag("td", e(cell.text), class_=classes or None)


def _table(t: d.Table) -> str:
    from fsbench.reports.html.markup import e, head, table, tag
    from fsbench.reports.html.results import why_row

    numeric = [c.name for c in t.columns if c.numeric]
    rows = [
        tag("tr", "".join(_cell(c, col.numeric) for c, col in zip(row, t.columns, strict=False)))
        for row in [*t.rows, *([t.summary] if t.summary else [])]
    ]
    rows += [why_row(w, len(t.columns)) for w in t.why]
    out = tag(f"h{min(t.level, 6)}", e(t.title)) if t.title else ""
    out += tag("p", e(t.caption), class_="about") if t.caption else ""
    out += table(head(*(c.name for c in t.columns), numeric=numeric), rows)
    if t.legend:
        out += tag("p", e(t.legend), class_="about")
    if t.footnotes:
        out += tag("ol", "".join(tag("li", e(n)) for n in t.footnotes), class_="notes")
    return out


def _block(b: d.Block, chart_dir: Path, kept: tuple[str, ...]) -> str:
    from fsbench.reports.html.markup import e, pre, tag

    if isinstance(b, d.Title):
        return tag("h1", e(b.text)) + (tag("p", e(b.byline), class_="lede") if b.byline else "")
    if isinstance(b, d.Facts):
        items = tag("ul", "".join(tag("li", e(f.text)) for f in b.facts))
        return (tag("h2", e(b.title)) if b.title else "") + items
    if isinstance(b, d.Table):
        return _table(b)
    if isinstance(b, d.Verdicts):
        out = tag("h2", e(b.title)) if b.title else ""
        out += tag("p", e(b.caption), class_="about") if b.caption else ""
        said = [
            tag("strong", e(v.text)) + (e(": " + "; ".join(v.details)) if v.details else "")
            for v in b.items
        ]
        return out + "".join(tag("p", item) for item in said)
    if isinstance(b, d.Notes):
        return "".join(tag("p", e(n), class_="about") for n in b.lines)
    if isinstance(b, d.Preformatted):
        return tag("h2", e(b.title)) + pre(b.text)
    from fsbench.reports.charts.flame import flame_chart
    from fsbench.reports.charts.histogram import histogram_chart
    from fsbench.reports.charts.points import points_chart
    from fsbench.reports.html.embed import img
    from fsbench.reports.html.markup import details

    if isinstance(b, d.Histogram):
        return img(histogram_chart(b, chart_dir, kept))
    if isinstance(b, d.FlameDiff):  # the image, and the stacks it draws ranked
        stacks = replace(b.as_table(), title="")
        ranked = details(e(f"{b.title}: the stacks that changed most"), _table(stacks))
        return img(flame_chart(b, chart_dir, kept)) + ranked
    return img(points_chart(b, chart_dir, kept))


EXPORTER = Exporter("html", serialize, draws=True)
