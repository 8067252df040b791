"""Time and on-disk layout side by side (alloc: seconds | fragments, with extents as
diamonds): one figure, two panels sharing the configs' axis."""

from __future__ import annotations

from collections.abc import Iterable

from matplotlib.axes import Axes

from fsbench.reports.charts import figure
from fsbench.reports.charts.bars import STAR_NOTE, Bars, bars_for, config_legend, draw_bars
from fsbench.reports.charts.figure import Chart, Drawing, ok
from fsbench.reports.charts.style import INK

LAYOUT_METRICS = ("seconds", "fragments", "extents")


def layout_chart(d: Drawing) -> Chart | None:
    rows, colors = d.rows, d.colors
    names = {r.metric for r in rows}
    if not {"seconds", "fragments"} <= names:
        return None
    time_bars, varying, constant = bars_for(rows, "seconds")
    frag_bars, _, _ = bars_for(rows, "fragments")
    ext_bars = bars_for(rows, "extents")[0] if "extents" in names else None
    n_bars = len(time_bars.configs) * len(time_bars.groups)
    fig = figure.new_figure(12.0, 2.0 + 0.34 * n_bars + 0.2 * len(time_bars.groups))
    ax_t, ax_f = fig.subplots(1, 2, sharey=True)
    starred = draw_bars(ax_t, time_bars, colors, True, 1.0, decisions=d.decisions)
    counts = [
        r.mean
        for r in rows
        if r.metric in ("fragments", "extents") and ok(r) and r.mean is not None
    ]
    log = bool(counts) and min(counts) > 0 and max(counts) / min(counts) >= 10
    starred |= draw_bars(ax_f, frag_bars, colors, True, 1.0, log=log, decisions=d.decisions)
    ax_t.set_xlabel("time to disk, sync + umount included (s)")
    ax_f.set_xlabel(
        ("fragments (count; ◆ = extents)" if ext_bars else "fragments (count)")
        + (", log scale" if log else "")
    )
    ax_t.set_title("time (lower is better)", loc="left", fontsize=10.5, color=INK)
    ax_f.set_title("layout after remount (lower is better)", loc="left", fontsize=10.5, color=INK)
    if ext_bars is not None:
        _draw_markers(ax_f, ext_bars)
    if not time_bars.single:
        if len(varying) == 1:
            ax_t.set_ylabel(varying[0])
        config_legend(ax_f, time_bars.configs, colors)
    ax_f.tick_params(axis="y", left=False)
    title = figure.heading(
        fig,
        d,
        "time and on-disk layout",
        "mean with 95% CI",
        figure.n_text([r for r in rows if r.metric == "seconds"]),
        figure.constant_text(rows, constant),
        STAR_NOTE if starred else "",
    )
    paths = figure.save(fig, d.out_dir, d.stem("layout"), d.formats)
    return Chart("layout", title, d.workload, d.chain, paths, "fragments", figure.size(fig))


def _draw_markers(ax: Axes, bars: Bars) -> None:
    """Extents as diamonds over the fragment bars (same positions)."""
    placed = [(row.mean, pos) for pos, row in bars.ok_rows() if row.mean is not None]
    if placed:
        xs, ys = [x for x, _ in placed], [y for _, y in placed]
        ax.scatter(xs, ys, marker="D", s=22, color=INK, zorder=4, label="_extents")
        scale = 2.5 if ax.get_xscale() == "log" else 1.1
        ax.set_xlim(right=max(ax.get_xlim()[1], max(xs) * scale))


def _layout(d: Drawing) -> Iterable[Chart | None]:
    """Time beside fragments and extents, for workloads that measure both (alloc)."""
    return (layout_chart(d),)


layout_chart_set = figure.chart_set(_layout)
layout_charts = figure.chart_files(layout_chart_set)
