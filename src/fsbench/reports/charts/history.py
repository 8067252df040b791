"""One metric over the runs of a series: each run's mean with its 95% interval, the
change points as vertical lines between the runs they fall between, the mean of each
segment as a horizontal step, and every run labelled by its id (and kernel or commit
when the series runs over them) on the x axis."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from matplotlib import rc_context

from fsbench.analysis.history import Series
from fsbench.reports.charts.figure import Chart, new_figure, save, slug, titles
from fsbench.reports.charts.style import MUTED, STYLE
from fsbench.system import numbers

WORSE, BETTER = "#D55E00", "#009E73"  # the palette's vermillion and green


def point_label(s: Series, i: int) -> str:
    """The x label of point i: its run, and what changes along the series (kernel, commit)."""
    p = s.points[i]
    kernels = {q.kernel for q in s.points}
    commits = {q.commit for q in s.points}
    label = f"run {p.run}"
    if len(commits) > 1 and p.commit:
        label += f"\n{p.commit[:8]}"
    elif len(kernels) > 1 and p.kernel:
        label += f"\n{p.kernel[:14]}"
    return label


def history_chart(
    s: Series,
    marks: Sequence[int],
    out_dir: Path,
    by: str = "date",
    stem: str = "",
    formats: Sequence[str] = ("svg",),
) -> Chart:
    """`marks`: the listed number of each of the series' change points; `stem`: the
    file name (unique in out_dir)."""
    n = len(s.points)
    width = min(14.0, max(7.0, 0.35 * n + 3))
    with rc_context(STYLE):
        fig = new_figure(width, 4.2)
        ax = fig.subplots()
        xs = list(range(n))
        means = [p.mean for p in s.points]
        low = [p.mean - p.ci95[0] if p.ci95 else 0.0 for p in s.points]
        high = [p.ci95[1] - p.mean if p.ci95 else 0.0 for p in s.points]
        ax.errorbar(xs, means, yerr=[low, high], fmt="o", color="#0072B2", ecolor=MUTED,
                    markersize=4, capsize=2, linewidth=1, label="run mean, 95% CI")  # fmt: skip
        bounds = [0, *[c.index for c in s.changes], n]
        for lo, hi in zip(bounds, bounds[1:], strict=False):
            level = sum(means[lo:hi]) / (hi - lo)
            ax.hlines(level, lo - 0.4, hi - 0.6, color="#333333", linewidth=1.2)
        for number, c in zip(marks, s.changes, strict=True):
            color = WORSE if c.worse else BETTER if c.direction == "better" else MUTED
            ax.axvline(c.index - 0.5, color=color, linestyle="--", linewidth=1.5)
            ax.annotate(
                f"#{number} {numbers.ratio(c.ratio)} {numbers.p(c.p)}"
                + (" harness?" if c.harness else ""),
                (c.index - 0.5, 1.0), xycoords=("data", "axes fraction"), xytext=(3, -12),
                textcoords="offset points", color=color, fontsize=8,
            )  # fmt: skip
        ax.set_xticks(xs, [point_label(s, i) for i in xs], fontsize=7,
                      rotation=90 if n > 12 else 0)  # fmt: skip
        ax.set_xlim(-0.7, n - 0.3)
        ax.set_ylabel(f"{s.metric}" + (f" ({s.unit})" if s.unit else ""))
        better = f"{s.better} is better" if s.better in ("higher", "lower") else ""
        titles(fig, s.title, f"{n} runs by {by}; {better}; dashed: change points")
        paths = save(fig, out_dir, stem or slug(f"history-{s.title}"), formats)
    return Chart("history", s.title, s.workload, s.chain, paths, s.metric, (width, 4.2))
