"""Per-second series over time (`series` in a trial's provenance: fio's bandwidth and
latency percentiles, the engine's ops/s, pgbench's TPS...): for every cell (workload x
params x knobs) with series, one figure with one line colour per config:

- throughput: the series whose steady state the runner judged (else every higher-is-
  better series, a panel each), every counted repetition's raw seconds thin and faint,
  and a bold 5 s rolling mean of the repetitions' mean; a ▼ at the top of the panel
  where each repetition's steady state began, and per config in the legend how many
  reached it (fio's ss= rule, steady.py);
- latency: each family of percentiles (`write_clat_p50_us`, `write_clat_p99_us`) on a
  log axis, drawn the same way, one dash per percentile.

Repetitions are overlaid rather than averaged into a mean and a band: they are
independent runs whose stalls (a writeback storm, a checkpoint) come at different
seconds, so a band would smear each stall into a shallow dip and a wide band; the faint
lines keep every stall visible and the bold rolling mean gives the level to compare.
Warm-up repetitions (rep 0) are left out, as the tables leave them out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matplotlib import rc_context, ticker
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from fsbench.reports.charts.figure import (
    Chart,
    Namer,
    TrialOf,
    new_figure,
    paths_of,
    save,
    size,
    subtitle,
    titles,
    wl_title,
)
from fsbench.reports.charts.style import MUTED, PALETTE, STYLE, config_colors, tick
from fsbench.reports.formats import IMAGES
from fsbench.store import trialfacts
from fsbench.system import numbers

ROLLING_S = 5  # seconds in the rolling mean (centred)
MIN_POINTS = 3  # a cell is drawn when one of its series has this many seconds
_PCT_RE = re.compile(r"^(?P<head>.*?)_?(?P<pct>p\d+(?:_\d+)?)(?P<tail>_[a-z]+)?$")
# Dashes of the percentiles of one family: the median dashed, the tail solid.
_DASHES: dict[str, Any] = {"p50": (0, (4, 2)), "p95": (0, (6, 1.5, 1, 1.5)), "p99": "-"}
_FAINT = 0.28


@dataclass(frozen=True)
class TrialSeries(TrialOf):
    """The per-second series of one counted trial, with what it was."""

    series: dict[str, dict[str, Any]]  # name -> {unit, better, t, v}
    steady: dict[str, Any] | None = None  # the runner's verdict (provenance "steady")
    trial_id: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def points(self, name: str) -> tuple[list[float], list[float]]:
        s = self.series.get(name) or {}
        t, v = list(s.get("t") or []), list(s.get("v") or [])
        n = min(len(t), len(v))
        return [float(x) for x in t[:n]], [float(y) for y in v[:n]]


def trial_series(trials: Sequence[Any]) -> list[TrialSeries]:
    """Every counted (not warm-up) ok trial with series, in schedule order (TrialRecords;
    the trials of a run on many machines carry their host, shown beside the config)."""
    out = []
    for t in sorted(trials, key=lambda t: (t.seq, t.step)):
        series = trialfacts.series(t.provenance)
        if t.rep == 0 or t.status != "ok" or not isinstance(series, dict) or not series:
            continue
        host = getattr(t, "host", "")
        out.append(
            TrialSeries(
                f"{t.config} @ {host}" if host else t.config,
                t.chain,
                t.workload,
                dict(t.params),
                dict(t.knobs),
                t.rep,
                series,
                trialfacts.steady(t.provenance),
                t.id,
            )
        )
    return out


def rolling_mean(values: Sequence[float], window: int = ROLLING_S) -> list[float]:
    """A centred rolling mean over `window` points (fewer at the ends)."""
    half = window // 2
    out = []
    for i in range(len(values)):
        part = values[max(0, i - half) : i + half + 1]
        out.append(sum(part) / len(part))
    return out


def mean_by_second(
    runs: Sequence[tuple[list[float], list[float]]],
) -> tuple[list[float], list[float]]:
    """The repetitions' mean at every second any of them has."""
    acc: dict[float, list[float]] = {}
    for ts, vs in runs:
        for t, v in zip(ts, vs, strict=True):
            acc.setdefault(t, []).append(v)
    seconds = sorted(acc)
    return seconds, [sum(acc[t]) / len(acc[t]) for t in seconds]


def _family(name: str) -> tuple[str, str]:
    """('write_clat_us', 'p99') of 'write_clat_p99_us'; a name without a percentile is
    its own family."""
    m = _PCT_RE.match(name)
    if not m:
        return name, ""
    return m.group("head") + (m.group("tail") or ""), m.group("pct")


@dataclass
class _Panel:
    title: str
    names: list[str]  # the series drawn, in order
    unit: str
    log: bool
    steady: bool = False  # the steady series: mark where steady state began


def _panels(group: Sequence[TrialSeries]) -> list[_Panel]:
    names = list(dict.fromkeys(n for ts in group for n in ts.series))
    meta = {n: next(ts.series[n] for ts in group if n in ts.series) for n in names}
    steady = next((ts.steady["series"] for ts in group if ts.steady), None)
    higher = [n for n in names if meta[n].get("better") != "lower"]
    lower = [n for n in names if meta[n].get("better") == "lower"]
    out: list[_Panel] = []
    if steady in higher:
        out.append(_Panel(steady, [steady], str(meta[steady].get("unit", "")), False, True))
    else:
        out += [_Panel(n, [n], str(meta[n].get("unit", "")), False) for n in higher]
    families: dict[str, list[str]] = {}
    for n in lower:
        families.setdefault(_family(n)[0], []).append(n)
    for fam, members in families.items():
        pcts = [_family(n)[1] for n in members]
        title = f"{fam}: {', '.join(p for p in pcts if p)}" if any(pcts) else fam
        unit = str(meta[members[0]].get("unit", ""))
        out.append(_Panel(title, members, unit, True))
    return out


def _steady_label(config: str, runs: Sequence[TrialSeries]) -> str:
    verdicts = [ts.steady for ts in runs if ts.steady]
    if not verdicts:
        return config
    judged = [v for v in verdicts if v.get("judged", True)]
    if not judged:
        return f"{config}: too short to judge steady state"
    reached = [v for v in judged if v.get("reached")]
    if not reached:
        return f"{config}: never steady ({len(judged)} reps)"
    lo, hi = min(float(v["start_s"]) for v in reached), max(float(v["start_s"]) for v in reached)
    when = f"{lo:g}" if lo == hi else f"{lo:g}-{hi:g}"
    return f"{config}: steady from {when} s ({len(reached)}/{len(verdicts)} reps)"


def _draw_panel(
    ax: Axes, panel: _Panel, by_config: dict[str, list[TrialSeries]], colors: dict[str, str]
) -> None:
    top = 0.0
    for row, (config, runs) in enumerate(by_config.items()):
        color = colors[config]
        for name in panel.names:
            dash = _DASHES.get(_family(name)[1], "-") if panel.log else "-"
            raw = [ts.points(name) for ts in runs if name in ts.series]
            raw = [(t, v) for t, v in raw if t]
            for t, v in raw:
                few = len(t) < MIN_POINTS
                ax.plot(
                    t,
                    v,
                    color=color,
                    linewidth=0.8,
                    linestyle=dash,
                    alpha=_FAINT if len(raw) > 1 or not few else 0.6,
                    marker="o" if few else None,
                    markersize=3,
                    zorder=2,
                )
                top = max([top, *v])
            if raw:
                ts_, mean = mean_by_second(raw)
                ax.plot(
                    ts_, rolling_mean(mean), color=color, linewidth=2.0, linestyle=dash, zorder=3
                )
        if panel.steady:
            for ts in runs:
                verdict = ts.steady or {}
                if verdict.get("reached") and verdict.get("start_s") is not None:
                    ax.plot(
                        [float(verdict["start_s"])],
                        [0.95 - 0.06 * row],  # a row of marks per config, at the top
                        marker="v",
                        markersize=8,
                        color=color,
                        transform=ax.get_xaxis_transform(),
                        clip_on=False,
                        zorder=4,
                    )
    if panel.log:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(tick))
    else:  # room above the lines for the steady-state marks, a row per config
        room = 1.12 + (0.08 * len(by_config) if panel.steady else 0.0)
        ax.set_ylim(0, (top or 1.0) * room)
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(tick))
    ax.set_ylabel("µs" if panel.unit == "us" else panel.unit)
    ax.set_title(panel.title, loc="left", fontsize=10.5, fontweight="bold")


def draw_series(group: list[TrialSeries], label: str, colors: dict[str, str]) -> tuple[Figure, str]:
    """One cell's figure (a panel per throughput series or latency family) and title."""
    panels = _panels(group)
    by_config: dict[str, list[TrialSeries]] = {}
    for ts in group:
        by_config.setdefault(ts.config, []).append(ts)
    fig = new_figure(11.0, 1.9 + 2.9 * len(panels))
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    for ax, panel in zip(axes, panels, strict=True):
        _draw_panel(ax, panel, by_config, colors)
    axes[0].set_xlim(left=0)
    axes[-1].xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    axes[-1].set_xlabel("seconds since measuring started (after any warm-up)")
    handles = [
        Line2D([], [], color=colors[c], linewidth=2.0, label=_steady_label(c, runs))
        for c, runs in by_config.items()
    ]
    pcts = list(dict.fromkeys(_family(n)[1] for p in panels if p.log for n in p.names))
    handles += [
        Line2D([], [], color=MUTED, linewidth=1.4, linestyle=_DASHES.get(p, "-"), label=p)
        for p in pcts
        if p
    ]
    if any(p.steady for p in panels):
        handles.append(
            Line2D([], [], color=MUTED, marker="v", linestyle="", label="steady state began")
        )
    fig.legend(handles=handles, loc="outside lower center", ncols=min(3, len(handles)))
    reps = sorted({ts.rep for ts in group})
    rule = next((ts.steady.get("rule") for ts in group if ts.steady), None)
    title = (
        f"{wl_title(group[0].workload, group[0].chain)}{f', {label}' if label else ''}: per second"
    )
    titles(
        fig,
        title,
        subtitle(
            f"faint: each counted repetition ({len(reps)}; warm-up left out)",
            f"bold: {ROLLING_S} s rolling mean of their mean",
            f"▼ steady state by fio's ss= rule ({rule})" if rule else "",
            "latency on a log axis" if any(p.log for p in panels) else "",
        ),
    )
    return fig, title


def series_chart_set(
    trials: Sequence[TrialSeries],
    out_dir: Path,
    formats: Sequence[str] = IMAGES,
    colors: dict[str, str] | None = None,
) -> list[Chart]:
    """One figure per cell with series (workload x params x knobs), a colour per config."""
    colors = dict(colors or config_colors([ts.config for ts in trials]))
    for ts in trials:  # `config @ host` labels (many machines) get colours of their own
        colors.setdefault(ts.config, PALETTE[len(colors) % len(PALETTE)])
    name = Namer()
    groups: dict[tuple[str, str, str], list[TrialSeries]] = {}
    for ts in trials:
        key = (ts.chain, ts.workload, json.dumps(ts.dims(), sort_keys=True, default=str))
        groups.setdefault(key, []).append(ts)
    charts = []
    with rc_context(STYLE):
        for (chain, wl, _), group in groups.items():
            longest = max(len(ts.points(n)[0]) for ts in group for n in ts.series)
            if longest < MIN_POINTS:
                continue
            peers = [ts for (c, w, _k), g in groups.items() if (c, w) == (chain, wl) for ts in g]
            names = list(dict.fromkeys(k for ts in peers for k in ts.dims()))
            varying = [k for k in names if len({repr(ts.dims().get(k)) for ts in peers}) > 1]
            label = " ".join(f"{k}={numbers.setting(group[0].dims().get(k))}" for k in varying)
            fig, title = draw_series(group, label, colors)
            paths = save(fig, out_dir, name("series", chain, wl, label), formats)
            charts.append(Chart("series", title, wl, chain, paths, None, size(fig)))
    return charts


def series_charts(
    trials: Sequence[TrialSeries], out_dir: Path, formats: Sequence[str] = IMAGES
) -> list[Path]:
    """Per cell: throughput and latency percentiles per second, every config."""
    return paths_of(series_chart_set(trials, out_dir, formats))
