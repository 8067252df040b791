"""Sweep lines: for a sweep of a numeric parameter (clients, threads, copies...), the
metric against the parameter, one line per config with its 95% CI band; other swept
dimensions (a knob...) make small multiples with one y axis.

A sweep of `scale_to_mem` (the working set as a multiple of the memory the workload may
use) is the x axis whenever it varies, read as "working set / memory" with a mark at 1:
where each filesystem falls off the page cache (Tarasov et al., HotOS'11)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from matplotlib import ticker
from matplotlib.lines import Line2D

from fsbench.analysis.rows import Row
from fsbench.reports.charts import figure, style
from fsbench.reports.charts.figure import Chart, Drawing, ok
from fsbench.reports.headline import headline_metrics
from fsbench.reports.tables import dims_of, split_dims
from fsbench.system import numbers

# Parameters whose sweep is the x axis before any other, and how the axis reads them.
AXES = {
    "scale_to_mem": "working set / memory",
    "at": "aged to (pulls done, or share of the volume written)",  # the aging workload
}


def axis_name(param: str) -> str:
    return AXES.get(param, param)


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def numeric_sweep(rows: Sequence[Row]) -> str | None:
    """The first swept parameter whose values are all numbers, if any (one of AXES
    first)."""
    varying, _ = split_dims(list(rows))
    for name in sorted(varying, key=lambda n: n not in AXES):
        values = [dims_of(r).get(name) for r in rows]
        if _numeric(values) and len(set(values)) >= 2:
            return name
    return None


def _panel(row: Row, others: list[str]) -> str:
    return " ".join(f"{n}={numbers.setting(dims_of(row).get(n))}" for n in others)


def line_chart(d: Drawing, metric: str, param: str) -> Chart | None:
    rows, colors = d.rows, d.colors
    mrows = [r for r in rows if r.metric == metric and ok(r)]
    if not mrows:
        return None
    sample = mrows[0]
    varying, constant = split_dims(rows)
    others = [v for v in varying if v != param]
    factor, unit = style.scale(sample.unit, [r.mean for r in mrows if r.mean is not None])
    panels = list(dict.fromkeys(_panel(r, others) for r in mrows))
    n = len(panels)
    fig = figure.new_figure(7.2 if n == 1 else min(13.0, 1.8 + 4.0 * n), 4.6)
    axes = fig.subplots(1, n, sharey=True, squeeze=False)[0]
    xs_all = sorted({float(dims_of(r)[param]) for r in mrows})
    for ax, panel in zip(axes, panels, strict=True):
        prows = [r for r in mrows if _panel(r, others) == panel]
        for config in dict.fromkeys(r.config for r in prows):
            srows = sorted(
                (r for r in prows if r.config == config), key=lambda r: float(dims_of(r)[param])
            )
            xs = [float(dims_of(r)[param]) for r in srows]
            ys = [(r.mean or 0.0) / factor for r in srows]
            lo = [((r.ci95[0] if r.ci95 else r.mean) or 0.0) / factor for r in srows]
            hi = [((r.ci95[1] if r.ci95 else r.mean) or 0.0) / factor for r in srows]
            if all(y >= 0 for y in ys):  # a rate or a time is never negative
                lo = [max(0.0, v) for v in lo]
            color = colors[config]
            ax.fill_between(xs, lo, hi, color=color, alpha=0.15, linewidth=0, zorder=1)
            ax.plot(xs, ys, "-", color=color, marker="o", markersize=5, linewidth=2, zorder=3)
        if xs_all and xs_all[0] > 0 and xs_all[-1] / xs_all[0] >= 8:
            ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(ticker.FixedLocator(xs_all))
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda x, _p: f"{x:g}"))
        ax.xaxis.set_minor_locator(ticker.NullLocator())
        if param in AXES and xs_all and xs_all[0] < 1 < xs_all[-1]:
            ax.axvline(1.0, color=style.MUTED, linewidth=1, linestyle=":", zorder=0)
        ax.set_xlabel(axis_name(param))
        if panel:
            ax.set_title(panel, loc="left", fontsize=10.5, color=style.INK)
    axes[0].set_ylabel(style.axis_label(metric, unit))
    axes[0].yaxis.set_major_formatter(ticker.FuncFormatter(style.tick))
    if all((r.mean or 0.0) >= 0 for r in mrows):
        axes[0].set_ylim(bottom=0)
    handles = [
        Line2D([], [], color=colors[c], marker="o", linewidth=2, label=c)
        for c in dict.fromkeys(r.config for r in mrows)
    ]
    axes[-1].legend(
        handles=handles,
        title="config",
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        borderaxespad=0.5,
    )
    title = figure.heading(
        fig,
        d,
        f"{metric} by {axis_name(param)}",
        style.better_text(sample.better),
        "mean, band = 95% CI",
        figure.n_text(mrows),
        figure.constant_text(rows, constant),
    )
    paths = figure.save(fig, d.out_dir, d.stem("line", metric, param), d.formats)
    return Chart("line", title, d.workload, d.chain, paths, metric, figure.size(fig))


def _lines(d: Drawing) -> Iterable[Chart | None]:
    """Per workload with a numeric sweep and per headline metric: the metric against the
    parameter, one line per config with its CI band."""
    param = numeric_sweep(d.rows)
    if param is None:
        return ()
    return (line_chart(d, metric, param) for metric in headline_metrics(d.rows))


line_chart_set = figure.chart_set(_lines)
line_charts = figure.chart_files(line_chart_set)
