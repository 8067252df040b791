"""Charts as files: pure functions from report rows (and trial timelines) to PNG and SVG,
one module per family.

- `bars`: per workload and headline metric, every config with its 95% CI.
- `lines`: a numeric sweep (clients, threads...): the metric against the parameter.
- `layout`: time and on-disk layout side by side (alloc).
- `timelines`: a bootchart of one trial per config (device, CPU over the timed phase).
- `series`: the per-second series workloads record (throughput with where steady state
  began, latency percentiles on a log axis), every counted repetition, per cell.
- `style` and `figure`: the look, the files and the titles they share.

Every function takes its data and an output directory and returns what it wrote.
matplotlib is used through `Figure` objects on the Agg canvas: no pyplot, no global state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from fsbench.analysis.decisions import Decision
from fsbench.analysis.design import Design
from fsbench.analysis.rows import Row
from fsbench.analysis.verdicts import Key, decide_all
from fsbench.reports.charts.bars import bar_chart_set, bar_charts
from fsbench.reports.charts.figure import Chart, slug
from fsbench.reports.charts.layout import layout_chart_set, layout_charts
from fsbench.reports.charts.lines import line_chart_set, line_charts, numeric_sweep
from fsbench.reports.charts.series import TrialSeries, series_chart_set, series_charts, trial_series
from fsbench.reports.charts.style import config_colors
from fsbench.reports.charts.timelines import (
    Timeline,
    first_rep_timelines,
    timeline_chart_set,
    timeline_charts,
)
from fsbench.reports.formats import IMAGES

__all__ = [
    "Chart",
    "Timeline",
    "TrialSeries",
    "all_charts",
    "bar_chart_set",
    "bar_charts",
    "first_rep_timelines",
    "layout_chart_set",
    "layout_charts",
    "line_chart_set",
    "line_charts",
    "numeric_sweep",
    "series_chart_set",
    "series_charts",
    "slug",
    "timeline_chart_set",
    "timeline_charts",
    "trial_series",
]


def all_charts(
    rows: Sequence[Row],
    timelines: Sequence[Timeline],
    out_dir: Path,
    formats: Sequence[str] = IMAGES,
    series: Sequence[TrialSeries] = (),
    decisions: Mapping[Key, Decision] | None = None,
) -> list[Chart]:
    """Every chart of a report, configs in the same colours throughout, the best marked
    as the run's decisions say (decided here under a fixed design when not given)."""
    colors = config_colors([r.config for r in rows])
    if decisions is None:
        decisions = decide_all(rows, Design())
    return [
        *layout_chart_set(rows, out_dir, formats, colors, decisions),
        *bar_chart_set(rows, out_dir, formats, colors, decisions),
        *line_chart_set(rows, out_dir, formats, colors),
        *timeline_chart_set(timelines, out_dir, formats),
        *series_chart_set(series, out_dir, formats, colors),
    ]
