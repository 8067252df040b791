"""A workload's per-second charts (charts/series.py): throughput and latency percentiles
over the timed phase, one figure per cell, under the workload's own charts."""

from __future__ import annotations

from collections.abc import Sequence

from fsbench.reports.charts import Chart
from fsbench.reports.html.embed import img
from fsbench.reports.html.markup import details, tag


def over_time_html(charts: Sequence[Chart]) -> str:
    """The series charts of one workload, open; nothing when it recorded none."""
    if not charts:
        return ""
    return details(
        f"Over time: throughput and latency percentiles per second ({len(charts)})",
        tag("div", "".join(img(c) for c in charts), class_="charts"),
        open=True,
        class_="timelines over-time",
    )
