"""A document's chart block (reports/document.py `Chart`): means with their 95% CIs at
their places on a categorical axis (the commits a bisection measured, in history order),
coloured by their verdict, and bands (its endpoints' CIs) across the whole axis."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from matplotlib import rc_context

from fsbench.reports import document as d
from fsbench.reports.charts.figure import Chart, new_figure, save, size, slug, titles
from fsbench.reports.charts.style import STYLE

COLORS: dict[d.Tone, str] = {"good": "tab:green", "bad": "tab:red"}


def points_chart(chart: d.Chart, out_dir: Path, formats: Sequence[str] = ("svg",)) -> Chart:
    """The chart as files in `out_dir`; its record."""
    with rc_context(STYLE):
        fig = new_figure(8.0, 3.8)
        ax = fig.subplots()
        for band in chart.bands:
            colour = COLORS.get(band.tone, "tab:grey")
            ax.axhspan(band.low, band.high, color=colour, alpha=0.2, label=band.label)
        placed = [(p.x, p.mean, p) for p in chart.points if p.x is not None and p.mean is not None]
        for x, mean, p in placed:
            ax.errorbar(
                x,
                mean,
                yerr=[[mean - p.low], [p.high - mean]],
                fmt="o",
                color=COLORS.get(p.tone, "tab:grey"),
            )
        ax.set_xticks([x for x, _, _ in placed], [p.label for _, _, p in placed],
                      rotation=45, fontsize=7)  # fmt: skip
        ax.set_ylabel(chart.y_label)
        ax.set_xlabel(chart.x_label)
        if chart.bands:
            ax.legend(fontsize=7)
        titles(fig, chart.title, "")
        paths = save(fig, out_dir, slug(chart.name), formats)
        return Chart("points", chart.title, "", "", paths, None, size(fig))
