"""Timelines, a bootchart of any workload: for one trial per config, device MB/s and
utilisation and CPU user/sys/iowait over the timed phase, one panel pair per config."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matplotlib import rc_context, ticker
from matplotlib.artist import Artist
from matplotlib.axes import Axes

from fsbench.reports.charts import figure
from fsbench.reports.charts.figure import Chart, TrialOf
from fsbench.reports.charts.style import INK, MUTED, STYLE, tick
from fsbench.reports.formats import IMAGES
from fsbench.system import numbers

CPU_SERIES = (
    ("cpu_user_pct", "CPU user", "#0072B2"),
    ("cpu_sys_pct", "CPU system", "#D55E00"),
    ("cpu_iowait_pct", "CPU iowait", "#BBBBBB"),
)
READ_COLOR, WRITE_COLOR, UTIL_COLOR = "#009E73", "#CC79A7", INK
MIN_SAMPLES = 3  # a timed phase under ~0.3 s has no timeline worth drawing


@dataclass(frozen=True)
class Timeline(TrialOf):
    """The monitors' samples of one trial (SAMPLE_FIELDS each), with what it was."""

    samples: list[dict[str, float]] = field(default_factory=list)
    trial_id: int | None = None

    def series(self, key: str) -> list[float]:
        """One sampled value over time, from t = 0 (held at its first sample)."""
        first = self.samples[0].get(key, 0.0) if self.samples else 0.0
        return [first] + [s[key] for s in self.samples]

    def times(self) -> list[float]:
        return [0.0] + [s["t"] for s in self.samples]


def _cpu_panel(ax: Axes, tl: Timeline, legend: bool) -> None:
    ts = tl.times()
    base = [0.0] * len(ts)
    for key, name, color in CPU_SERIES:
        top = [b + v for b, v in zip(base, tl.series(key), strict=True)]
        ax.fill_between(
            ts, base, top, step="pre", color=color, linewidth=0, label=name if legend else None
        )
        base = top
    ax.set_ylim(0, 100)
    ax.set_yticks([0, 50, 100])
    ax.set_ylabel("CPU %")
    ax.set_title(
        f"{tl.config}  (rep {tl.rep})", loc="left", fontsize=11, fontweight="bold", color=INK
    )


def _io_panel(ax: Axes, tl: Timeline, mb_top: float, legend: bool) -> Axes:
    """Device read/write MB/s, and utilisation on a second axis (returned)."""
    ts = tl.times()
    for key, name, color in (
        ("write_bps", "device write", WRITE_COLOR),
        ("read_bps", "device read", READ_COLOR),
    ):
        mb = [v / 1e6 for v in tl.series(key)]
        ax.fill_between(
            ts,
            0,
            mb,
            step="pre",
            color=color,
            alpha=0.75,
            linewidth=0,
            label=name if legend else None,
        )
    ax.set_ylim(0, (mb_top or 1.0) * 1.1)
    ax.set_ylabel("MB/s")
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(tick))
    ax_u = ax.twinx()
    ax_u.plot(
        ts,
        tl.series("util_pct"),
        drawstyle="steps-pre",
        color=UTIL_COLOR,
        linewidth=1.2,
        linestyle="--",
        label="device utilisation" if legend else None,
    )
    ax_u.set_ylim(0, 105)
    ax_u.set_yticks([0, 50, 100])
    ax_u.set_ylabel("util %", color=MUTED)
    ax_u.grid(False)
    ax_u.spines["right"].set_visible(True)
    if not tl.samples:
        ax.text(0.5, 0.5, "no samples", transform=ax.transAxes, ha="center", color=MUTED)
    return ax_u


def timeline_figure(
    group: list[Timeline], label: str, out_dir: Path, stem: str, formats: Sequence[str]
) -> Chart:
    n = len(group)
    fig = figure.new_figure(11.0, 1.3 + 2.9 * n)
    axes = fig.subplots(2 * n, 1, sharex=True, height_ratios=[1.0, 1.25] * n)
    t_end = max((s["t"] for tl in group for s in tl.samples), default=1.0)
    mb_top = max(
        (max(s["read_bps"], s["write_bps"]) / 1e6 for tl in group for s in tl.samples),
        default=1.0,
    )
    for i, tl in enumerate(group):
        ax_cpu, ax_io = axes[2 * i], axes[2 * i + 1]
        _cpu_panel(ax_cpu, tl, legend=i == 0)
        ax_u = _io_panel(ax_io, tl, mb_top, legend=i == 0)
        if i == 0:
            handles: list[Artist] = []
            labels: list[str] = []
            for a in (ax_cpu, ax_io, ax_u):
                h, lab = a.get_legend_handles_labels()
                handles += h
                labels += lab
            fig.legend(handles, labels, loc="outside lower center", ncols=6, fontsize=9.5)
    wl = group[0].workload
    booted = wl == "boot"  # sampled on the host while QEMU boots the guest
    axes[-1].set_xlim(0, t_end)
    axes[-1].set_xlabel(
        "seconds since QEMU started" if booted else "seconds since the timed phase started"
    )
    reps = {tl.rep for tl in group}
    which = f"rep {reps.pop()} of each config" if len(reps) == 1 else "first rep of each config"
    where = figure.wl_title(wl, group[0].chain) + (f", {label}" if label else "")
    title = f"{where}: device and CPU over time"
    figure.titles(
        fig,
        title,
        figure.subtitle(
            which,
            "10 Hz samples" + (" up to the boot marker" if booted else ""),
            "CPU of the host running QEMU" if booted else "CPU of the whole machine",
            "device = the host disk under the guest's root"
            if booted
            else "device = the test target",
        ),
    )
    paths = figure.save(fig, out_dir, stem, formats)
    return Chart("timeline", title, wl, group[0].chain, paths, None, figure.size(fig))


def timeline_chart_set(
    timelines: Sequence[Timeline], out_dir: Path, formats: Sequence[str] = IMAGES
) -> list[Chart]:
    """One figure per cell (workload x params x knobs), one panel pair per config."""
    name = figure.Namer()
    groups: dict[tuple[str, str, str], list[Timeline]] = {}
    for tl in timelines:
        if tl.samples:
            key = (tl.chain, tl.workload, json.dumps(tl.dims(), sort_keys=True, default=str))
            groups.setdefault(key, []).append(tl)
    charts = []
    with rc_context(STYLE):
        for (chain, wl, _), group in groups.items():
            # A cell is drawn when one of its configs ran long enough to have a timeline.
            if max(len(t.samples) for t in group) < MIN_SAMPLES:
                continue
            peers = [tl for (c, w, _k), g in groups.items() if (c, w) == (chain, wl) for tl in g]
            names = list(dict.fromkeys(k for tl in peers for k in tl.dims()))
            varying = [k for k in names if len({repr(tl.dims().get(k)) for tl in peers}) > 1]
            label = " ".join(f"{k}={numbers.setting(group[0].dims().get(k))}" for k in varying)
            stem = name("timeline", chain, wl, label)
            charts.append(timeline_figure(group, label, out_dir, stem, formats))
    return charts


def timeline_charts(
    timelines: Sequence[Timeline], out_dir: Path, formats: Sequence[str] = IMAGES
) -> list[Path]:
    """A bootchart per cell: device MB/s and utilisation, CPU user/sys/iowait."""
    return figure.paths_of(timeline_chart_set(timelines, out_dir, formats))


def _cell(t: Any) -> tuple[str, str, str, str]:
    return (
        t.config,
        t.chain,
        t.workload,
        json.dumps({**t.params, **t.knobs}, sort_keys=True, default=str),
    )


def first_rep_timelines(
    trials: Sequence[Any], samples: Callable[[int], list[dict[str, float]]]
) -> list[Timeline]:
    """The first counted repetition with samples of every cell (TrialRecords, in schedule
    order; the warm-up, rep 0, is not what the tables show); `samples(trial_id)` reads a
    timeline (Store.get_samples)."""
    chosen: dict[tuple[str, str, str, str], Timeline] = {}
    for t in sorted(trials, key=lambda t: (t.rep, t.seq, t.step)):
        if t.rep == 0 or t.status != "ok" or t.id is None or _cell(t) in chosen:
            continue
        data = samples(t.id)
        if data:
            chosen[_cell(t)] = Timeline(
                t.config, t.chain, t.workload, t.params, t.knobs, t.rep, data, t.id
            )
    # Back in plan order: first appearance of each cell in the schedule.
    order: dict[tuple[str, str, str, str], int] = {}
    for t in sorted(trials, key=lambda t: (t.seq, t.step)):
        order.setdefault(_cell(t), len(order))
    return [chosen[k] for k in sorted(chosen, key=lambda k: order[k])]
