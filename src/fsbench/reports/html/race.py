"""The page of a race of `fsbench tune` (race.html beside the run's report.html): its
chart, the winner(s) with their CI, every dropped config with its round, test and p, the
trials against a full grid, and the command that checks the winner against the defaults."""

from __future__ import annotations

import tempfile
from pathlib import Path

from fsbench import __version__
from fsbench.reports.charts.race import race_chart
from fsbench.reports.html.embed import img
from fsbench.reports.html.markup import e, head, pre, table, tag
from fsbench.reports.html.page import css, why_html
from fsbench.reports.tune import RaceDocument, TuneReport
from fsbench.system import numbers

PAGE_NAME = "race.html"


def race_html(doc: TuneReport, chart_html: str) -> str:
    winners = table(
        head(
            "config",
            "n",
            f"mean {doc.metric}",
            "95% CI",
            "ratio to leader",
            "equally good",
            numeric=("n", f"mean {doc.metric}"),
        ),  # fmt: skip
        (
            tag(
                "tr",
                tag("td", e(w.config))
                + tag("td", e(w.n))
                + tag("td", e(numbers.number(w.mean, "")))
                + tag("td", e(numbers.interval(w.ci95)))
                + tag("td", e(numbers.ratio(w.ratio, missing="")))
                + tag("td", e("yes" if w.equivalent else "")),
            )
            for w in doc.winners
        ),
    )
    dropped = table(
        head("config", "round", "reason", "test", "p", "evidence"),
        (
            tag(
                "tr",
                tag("td", e(d.config))
                + tag("td", e(d.round))
                + tag("td", e(d.reason))
                + tag("td", e(d.test))
                + tag("td", e("" if d.p is None else numbers.p_value(d.p)))
                + tag("td", e(d.detail)),
            )
            for d in doc.dropped
        ),
    )
    safety = [
        tag(
            "h2",
            e(
                f"Crash tests (run {doc.safety_run}): {sum(s.safe for s in doc.safety)} of "
                f"{len(doc.safety)} configs lost nothing"
            ),
        ),  # fmt: skip
        table(
            head("config", "verdict", "what the power cuts showed"),
            (
                tag(
                    "tr",
                    tag("td", e(s.config))
                    + tag("td", e("safe" if s.safe else "UNSAFE: not raced"))
                    + tag("td", e(s.evidence)),
                )
                for s in doc.safety
            ),
        ),
    ]
    body = "".join(
        [
            tag("h1", e(f"fsbench tune: run {doc.run_id}, {doc.workload} ({doc.status})")),
            tag(
                "p",
                e(
                    f"{doc.space.total} configs raced on {doc.metric} ({doc.better} is better), "
                    f"scale {doc.scale}; stopped: {doc.stop or 'not finished'} after "
                    f"{doc.grid_n} rounds; {doc.trials} counted trials (+{doc.warmup_trials} "
                    f"warm-up) against {doc.grid_trials} for a full grid; {doc.budget()}."
                ),
            ),
            chart_html,
            tag("h2", "Still in the race"),
            winners,
            tag("h2", "Dropped"),
            dropped if doc.dropped else tag("p", "None."),
            *_why(doc),
            *(safety if doc.safety else []),
            tag("h2", "Check the winner against the defaults"),
            pre(doc.rerun),
            tag("p", e(doc.method), class_="about"),
            tag("footer", e(f"fsbench {__version__}")),
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{e(f'fsbench tune run {doc.run_id}')}</title>\n"
        f'<style>{css()}</style>\n</head>\n<body>\n<div class="wrap">{body}</div>\n'
        "</body>\n</html>\n"
    )


def _why(doc: TuneReport) -> list[str]:
    """The race's explained pair under its winner (`fsbench tune --explain`)."""
    why = doc.why_block()
    if why is None:
        return []
    return [tag("h2", "Why", id="why"), tag("p", e(why.caption), class_="about"), why_html(why)]


def race_page(document: RaceDocument, chart_dir: Path | None = None) -> str:
    """A race's document as its page (the HTML exporter's way to write one)."""
    return race_report_html(document.race, chart_dir)


def write_race_page(doc: TuneReport, out_dir: Path) -> Path:
    """race.html (and the chart as PNG and SVG) in out_dir; the page's path."""
    page = out_dir / PAGE_NAME
    page.write_text(race_report_html(doc, out_dir), encoding="utf-8")
    return page


def race_report_html(doc: TuneReport, chart_dir: Path | None = None) -> str:
    """The race's page; its chart also as PNG and SVG in chart_dir when given (else only
    embedded, from a temporary directory)."""
    if chart_dir is not None:
        chart_dir.mkdir(parents=True, exist_ok=True)
        return race_html(doc, img(race_chart(doc, chart_dir, ("png", "svg"))))
    with tempfile.TemporaryDirectory(prefix="fsbench-charts-") as tmp:
        return race_html(doc, img(race_chart(doc, Path(tmp))))
