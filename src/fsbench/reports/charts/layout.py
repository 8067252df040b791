"""Time and on-disk layout side by side (alloc: seconds | fragments, with extents as
diamonds): one figure, two panels sharing the configs' axis."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from matplotlib.axes import Axes

from fsbench.reports.charts.bars import STAR_NOTE, Bars, bars_for, config_legend, draw_bars
from fsbench.reports.charts.figure import (
    Chart,
    Namer,
    constant_text,
    n_text,
    new_figure,
    ok,
    paths_of,
    per_workload,
    save,
    size,
    subtitle,
    titles,
    wl_title,
)
from fsbench.reports.charts.style import INK
from fsbench.reports.formats import IMAGES
from fsbench.reports.rows import Row

LAYOUT_METRICS = ("seconds", "fragments", "extents")


def layout_chart(
    rows: list[Row], colors: dict[str, str], out_dir: Path, stem: str, formats: Sequence[str]
) -> Chart | None:
    names = {r.metric for r in rows}
    if not {"seconds", "fragments"} <= names:
        return None
    time_bars, varying, constant = bars_for(rows, "seconds")
    frag_bars, _, _ = bars_for(rows, "fragments")
    ext_bars = bars_for(rows, "extents")[0] if "extents" in names else None
    n_bars = len(time_bars.configs) * len(time_bars.groups)
    fig = new_figure(12.0, 2.0 + 0.34 * n_bars + 0.2 * len(time_bars.groups))
    ax_t, ax_f = fig.subplots(1, 2, sharey=True)
    starred = draw_bars(ax_t, time_bars, colors, True, 1.0)
    counts = [
        r.mean
        for r in rows
        if r.metric in ("fragments", "extents") and ok(r) and r.mean is not None
    ]
    log = bool(counts) and min(counts) > 0 and max(counts) / min(counts) >= 10
    starred |= draw_bars(ax_f, frag_bars, colors, True, 1.0, log=log)
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
    sample = next(r for r in rows if r.metric == "seconds")
    title = f"{wl_title(sample.workload, sample.chain)}: time and on-disk layout"
    titles(
        fig,
        title,
        subtitle(
            "mean with 95% CI",
            n_text([r for r in rows if r.metric == "seconds"]),
            constant_text(rows, constant),
            STAR_NOTE if starred else "",
        ),
    )
    paths = save(fig, out_dir, stem, formats)
    return Chart("layout", title, sample.workload, sample.chain, paths, "fragments", size(fig))


def _draw_markers(ax: Axes, bars: Bars) -> None:
    """Extents as diamonds over the fragment bars (same positions)."""
    placed = [(row.mean, pos) for pos, row in bars.ok_rows() if row.mean is not None]
    if placed:
        xs, ys = [x for x, _ in placed], [y for _, y in placed]
        ax.scatter(xs, ys, marker="D", s=22, color=INK, zorder=4, label="_extents")
        scale = 2.5 if ax.get_xscale() == "log" else 1.1
        ax.set_xlim(right=max(ax.get_xlim()[1], max(xs) * scale))


def layout_chart_set(
    rows: Sequence[Row],
    out_dir: Path,
    formats: Sequence[str] = IMAGES,
    colors: dict[str, str] | None = None,
) -> list[Chart]:
    """Per workload that measures time and fragments (alloc): one layout chart."""

    def draw(
        chain: str, wl: str, wrows: list[Row], colors: dict[str, str], name: Namer
    ) -> Iterable[Chart | None]:
        yield layout_chart(wrows, colors, out_dir, name("layout", chain, wl), formats)

    return per_workload(rows, colors, draw)


def layout_charts(
    rows: Sequence[Row], out_dir: Path, formats: Sequence[str] = IMAGES
) -> list[Path]:
    """Time beside fragments/extents, for workloads that measure both (alloc)."""
    return paths_of(layout_chart_set(rows, out_dir, formats))
