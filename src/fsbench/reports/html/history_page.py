"""The page of `fsbench history --format html`: per series its chart (run means with
their intervals, change points marked, runs named), its points, and every change point
with its evidence. Self-contained: the charts are embedded."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from fsbench import __version__
from fsbench.analysis.history import ChangePoint, Series
from fsbench.reports import history as show
from fsbench.reports.charts.history import history_chart
from fsbench.reports.html.embed import img
from fsbench.reports.html.markup import e, head, table, tag
from fsbench.reports.html.page import css
from fsbench.system import numbers


def history_page(document: show.HistoryDocument, chart_dir: Path | None = None) -> str:
    """A history's document as its page (the HTML exporter's way to write one)."""
    return page(document.series, document.by, document.notes, chart_dir)


def page(
    series: Sequence[Series], by: str, notes: Sequence[str] = (), chart_dir: Path | None = None
) -> str:
    """The page; the charts also kept as SVG and PNG in chart_dir when given."""
    numbering = {id(c): n for n, _, c in show.numbered(series)}
    with tempfile.TemporaryDirectory(prefix="fsbench-history-") as tmp:
        out = chart_dir or Path(tmp)
        formats = ("svg", "png") if chart_dir else ("svg",)
        sections = []
        for i, s in enumerate(series, start=1):
            chart = history_chart(s, [numbering[id(c)] for c in s.changes], out, by,
                                  f"history-{i:03d}", formats)  # fmt: skip
            sections.append(_section(s, numbering, img(chart)))
    changes = sum(len(s.changes) for s in series)
    body = "".join(
        [
            tag("h1", "fsbench history"),
            tag(
                "p",
                e(
                    f"{len(series)} series, {changes} change point{'' if changes == 1 else 's'}; "
                    f"runs ordered by {by}. "
                    "Change points: E-divisive means with a permutation test, and the newest "
                    "runs against the runs before them (docs/history.md)."
                ),
            ),  # fmt: skip
            *(tag("p", e(n), class_="about") for n in notes),
            *sections,
            tag("footer", e(f"fsbench {__version__}")),
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        "<title>fsbench history</title>\n"
        f'<style>{css()}</style>\n</head>\n<body>\n<div class="wrap">{body}</div>\n'
        "</body>\n</html>\n"
    )


def _section(s: Series, numbering: dict[int, int], chart: str) -> str:
    starts = {c.index: c for c in s.changes}

    def mark(c: ChangePoint | None) -> str:
        return show.change_mark(numbering[id(c)], c) if c is not None else ""

    points = table(
        head(
            "run",
            "date",
            "kernel",
            "commit",
            "fsbench",
            "n",
            "mean",
            "95% CI",
            "change",
            numeric=("n", "mean"),
        ),  # fmt: skip
        (
            tag(
                "tr",
                "".join(
                    tag("td", e(x))
                    for x in (
                        p.run,
                        p.created_at[:16].replace("T", " "),
                        p.kernel,
                        p.commit[:12],
                        p.fsbench_version,
                        p.n,
                        numbers.number(p.mean),
                        numbers.interval(p.ci95),
                        mark(starts.get(i)),
                    )
                ),  # fmt: skip
            )
            for i, p in enumerate(s.points)
        ),
    )
    changes = "".join(
        tag(
            "li", "<br>".join(e(line.strip()) for line in show.change_lines(numbering[id(c)], s, c))
        )
        for c in s.changes
    )
    return "".join(
        [
            tag("h2", e(s.title)),
            chart,
            tag("ul", changes) if changes else tag("p", "No change point."),
            points,
        ]
    )
