"""Bars with their 95% CI: per workload and headline metric, every config; one group of
bars per swept value when there is a sweep; horizontal when labels are long. A star
marks the config the run's decision orders better than every other (reports.verdicts)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from matplotlib import ticker
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from fsbench.analysis.decisions import Decision
from fsbench.analysis.rows import Row
from fsbench.analysis.verdicts import Key, key_of
from fsbench.reports.charts import figure, style
from fsbench.reports.charts.figure import Chart, Drawing, ok
from fsbench.reports.charts.style import INK, MUTED
from fsbench.reports.headline import headline_metrics
from fsbench.reports.tables import dims_of, params_label, split_dims

STAR_NOTE = "★ ordered better than every other config (the table's verdict)"


@dataclass
class Bars:
    groups: list[str]  # one per swept combination ("" when nothing is swept)
    configs: list[str]
    cell: Callable[[str, str], Row | None]  # (group, config) -> row

    @property
    def single(self) -> bool:
        return self.groups == [""]

    @property
    def width(self) -> float:
        return 0.8 if self.single else 0.8 / len(self.configs)

    def position(self, group: int, config: int) -> float:
        """Where the bar of a config in a group stands on the category axis."""
        if self.single:
            return float(config)
        return group + (config - (len(self.configs) - 1) / 2) * self.width

    def ok_rows(self) -> Iterable[tuple[float, Row]]:
        """(position, row) of every bar that has a mean."""
        for gi, group in enumerate(self.groups):
            for ci, config in enumerate(self.configs):
                row = self.cell(group, config)
                if row is not None and ok(row):
                    yield self.position(gi, ci), row


def bars_for(rows: list[Row], metric: str) -> tuple[Bars, list[str], list[str]]:
    """The bars of one metric, the swept dimensions, and the constant ones. A cell with no
    metric at all (every trial failed) stands in for the metric, to say why."""
    varying, constant = split_dims(rows)
    configs = list(dict.fromkeys(r.config for r in rows))
    index: dict[tuple[str, str], Row] = {}
    for r in rows:
        group = params_label(dims_of(r), varying) if varying else ""
        if r.metric == metric:
            index[(group, r.config)] = r
        elif r.metric is None:
            index.setdefault((group, r.config), r)
    # A group where no trial reported the metric (a stage that does not measure it) is no
    # group of this chart; one where a trial was refused or failed says why.
    measured = {g for (g, _), r in index.items() if r.values or r.status != "ok"}
    every = list(dict.fromkeys(g for g, _ in index))
    groups = ([g for g in every if g in measured] or every) if varying else [""]
    return Bars(groups, configs, lambda g, c: index.get((g, c))), varying, constant


def _err(row: Row) -> tuple[float, float]:
    assert row.mean is not None
    if not row.ci95:
        return 0.0, 0.0
    return max(0.0, row.mean - row.ci95[0]), max(0.0, row.ci95[1] - row.mean)


def _wants_log(values: Sequence[float]) -> bool:
    pos = [v for v in values if v > 0]
    return len(pos) == len(values) and len(pos) >= 2 and max(pos) / min(pos) >= 100


def _no_bar(ax: Axes, pos: float, text: str, horizontal: bool, log: bool) -> None:
    """An unsupported or failed cell, written where its bar would be."""
    base = 1.0 if log else 0.0
    style: dict[str, Any] = {"fontsize": 8.5, "color": MUTED, "style": "italic"}
    if horizontal:
        ax.text(base, pos, f"  {text}", va="center", ha="left", **style)
    else:
        ax.text(pos, base, f" {text}", va="bottom", ha="center", rotation=90, **style)


def draw_bars(
    ax: Axes,
    bars: Bars,
    colors: dict[str, str],
    horizontal: bool,
    factor: float,
    mark_best: bool = True,
    log: bool | None = None,
    decisions: Mapping[Key, Decision] | None = None,
) -> bool:
    """Grouped bars with CI whiskers; unsupported/failed cells written where the bar would
    be; a star on the config ordered better than every other. Returns whether a star was drawn."""
    means = [r.mean / factor for _, r in bars.ok_rows() if r.mean is not None]
    if log is None:
        log = _wants_log(means)
    top = max((abs(m) for m in means), default=1.0) or 1.0
    reach = top  # the farthest whisker
    starred = False
    for gi, group in enumerate(bars.groups):
        labelled = [(c, bars.cell(group, c)) for c in bars.configs]
        sample = next((r for _, r in labelled if r is not None and ok(r)), None)
        verdict = (decisions or {}).get(key_of(sample)) if sample is not None else None
        winner = verdict.best if verdict and mark_best else None
        for ci, (config, row) in enumerate(labelled):
            pos = bars.position(gi, ci)
            if row is None:
                continue
            if not ok(row) or row.mean is None:
                _no_bar(ax, pos, row.status if row.status != "ok" else "no data", horizontal, log)
                continue
            mean = row.mean / factor
            lo, hi = (e / factor for e in _err(row))
            if log:
                lo = min(lo, mean * 0.999)  # a whisker below zero cannot be drawn on log
            reach = max(reach, mean + hi)
            # The legend is built from `colors` (config_legend), not from the bars.
            kw: dict[str, Any] = {
                "color": colors[config],
                "edgecolor": "white",
                "linewidth": 0.6,
                "zorder": 2,
            }
            err_kw = {"ecolor": INK, "elinewidth": 1.1, "capsize": 3, "capthick": 1.1}
            if horizontal:
                ax.barh(pos, mean, height=bars.width, xerr=[[lo], [hi]], error_kw=err_kw, **kw)
            else:
                ax.bar(pos, mean, width=bars.width, yerr=[[lo], [hi]], error_kw=err_kw, **kw)
            if config == winner:
                starred = True
                end = mean + hi
                end += end * 0.12 if log else top * 0.02
                if horizontal:
                    ax.text(end, pos, "★", va="center", ha="left", fontsize=11, color=INK)
                else:
                    ax.text(pos, end, "★", va="bottom", ha="center", fontsize=11, color=INK)
    positive = [m for m in means if m > 0]
    _axes(ax, bars, horizontal, log, reach, min(positive, default=1.0))
    return starred


def _axes(
    ax: Axes, bars: Bars, horizontal: bool, log: bool, reach: float, smallest: float = 1.0
) -> None:
    ticks = list(range(len(bars.configs) if bars.single else len(bars.groups)))
    labels = bars.configs if bars.single else bars.groups
    value_axis = ax.xaxis if horizontal else ax.yaxis
    if horizontal:
        ax.set_yticks(ticks, [style.wrap(x) for x in labels])
        if not ax.yaxis_inverted():  # first group on top (a shared axis is inverted once)
            ax.invert_yaxis()
        ax.grid(axis="y", visible=False)
        if log:
            ax.set_xscale("log")
        else:
            ax.set_xlim(left=0, right=reach * 1.1)
    else:
        ax.set_xticks(ticks, labels)
        ax.grid(axis="x", visible=False)
        if log:
            ax.set_yscale("log")
        else:
            ax.set_ylim(bottom=0, top=reach * 1.1)
        if max((len(x) for x in labels), default=0) > 8:
            for t in ax.get_xticklabels():
                t.set_rotation(20)
                t.set_horizontalalignment("right")
    value_axis.set_major_formatter(ticker.FuncFormatter(style.tick))
    if log:
        value_axis.set_minor_formatter(ticker.NullFormatter())
        # From the decade at or below the smallest bar: a 14 ms fallocate beside 3 s of
        # write() calls must still show.
        floor = 10 ** math.floor(math.log10(smallest))
        (ax.set_xlim if horizontal else ax.set_ylim)(min(0.5, floor), reach * 2.5)


def config_legend(
    ax: Axes, configs: Sequence[str], colors: dict[str, str], below: bool = False
) -> None:
    """Every config in the legend, also one whose cells all failed; right of the plot, or
    under it (horizontal bars need the width)."""
    handles = [Patch(facecolor=colors[c], label=c) for c in configs]
    if below:
        fig = ax.get_figure()
        assert isinstance(fig, Figure)
        fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 4))
        return
    ax.legend(
        handles=handles,
        title="config",
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        borderaxespad=0.5,
    )


def bar_chart(d: Drawing, metric: str) -> Chart | None:
    rows = d.rows
    sample = next((r for r in rows if r.metric == metric), None)
    if sample is None:
        return None
    bars, varying, constant = bars_for(rows, metric)
    values = [r.mean for r in rows if r.metric == metric and r.mean is not None]
    factor, unit = style.scale(sample.unit, values)
    labels = bars.configs if bars.single else bars.groups
    n_bars = len(bars.configs) * len(bars.groups)
    horizontal = max((len(x) for x in labels), default=0) > style.LONG_LABEL or n_bars > 24
    if horizontal:
        # A row is as tall as its tallest wrapped label, or labels run into each other.
        row = max(0.3, 0.17 * style.label_lines(labels) + 0.08) if bars.single else 0.3
        fig = figure.new_figure(7.2, 1.8 + row * n_bars + 0.25 * len(bars.groups))
    else:
        width = max(6.4, min(11.5, 2.8 + 0.3 * n_bars + 0.25 * len(bars.groups)))
        fig = figure.new_figure(width, 4.4)
    ax = fig.add_subplot()
    starred = draw_bars(ax, bars, d.colors, horizontal, factor, decisions=d.decisions)
    (ax.set_xlabel if horizontal else ax.set_ylabel)(style.axis_label(metric, unit))
    if not bars.single:
        if len(varying) == 1:  # else the group labels name their parameters
            (ax.set_ylabel if horizontal else ax.set_xlabel)(varying[0])
        config_legend(ax, bars.configs, d.colors, below=horizontal)
    title = figure.heading(
        fig,
        d,
        metric,
        style.better_text(sample.better),
        "mean with 95% CI",
        figure.n_text([r for r in rows if r.metric == metric]),
        figure.constant_text(rows, constant),
        STAR_NOTE if starred else "",
    )
    paths = figure.save(fig, d.out_dir, d.stem("bar", metric), d.formats)
    return Chart("bar", title, d.workload, d.chain, paths, metric, figure.size(fig))


def _bars(d: Drawing) -> Iterable[Chart | None]:
    """Per workload and headline metric, every config with its 95% CI whiskers."""
    return (bar_chart(d, metric) for metric in headline_metrics(d.rows))


bar_chart_set = figure.chart_set(_bars)
bar_charts = figure.chart_files(bar_chart_set)
