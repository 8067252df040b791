"""A document's histogram block (reports/document.py `Histogram`): each config's counts by
bucket as bars side by side, in the configs' colours."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from matplotlib import rc_context
from matplotlib.ticker import FuncFormatter

from fsbench.reports import document as d
from fsbench.reports.charts.figure import Chart, new_figure, save, size, slug, titles
from fsbench.reports.charts.style import STYLE, config_colors, tick


def histogram_chart(block: d.Histogram, out_dir: Path, formats: Sequence[str] = ("svg",)) -> Chart:
    """The histogram as files in `out_dir`; its record (narrow: two sit side by side)."""
    with rc_context(STYLE):
        fig = new_figure(6.4, 3.4)
        ax = fig.subplots()
        colors = config_colors([name for name, _ in block.series])
        width = 0.8 / max(len(block.series), 1)
        for i, (name, counts) in enumerate(block.series):
            xs = [j + (i - (len(block.series) - 1) / 2) * width for j in range(len(counts))]
            ax.bar(xs, counts, width, label=name, color=colors[name])
        ax.set_xticks(range(len(block.buckets)), block.buckets, rotation=45, fontsize=8)
        ax.yaxis.set_major_formatter(FuncFormatter(tick))
        ax.grid(axis="x", visible=False)
        ax.set_xlabel(block.x_label)
        ax.set_ylabel(block.y_label)
        ax.legend(fontsize=8)
        titles(fig, block.title, "")
        paths = save(fig, out_dir, slug(block.name), formats)
        return Chart("histogram", block.title, "", "", paths, None, size(fig))
