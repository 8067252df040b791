"""A workload's section: what it does (as the run stored it), its tables with winners and
footnotes, its charts and timelines, and every repetition behind the numbers."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from fsbench.analysis.rows import Row
from fsbench.reports import why as explained
from fsbench.reports.charts import Chart
from fsbench.reports.html.embed import img
from fsbench.reports.html.markup import details, e, facts, slug, tag
from fsbench.reports.html.overtime import over_time_html
from fsbench.reports.html.repetitions import repetitions_html
from fsbench.reports.tables import Table
from fsbench.reports.why import Why
from fsbench.store.records import RunRecord

_MARKS = re.compile(r"((?: \[\d+\])+)$")


def _cell_html(text: str, table_id: str) -> str:
    """Table text with its trailing footnote marks ' [1] [2]' as superscript links."""
    m = _MARKS.search(text)
    body, marks = (text[: m.start()], m.group(1)) if m else (text, "")
    out = e(body)
    for n in re.findall(r"\d+", marks):
        out += tag("sup", tag("a", e(n), href=f"#{table_id}-fn{n}"), class_="fn")
    return out


def _status_class(text: str) -> str:
    for status in ("unsupported", "failed"):
        if text.startswith(status):
            return f"num st-{status}"
    return "num"


def why_row(line: str, span: int, source: str = "") -> str:
    """A line under a table's verdict row saying why its verdict came out so (`source`:
    what said it, shown on hover)."""
    return tag("tr", tag("td", e(line), colspan=str(span)), class_="why", title=source or None)


def table_html(t: Table, table_id: str, why: Why | None = None) -> str:
    """A run's table, its verdict row and the lines saying why under it (`why`: the run's
    last explain run's)."""
    header = tag("th", e(t.row_header), scope="col") + "".join(
        tag("th", e(c), scope="col", class_="num") for c in t.columns
    )
    body = []
    for i, (label, cells) in enumerate(t.rows):
        tds = [tag("th", _cell_html(label, table_id), scope="row")]
        for j, c in enumerate(cells):
            if (i, j) in t.best:
                inner = tag("strong", _cell_html(c, table_id)) + tag(
                    "span", "best", class_="badge best", title="ordered better than every other"
                )
                tds.append(tag("td", inner, class_="num best"))
            else:
                tds.append(tag("td", _cell_html(c, table_id), class_=_status_class(c)))
        body.append(tag("tr", "".join(tds)))
    if t.verdicts:
        tds = [tag("th", "verdict", scope="row")]
        for v in t.verdicts:
            if v is None:
                tds.append(tag("td", "", class_="num"))
            else:
                cls = "num sig" if v.kind == "order" else "num"
                tds.append(tag("td", e(v.short), class_=cls, title=v.text))
        body.append(tag("tr", "".join(tds), class_="verdict"))
    source = why.source if why else ""
    body += [why_row(w, len(t.columns) + 1, source) for w in explained.under(t, why)]
    table = tag(
        "table",
        tag("caption", e(t.caption))
        + tag("thead", tag("tr", header))
        + tag("tbody", "".join(body)),
        class_="results",
    )
    notes = ""
    if t.footnotes:
        notes = tag(
            "ol",
            "".join(tag("li", e(n), id=f"{table_id}-fn{i}") for i, n in enumerate(t.footnotes, 1)),
            class_="footnotes",
        )
    legend = tag("p", e(t.legend), class_="legend") if t.legend else ""
    return tag(
        "figure",
        tag("h3", e(t.title), id=table_id) + tag("div", table, class_="scroll") + legend + notes,
        class_="table",
    )


def _params_html(facts_of: dict[str, Any], rows: Sequence[Row]) -> str:
    """The workload's parameters with what each means (as the run stored it)."""
    meanings: dict[str, str] = facts_of.get("params") or {}
    values: dict[str, list[str]] = {}
    for r in rows:
        for k, v in r.params.items():
            values.setdefault(k, [])
            if str(v) not in values[k]:
                values[k].append(str(v))
    items = [
        (name, f"{', '.join(shown)}" + (f": {meanings[name]}" if meanings.get(name) else ""))
        for name, shown in values.items()
    ]
    return details("Parameters", facts(items), class_="params") if items else ""


def workload_section(
    run: RunRecord,
    sid: str,
    title: str,
    tables: Sequence[Table],
    rows: Sequence[Row],
    charts: Sequence[Chart],
    why: Why | None = None,
) -> str:
    wl = rows[0].workload
    stored = run.workloads.get(wl) or {}
    parts = [tag("h2", e(title), id=sid)]
    if stored.get("summary"):
        parts.append(tag("p", e(stored["summary"]), class_="about"))
    parts.append(_params_html(stored, rows))
    parts += [table_html(t, f"{sid}-t{i}", why) for i, t in enumerate(tables)]
    main = [c for c in charts if c.kind not in ("timeline", "series")]
    timelines = [c for c in charts if c.kind == "timeline"]
    if main:
        parts.append(tag("h3", "Charts"))
        parts.append(tag("div", "".join(img(c) for c in main), class_="charts"))
    parts.append(over_time_html([c for c in charts if c.kind == "series"]))
    if timelines:
        parts.append(
            details(
                "Timelines: device throughput, utilisation and CPU over the timed phase "
                f"({len(timelines)})",
                tag("div", "".join(img(c) for c in timelines), class_="charts"),
                open=True,
                class_="timelines",
            )
        )
    parts.append(repetitions_html(rows, f"{sid}-reps"))
    return tag("section", "".join(parts))


def section_id(n: int, workload: str) -> str:
    return f"wl-{n}-{slug(workload)}"
