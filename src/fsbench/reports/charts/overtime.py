"""A document's lines over time (reports/document.py `Lines`): a line per config, in its
colour."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from matplotlib import rc_context
from matplotlib.ticker import FuncFormatter

from fsbench.reports import document as d
from fsbench.reports.charts.figure import Chart, new_figure, save, size, slug, titles
from fsbench.reports.charts.style import STYLE, config_colors, tick


def lines_chart(block: d.Lines, out_dir: Path, formats: Sequence[str] = ("svg",)) -> Chart:
    """The lines as files in `out_dir`; its record (narrow: two sit side by side)."""
    with rc_context(STYLE):
        fig = new_figure(6.4, 3.4)
        ax = fig.subplots()
        colors = config_colors([config for config, _, _ in block.series])
        for config, ts, values in block.series:
            ax.plot(ts, values, color=colors[config], label=config, linewidth=1.4)
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(FuncFormatter(tick))
        ax.set_xlabel(block.x_label)
        ax.set_ylabel(block.y_label)
        ax.legend(fontsize=8)
        titles(fig, block.title, block.about)
        paths = save(fig, out_dir, slug(block.name), formats)
        return Chart("lines", block.title, "", "", paths, None, size(fig))
