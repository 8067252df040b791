"""The race of `fsbench tune` as one chart: configs alive per round (left), and every
config's value per round (right, log scale), the survivors in colour, the dropped ones
grey and ending with a cross at the round that dropped them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from matplotlib import rc_context, ticker

from fsbench.reports.charts.figure import Chart, new_figure, save, size, slug, titles
from fsbench.reports.charts.style import MUTED, STYLE, config_colors
from fsbench.reports.tune import TuneReport


def race_chart(doc: TuneReport, out_dir: Path, formats: Sequence[str] = ("svg",)) -> Chart:
    with rc_context(STYLE):
        fig = new_figure(10.0, 4.2)
        alive_ax, values_ax = fig.subplots(1, 2, width_ratios=(1, 2))
        rounds = [r.round for r in doc.rounds]
        alive = [r.alive - len(r.dropped) for r in doc.rounds]
        alive_ax.step(rounds, alive, where="post", color="#0072B2", linewidth=2)
        alive_ax.set_xlabel("round (0: warm-up)")
        alive_ax.set_ylabel("configs alive after the round")
        alive_ax.set_ylim(0, max([doc.space.total, 1]) + 0.5)
        alive_ax.set_xlim(0, max(rounds + [1]))
        alive_ax.yaxis.set_major_locator(ticker.MaxNLocator(integer=True))
        alive_ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
        values_ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
        survivors = [w.config for w in doc.winners]
        colors = config_colors(survivors)
        dropped_at = {d.config: d.round for d in doc.dropped}
        for config, values in doc.values.items():
            points = [(r, v) for r, v in enumerate(values, start=1) if v is not None and v > 0]
            if not points:
                continue
            xs, ys = zip(*points, strict=True)
            if config in colors:
                values_ax.plot(xs, ys, marker="o", markersize=3.5, color=colors[config],
                               label=config, linewidth=1.6)  # fmt: skip
            else:
                values_ax.plot(xs, ys, color=MUTED, alpha=0.45, linewidth=1)
                if dropped_at.get(config, 0) >= 1:
                    values_ax.plot(xs[-1], ys[-1], marker="x", color=MUTED, markersize=6)
        values_ax.set_yscale("log")
        # Plain numbers on the log axis (20,000, not 2 x 10^4): the metric's own units.
        plain = ticker.FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 100 else f"{v:.3g}")
        values_ax.yaxis.set_major_formatter(plain)
        values_ax.yaxis.set_minor_formatter(plain)
        values_ax.set_xlabel("round")
        values_ax.set_ylabel(f"{doc.metric} ({doc.better} is better)")
        if survivors:
            values_ax.legend(loc="best")
        title = f"{doc.workload}: the race of {doc.space.total} configs"
        titles(
            fig,
            title,
            f"{doc.stop or 'not finished'} after {doc.grid_n} rounds · {doc.trials} trials "
            f"against {doc.grid_trials} for a full grid · dropped configs in grey, "
            "x at the round that dropped them",
        )
        paths = save(fig, out_dir, slug(f"race-{doc.run_id}"), formats)
        return Chart("race", title, doc.workload, "", paths, doc.metric, size(fig))
