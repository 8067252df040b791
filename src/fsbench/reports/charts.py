"""Charts as files: pure functions from report rows (and trial timelines) to PNG and SVG.

- `bar_charts`: per workload and headline metric, every config with its 95% CI; one
  group of bars per swept value when there is a sweep; horizontal when labels are long.
- `line_charts`: for a sweep of a numeric parameter (clients, threads, copies...), the
  metric against the parameter, one line per config with its CI band.
- `layout_charts`: time and on-disk layout side by side (alloc: seconds | fragments and
  extents), one figure, two panels.
- `timeline_charts`: a bootchart of one trial per config (device MB/s, utilisation, CPU
  user/sys/iowait over the timed phase), one panel pair per config.

Every function takes its data and an output directory and returns the paths it wrote.
matplotlib is used through `Figure` objects on the Agg canvas: no pyplot, no global state.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

from matplotlib import rc_context, ticker  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.layout_engine import ConstrainedLayoutEngine  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from fsbench import workloads  # noqa: E402
from fsbench.reports.ranking import rank_rows  # noqa: E402
from fsbench.reports.rows import Row  # noqa: E402
from fsbench.reports.tables import dims_of, params_label, split_dims  # noqa: E402

FORMATS = ("png", "svg")

# Okabe-Ito, colour-blind safe, then a few more distinct ones.
PALETTE = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#56B4E9",
    "#882255",
    "#999933",
    "#44AA99",
    "#332288",
    "#AA4499",
    "#666666",
)
INK = "#222222"
MUTED = "#666666"

STYLE: Any = {  # matplotlib rcParams
    "font.family": "DejaVu Sans",
    "font.size": 10.5,
    "axes.titlesize": 10,
    "axes.labelsize": 10.5,
    "axes.labelcolor": INK,
    "axes.edgecolor": "#9a9a9a",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.color": "#e6e6e6",
    "grid.linewidth": 0.8,
    "xtick.color": INK,
    "ytick.color": INK,
    "legend.frameon": False,
    "legend.fontsize": 9.5,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "savefig.dpi": 150,
    "svg.fonttype": "path",  # text as paths: the SVG looks the same everywhere
    "svg.hashsalt": "fsbench",  # stable element ids: the same data gives the same file
}

LONG_LABEL = 14  # characters: longer tick labels turn bar charts horizontal


@dataclass(frozen=True)
class Chart:
    """One figure written in every requested format."""

    kind: str  # bar | line | layout | timeline
    title: str
    workload: str
    chain: str
    paths: tuple[Path, ...]
    metric: str | None = None
    size: tuple[float, float] = (8.0, 4.5)  # inches: a page lays it out by its width

    def path(self, fmt: str) -> Path | None:
        return next((p for p in self.paths if p.suffix == f".{fmt}"), None)


@dataclass(frozen=True)
class Timeline:
    """The monitors' samples of one trial (SAMPLE_FIELDS each), with what it was."""

    config: str
    chain: str
    workload: str
    params: dict[str, Any]
    knobs: dict[str, str]
    rep: int
    samples: list[dict[str, float]] = field(default_factory=list)
    trial_id: int | None = None

    def dims(self) -> dict[str, Any]:
        return {**self.params, **self.knobs}


# --- helpers ------------------------------------------------------------------------------


def slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s[:60] or "chart"


class _Namer:
    def __init__(self) -> None:
        self.used: set[str] = set()

    def __call__(self, *parts: str) -> str:
        base = "-".join(slug(p) for p in parts if p)
        name, i = base, 2
        while name in self.used:
            name, i = f"{base}-{i}", i + 1
        self.used.add(name)
        return name


def _size(fig: Figure) -> tuple[float, float]:
    return float(fig.get_figwidth()), float(fig.get_figheight())


def _save(fig: Figure, out_dir: Path, stem: str, formats: Sequence[str]) -> tuple[Path, ...]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        path = out_dir / f"{stem}.{fmt}"
        # No date (same data, same file) and no RDF block (no foreign namespaces).
        metadata: dict[str, Any] = (
            dict.fromkeys(("Creator", "Date", "Format", "Type")) if fmt == "svg" else {}
        )
        fig.savefig(path, format=fmt, metadata=metadata)
        paths.append(path)
    return tuple(paths)


def config_colors(configs: Sequence[str]) -> dict[str, str]:
    """One colour per config, the same in every chart of a report."""
    return {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(dict.fromkeys(configs))}


def headline_metrics(workload: str, names: Sequence[str]) -> list[str]:
    try:
        wanted = [m for m in workloads.get(workload).headline if m in names]
    except KeyError:
        wanted = []
    return wanted or list(names)


def _scale(unit: str | None, values: Sequence[float]) -> tuple[float, str]:
    """A divisor and the unit shown: bytes in MiB/GiB, the rest as stored."""
    if unit == "B":
        top = max((abs(v) for v in values), default=0.0)
        for name, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if top >= factor:
                return float(factor), name
        return 1.0, "bytes"
    return 1.0, unit or ""


def axis_label(metric: str, unit: str) -> str:
    """The metric as the tables name it, with its unit: 'mb_per_s (MB/s)'."""
    return f"{metric} ({unit})" if unit and unit != metric else metric


def better_text(better: str | None) -> str:
    return {"lower": "lower is better", "higher": "higher is better"}.get(better or "", "")


def _subtitle(*parts: str) -> str:
    return " · ".join(p for p in parts if p)


def _new_figure(width: float, height: float) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def _titles(fig: Figure, title: str, subtitle: str) -> None:
    """A bold title and a quieter, wrapped subtitle in a band above the layout."""
    height = fig.get_figheight()
    lines = textwrap.wrap(subtitle, int(fig.get_figwidth() * 12.5)) if subtitle else []
    top_pad, title_h, line_h = 0.12, 13 * 1.35 / 72, 9.5 * 1.3 / 72
    band = top_pad + title_h + len(lines) * line_h + 0.12
    engine = fig.get_layout_engine()
    if isinstance(engine, ConstrainedLayoutEngine):
        engine.set(rect=(0, 0, 1, 1 - band / height))
    y = 1 - top_pad / height
    fig.text(0.012, y, title, ha="left", va="top", fontsize=13, fontweight="bold", color=INK)
    if lines:
        fig.text(
            0.012,
            y - title_h / height,
            "\n".join(lines),
            ha="left",
            va="top",
            fontsize=9.5,
            color=MUTED,
            linespacing=1.3,
        )


def _ok(row: Row | None) -> bool:
    return row is not None and row.status == "ok" and row.mean is not None


def _err(row: Row) -> tuple[float, float]:
    assert row.mean is not None
    if not row.ci95:
        return 0.0, 0.0
    return max(0.0, row.mean - row.ci95[0]), max(0.0, row.ci95[1] - row.mean)


def _wants_log(values: Sequence[float]) -> bool:
    pos = [v for v in values if v > 0]
    return len(pos) == len(values) and len(pos) >= 2 and max(pos) / min(pos) >= 100


def _workload_groups(rows: Sequence[Row]) -> list[tuple[str, str, list[Row]]]:
    keys = dict.fromkeys((r.chain, r.workload) for r in rows)
    return [
        (chain, wl, [r for r in rows if r.chain == chain and r.workload == wl])
        for chain, wl in keys
    ]


def _wl_title(workload: str, chain: str) -> str:
    return f"{workload} (step of {chain.replace('+', ' → ')})" if chain else workload


def _constant_text(rows: Sequence[Row], constant: list[str]) -> str:
    if not rows:
        return ""
    d = dims_of(rows[0])
    return " ".join(f"{n}={d.get(n)}" for n in constant)


def _n_text(rows: Sequence[Row]) -> str:
    ns = sorted({r.n for r in rows if r.n})
    if not ns:
        return ""
    return f"n = {ns[0]}" if len(ns) == 1 else f"n = {ns[0]}-{ns[-1]}"


# --- bars ---------------------------------------------------------------------------------


@dataclass
class _Bars:
    groups: list[str]  # one per swept combination ("" when nothing is swept)
    configs: list[str]
    cell: Callable[[str, str], Row | None]  # (group, config) -> row


def _draw_bars(
    ax: Axes,
    bars: _Bars,
    colors: dict[str, str],
    horizontal: bool,
    factor: float,
    mark_best: bool = True,
    log: bool | None = None,
) -> bool:
    """Grouped bars with CI whiskers; unsupported/failed cells written where the bar would
    be; a star on significant winners. Returns whether a star was drawn."""
    n_cfg = len(bars.configs)
    single = bars.groups == [""]
    width = 0.8 if single else 0.8 / n_cfg
    means = [
        r.mean / factor
        for g in bars.groups
        for c in bars.configs
        if (r := bars.cell(g, c)) is not None and _ok(r) and r.mean is not None
    ]
    if log is None:
        log = _wants_log(means)
    top = max((abs(m) for m in means), default=1.0) or 1.0
    reach = top  # the farthest whisker
    starred = False
    for gi, group in enumerate(bars.groups):
        labelled = [(c, bars.cell(group, c)) for c in bars.configs]
        verdict = rank_rows([(c, r if _ok(r) else None) for c, r in labelled])
        winner = verdict.best if verdict and verdict.significant and mark_best else None
        for ci, (config, row) in enumerate(labelled):
            pos = ci if single else gi + (ci - (n_cfg - 1) / 2) * width
            label = None  # the legend is built from `colors` (see _config_legend)
            if row is None:
                continue
            if not _ok(row):
                text = row.status if row.status != "ok" else "no data"
                base = 1.0 if log else 0.0
                if horizontal:
                    ax.text(
                        base,
                        pos,
                        f"  {text}",
                        va="center",
                        ha="left",
                        fontsize=8.5,
                        color=MUTED,
                        style="italic",
                    )
                else:
                    ax.text(
                        pos,
                        base,
                        f" {text}",
                        va="bottom",
                        ha="center",
                        rotation=90,
                        fontsize=8.5,
                        color=MUTED,
                        style="italic",
                    )
                continue
            assert row.mean is not None
            mean = row.mean / factor
            lo, hi = (e / factor for e in _err(row))
            if log:
                lo = min(lo, mean * 0.999)  # a whisker below zero cannot be drawn on log
            reach = max(reach, mean + hi)
            color = colors[config]
            kw: dict[str, Any] = {
                "color": color,
                "edgecolor": "white",
                "linewidth": 0.6,
                "label": label,
                "zorder": 2,
            }
            err_kw = {"ecolor": INK, "elinewidth": 1.1, "capsize": 3, "capthick": 1.1}
            if horizontal:
                ax.barh(pos, mean, height=width, xerr=[[lo], [hi]], error_kw=err_kw, **kw)
            else:
                ax.bar(pos, mean, width=width, yerr=[[lo], [hi]], error_kw=err_kw, **kw)
            if config == winner:
                starred = True
                end = mean + hi
                offset = end * 0.12 if log else top * 0.02
                if horizontal:
                    ax.text(end + offset, pos, "★", va="center", ha="left", fontsize=11, color=INK)
                else:
                    ax.text(
                        pos, end + offset, "★", va="bottom", ha="center", fontsize=11, color=INK
                    )
    ticks = list(range(n_cfg)) if single else list(range(len(bars.groups)))
    labels = bars.configs if single else bars.groups
    value_axis = ax.xaxis if horizontal else ax.yaxis
    if horizontal:
        ax.set_yticks(ticks, [_wrap(x) for x in labels])
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
    value_axis.set_major_formatter(ticker.FuncFormatter(_tick))
    if log:
        value_axis.set_minor_formatter(ticker.NullFormatter())
        (ax.set_xlim if horizontal else ax.set_ylim)(0.5, reach * 2.5)
    return starred


def _wrap(label: str, width: int = 20) -> str:
    """'method=write-4k vm.dirty_ratio=20' on two lines: tick labels stay narrow. Breaks
    after spaces and after the commas of mount options, mid-word only when nothing else
    fits ('ext4 data=writeback,' / 'journal_async_commit')."""
    if len(label) <= width:
        return label
    lines: list[str] = []
    current = ""
    for token in re.split(r"(?<=[ ,])", label):
        if current and len(current + token) > width:
            lines.append(current.rstrip())
            current = token
        else:
            current += token
    lines.append(current.rstrip())
    return "\n".join(part for line in lines for part in (textwrap.wrap(line, width) or [""]))


def _label_lines(labels: Sequence[str]) -> int:
    return max((_wrap(x).count("\n") + 1 for x in labels), default=1)


def _config_legend(
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


def _tick(x: float, _pos: int) -> str:
    if x == 0:
        return "0"
    if abs(x) >= 10000:
        return f"{x:,.0f}"
    return f"{x:g}"


def _bars_for(rows: list[Row], metric: str) -> tuple[_Bars, list[str], list[str]]:
    mrows = [r for r in rows if r.metric == metric]
    varying, constant = split_dims(rows)
    configs = list(dict.fromkeys(r.config for r in rows))
    index: dict[tuple[str, str], Row] = {}
    for r in rows:
        group = params_label(dims_of(r), varying) if varying else ""
        if r.metric == metric:
            index[(group, r.config)] = r
        elif r.metric is None:
            index.setdefault((group, r.config), r)
    groups = list(dict.fromkeys(g for g, _ in index)) if varying else [""]
    del mrows
    return _Bars(groups, configs, lambda g, c: index.get((g, c))), varying, constant


def _bar_chart(
    rows: list[Row],
    metric: str,
    colors: dict[str, str],
    out_dir: Path,
    stem: str,
    formats: Sequence[str],
) -> Chart | None:
    sample = next((r for r in rows if r.metric == metric), None)
    if sample is None:
        return None
    bars, varying, constant = _bars_for(rows, metric)
    values = [r.mean for r in rows if r.metric == metric and r.mean is not None]
    factor, unit = _scale(sample.unit, values)
    single = bars.groups == [""]
    labels = bars.configs if single else bars.groups
    n_bars = len(bars.configs) * len(bars.groups)
    horizontal = max((len(x) for x in labels), default=0) > LONG_LABEL or n_bars > 24
    if horizontal:
        # A row is as tall as its tallest wrapped label, or labels run into each other.
        row = max(0.3, 0.17 * _label_lines(labels) + 0.08) if single else 0.3
        fig = _new_figure(7.2, 1.8 + row * n_bars + 0.25 * len(bars.groups))
    else:
        fig = _new_figure(max(6.4, min(11.5, 2.8 + 0.3 * n_bars + 0.25 * len(bars.groups))), 4.4)
    ax = fig.add_subplot()
    starred = _draw_bars(ax, bars, colors, horizontal, factor)
    label = axis_label(metric, unit)
    if horizontal:
        ax.set_xlabel(label)
    else:
        ax.set_ylabel(label)
    if not single:
        if len(varying) == 1:  # else the group labels name their parameters
            (ax.set_ylabel if horizontal else ax.set_xlabel)(varying[0])
        _config_legend(ax, bars.configs, colors, below=horizontal)
    wl = sample.workload
    title = f"{_wl_title(wl, sample.chain)}: {metric}"
    subtitle = _subtitle(
        better_text(sample.better),
        "mean with 95% CI",
        _n_text([r for r in rows if r.metric == metric]),
        _constant_text(rows, constant),
        "★ best (Welch p < 0.05, Holm)" if starred else "",
    )
    _titles(fig, title, subtitle)
    paths = _save(fig, out_dir, stem, formats)
    return Chart("bar", title, wl, sample.chain, paths, metric, _size(fig))


# --- lines --------------------------------------------------------------------------------


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def numeric_sweep(rows: Sequence[Row]) -> str | None:
    """The first swept parameter whose values are all numbers, if any."""
    varying, _ = split_dims(list(rows))
    for name in varying:
        values = [dims_of(r).get(name) for r in rows]
        if _numeric(values) and len(set(values)) >= 2:
            return name
    return None


def _line_chart(
    rows: list[Row],
    metric: str,
    param: str,
    colors: dict[str, str],
    out_dir: Path,
    stem: str,
    formats: Sequence[str],
) -> Chart | None:
    mrows = [r for r in rows if r.metric == metric and _ok(r)]
    if not mrows:
        return None
    sample = mrows[0]
    varying, constant = split_dims(rows)
    others = [v for v in varying if v != param]
    values = [r.mean for r in mrows if r.mean is not None]
    factor, unit = _scale(sample.unit, values)
    # Other swept dimensions (a knob...) make small multiples, one panel each, same y axis.
    panels = list(
        dict.fromkeys(
            " ".join(f"{n}={dims_of(r).get(n)}" for n in others) if others else "" for r in mrows
        )
    )
    n = len(panels)
    fig = _new_figure(7.2 if n == 1 else min(13.0, 1.8 + 4.0 * n), 4.6)
    axes = fig.subplots(1, n, sharey=True, squeeze=False)[0]
    xs_all = sorted({float(dims_of(r)[param]) for r in mrows})
    for ax, panel in zip(axes, panels, strict=True):
        prows = [
            r
            for r in mrows
            if not others or " ".join(f"{k}={dims_of(r).get(k)}" for k in others) == panel
        ]
        for config in dict.fromkeys(r.config for r in prows):
            srows = sorted(
                (r for r in prows if r.config == config), key=lambda r: float(dims_of(r)[param])
            )
            xs = [float(dims_of(r)[param]) for r in srows]
            ys = [(r.mean or 0.0) / factor for r in srows]
            lo = [((r.ci95[0] if r.ci95 else r.mean) or 0.0) / factor for r in srows]
            hi = [((r.ci95[1] if r.ci95 else r.mean) or 0.0) / factor for r in srows]
            if all(y >= 0 for y in ys):  # a rate or a time is never negative
                lo = [max(0.0, v) for v in lo]
            color = colors[config]
            ax.fill_between(xs, lo, hi, color=color, alpha=0.15, linewidth=0, zorder=1)
            ax.plot(xs, ys, "-", color=color, marker="o", markersize=5, linewidth=2, zorder=3)
        if xs_all and xs_all[0] > 0 and xs_all[-1] / xs_all[0] >= 8:
            ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(ticker.FixedLocator(xs_all))
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda x, _p: f"{x:g}"))
        ax.xaxis.set_minor_locator(ticker.NullLocator())
        ax.set_xlabel(param)
        if panel:
            ax.set_title(panel, loc="left", fontsize=10.5, color=INK)
    axes[0].set_ylabel(axis_label(metric, unit))
    axes[0].yaxis.set_major_formatter(ticker.FuncFormatter(_tick))
    if all((r.mean or 0.0) >= 0 for r in mrows):
        axes[0].set_ylim(bottom=0)
    handles = [
        Line2D([], [], color=colors[c], marker="o", linewidth=2, label=c)
        for c in dict.fromkeys(r.config for r in mrows)
    ]
    axes[-1].legend(
        handles=handles,
        title="config",
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        borderaxespad=0.5,
    )
    title = f"{_wl_title(sample.workload, sample.chain)}: {metric} by {param}"
    subtitle = _subtitle(
        better_text(sample.better),
        "mean, band = 95% CI",
        _n_text(mrows),
        _constant_text(rows, constant),
    )
    _titles(fig, title, subtitle)
    paths = _save(fig, out_dir, stem, formats)
    return Chart("line", title, sample.workload, sample.chain, paths, metric, _size(fig))


# --- time and layout side by side -----------------------------------------------------------

LAYOUT_METRICS = ("seconds", "fragments", "extents")


def _layout_chart(
    rows: list[Row], colors: dict[str, str], out_dir: Path, stem: str, formats: Sequence[str]
) -> Chart | None:
    names = {r.metric for r in rows}
    if not {"seconds", "fragments"} <= names:
        return None
    time_bars, varying, constant = _bars_for(rows, "seconds")
    frag_bars, _, _ = _bars_for(rows, "fragments")
    ext_bars, _, _ = _bars_for(rows, "extents") if "extents" in names else (None, [], [])
    n_bars = len(time_bars.configs) * len(time_bars.groups)
    fig = _new_figure(12.0, 2.0 + 0.34 * n_bars + 0.2 * len(time_bars.groups))
    ax_t, ax_f = fig.subplots(1, 2, sharey=True)
    starred = _draw_bars(ax_t, time_bars, colors, True, 1.0)
    counts = [
        r.mean
        for r in rows
        if r.metric in ("fragments", "extents") and r.mean is not None and _ok(r)
    ]
    log = bool(counts) and min(counts) > 0 and max(counts) / min(counts) >= 10
    starred |= _draw_bars(ax_f, frag_bars, colors, True, 1.0, log=log)
    ax_t.set_xlabel("time to disk, sync + umount included (s)")
    ax_f.set_xlabel(
        ("fragments (count; ◆ = extents)" if ext_bars else "fragments (count)")
        + (", log scale" if log else "")
    )
    ax_t.set_title("time (lower is better)", loc="left", fontsize=10.5, color=INK)
    ax_f.set_title("layout after remount (lower is better)", loc="left", fontsize=10.5, color=INK)
    if ext_bars is not None:
        _draw_markers(ax_f, ext_bars)
    single = time_bars.groups == [""]
    if not single:
        if len(varying) == 1:
            ax_t.set_ylabel(varying[0])
        _config_legend(ax_f, time_bars.configs, colors)
    ax_f.tick_params(axis="y", left=False)
    sample = next(r for r in rows if r.metric == "seconds")
    title = f"{_wl_title(sample.workload, sample.chain)}: time and on-disk layout"
    subtitle = _subtitle(
        "mean with 95% CI",
        _n_text([r for r in rows if r.metric == "seconds"]),
        _constant_text(rows, constant),
        "★ best (Welch p < 0.05, Holm)" if starred else "",
    )
    _titles(fig, title, subtitle)
    paths = _save(fig, out_dir, stem, formats)
    return Chart("layout", title, sample.workload, sample.chain, paths, "fragments", _size(fig))


def _draw_markers(ax: Axes, bars: _Bars) -> None:
    """Extents as diamonds over the fragment bars (same positions)."""
    n_cfg = len(bars.configs)
    single = bars.groups == [""]
    width = 0.8 if single else 0.8 / n_cfg
    xs, ys = [], []
    for gi, group in enumerate(bars.groups):
        for ci, config in enumerate(bars.configs):
            row = bars.cell(group, config)
            if row is None or not _ok(row) or row.mean is None:
                continue
            ys.append(ci if single else gi + (ci - (n_cfg - 1) / 2) * width)
            xs.append(row.mean)
    if xs:
        ax.scatter(xs, ys, marker="D", s=22, color=INK, zorder=4, label="_extents")
        scale = 2.5 if ax.get_xscale() == "log" else 1.1
        ax.set_xlim(right=max(ax.get_xlim()[1], max(xs) * scale))


# --- timelines ------------------------------------------------------------------------------

CPU_SERIES = (
    ("cpu_user_pct", "CPU user", "#0072B2"),
    ("cpu_sys_pct", "CPU system", "#D55E00"),
    ("cpu_iowait_pct", "CPU iowait", "#BBBBBB"),
)
READ_COLOR, WRITE_COLOR, UTIL_COLOR = "#009E73", "#CC79A7", INK
MIN_SAMPLES = 3  # a timed phase under ~0.3 s has no timeline worth drawing


def _timeline_figure(
    group: list[Timeline], label: str, out_dir: Path, stem: str, formats: Sequence[str]
) -> Chart:
    n = len(group)
    fig = _new_figure(11.0, 1.3 + 2.9 * n)
    axes = fig.subplots(2 * n, 1, sharex=True, height_ratios=[1.0, 1.25] * n)
    t_end = max((s["t"] for tl in group for s in tl.samples), default=1.0)
    mb_top = max(
        (max(s["read_bps"], s["write_bps"]) / 1e6 for tl in group for s in tl.samples),
        default=1.0,
    )
    for i, tl in enumerate(group):
        ax_cpu, ax_io = axes[2 * i], axes[2 * i + 1]
        ts = [0.0] + [s["t"] for s in tl.samples]
        first = tl.samples[0] if tl.samples else {}

        def series(key: str, tl: Timeline = tl, first: dict[str, float] = first) -> list[float]:
            return [first.get(key, 0.0)] + [s[key] for s in tl.samples]

        base = [0.0] * len(ts)
        for key, name, color in CPU_SERIES:
            top = [b + v for b, v in zip(base, series(key), strict=True)]
            ax_cpu.fill_between(
                ts, base, top, step="pre", color=color, linewidth=0, label=name if i == 0 else None
            )
            base = top
        ax_cpu.set_ylim(0, 100)
        ax_cpu.set_yticks([0, 50, 100])
        ax_cpu.set_ylabel("CPU %")
        ax_cpu.set_title(
            f"{tl.config}  (rep {tl.rep})", loc="left", fontsize=11, fontweight="bold", color=INK
        )
        reads = [v / 1e6 for v in series("read_bps")]
        writes = [v / 1e6 for v in series("write_bps")]
        ax_io.fill_between(
            ts,
            0,
            writes,
            step="pre",
            color=WRITE_COLOR,
            alpha=0.75,
            linewidth=0,
            label="device write" if i == 0 else None,
        )
        ax_io.fill_between(
            ts,
            0,
            reads,
            step="pre",
            color=READ_COLOR,
            alpha=0.75,
            linewidth=0,
            label="device read" if i == 0 else None,
        )
        ax_io.set_ylim(0, (mb_top or 1.0) * 1.1)
        ax_io.set_ylabel("MB/s")
        ax_io.yaxis.set_major_formatter(ticker.FuncFormatter(_tick))
        ax_u = ax_io.twinx()
        ax_u.plot(
            ts,
            series("util_pct"),
            drawstyle="steps-pre",
            color=UTIL_COLOR,
            linewidth=1.2,
            linestyle="--",
            label="device utilisation" if i == 0 else None,
        )
        ax_u.set_ylim(0, 105)
        ax_u.set_yticks([0, 50, 100])
        ax_u.set_ylabel("util %", color=MUTED)
        ax_u.grid(False)
        ax_u.spines["right"].set_visible(True)
        if not tl.samples:
            ax_io.text(0.5, 0.5, "no samples", transform=ax_io.transAxes, ha="center", color=MUTED)
        if i == 0:
            handles, labels = [], []
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
    title = (
        f"{_wl_title(wl, group[0].chain)}{f', {label}' if label else ''}: device and CPU over time"
    )
    subtitle = _subtitle(
        which,
        "10 Hz samples" + (" up to the boot marker" if booted else ""),
        "CPU of the host running QEMU" if booted else "CPU of the whole machine",
        "device = the host disk under the guest's root" if booted else "device = the test target",
    )
    _titles(fig, title, subtitle)
    paths = _save(fig, out_dir, stem, formats)
    return Chart("timeline", title, wl, group[0].chain, paths, None, _size(fig))


# --- public ---------------------------------------------------------------------------------


def bar_chart_set(
    rows: Sequence[Row],
    out_dir: Path,
    formats: Sequence[str] = FORMATS,
    colors: dict[str, str] | None = None,
) -> list[Chart]:
    colors = colors or config_colors([r.config for r in rows])
    name = _Namer()
    charts = []
    with rc_context(STYLE):
        for chain, wl, wrows in _workload_groups(rows):
            metrics = [m for m in dict.fromkeys(r.metric for r in wrows) if m is not None]
            for metric in headline_metrics(wl, metrics):
                chart = _bar_chart(
                    wrows, metric, colors, out_dir, name("bar", chain, wl, metric), formats
                )
                if chart:
                    charts.append(chart)
    return charts


def line_chart_set(
    rows: Sequence[Row],
    out_dir: Path,
    formats: Sequence[str] = FORMATS,
    colors: dict[str, str] | None = None,
) -> list[Chart]:
    colors = colors or config_colors([r.config for r in rows])
    name = _Namer()
    charts = []
    with rc_context(STYLE):
        for chain, wl, wrows in _workload_groups(rows):
            param = numeric_sweep(wrows)
            if param is None:
                continue
            metrics = [m for m in dict.fromkeys(r.metric for r in wrows) if m is not None]
            for metric in headline_metrics(wl, metrics):
                chart = _line_chart(
                    wrows,
                    metric,
                    param,
                    colors,
                    out_dir,
                    name("line", chain, wl, metric, param),
                    formats,
                )
                if chart:
                    charts.append(chart)
    return charts


def layout_chart_set(
    rows: Sequence[Row],
    out_dir: Path,
    formats: Sequence[str] = FORMATS,
    colors: dict[str, str] | None = None,
) -> list[Chart]:
    colors = colors or config_colors([r.config for r in rows])
    name = _Namer()
    charts = []
    with rc_context(STYLE):
        for chain, wl, wrows in _workload_groups(rows):
            chart = _layout_chart(wrows, colors, out_dir, name("layout", chain, wl), formats)
            if chart:
                charts.append(chart)
    return charts


def timeline_chart_set(
    timelines: Sequence[Timeline], out_dir: Path, formats: Sequence[str] = FORMATS
) -> list[Chart]:
    """One figure per cell (workload x params x knobs), one panel pair per config."""
    name = _Namer()
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
            label = " ".join(f"{k}={group[0].dims().get(k)}" for k in varying)
            stem = name("timeline", chain, wl, label)
            charts.append(_timeline_figure(group, label, out_dir, stem, formats))
    return charts


def all_charts(
    rows: Sequence[Row],
    timelines: Sequence[Timeline],
    out_dir: Path,
    formats: Sequence[str] = FORMATS,
) -> list[Chart]:
    """Every chart of a report, configs in the same colours throughout."""
    colors = config_colors([r.config for r in rows])
    return [
        *layout_chart_set(rows, out_dir, formats, colors),
        *bar_chart_set(rows, out_dir, formats, colors),
        *line_chart_set(rows, out_dir, formats, colors),
        *timeline_chart_set(timelines, out_dir, formats),
    ]


def _paths(charts: list[Chart]) -> list[Path]:
    return [p for c in charts for p in c.paths]


def bar_charts(rows: Sequence[Row], out_dir: Path, formats: Sequence[str] = FORMATS) -> list[Path]:
    """Per workload and headline metric, every config with 95% CI whiskers."""
    return _paths(bar_chart_set(rows, out_dir, formats))


def line_charts(rows: Sequence[Row], out_dir: Path, formats: Sequence[str] = FORMATS) -> list[Path]:
    """Per workload with a numeric sweep: the metric against the parameter, CI bands."""
    return _paths(line_chart_set(rows, out_dir, formats))


def layout_charts(
    rows: Sequence[Row], out_dir: Path, formats: Sequence[str] = FORMATS
) -> list[Path]:
    """Time beside fragments/extents, for workloads that measure both (alloc)."""
    return _paths(layout_chart_set(rows, out_dir, formats))


def timeline_charts(
    timelines: Sequence[Timeline], out_dir: Path, formats: Sequence[str] = FORMATS
) -> list[Path]:
    """A bootchart per cell: device MB/s and utilisation, CPU user/sys/iowait."""
    return _paths(timeline_chart_set(timelines, out_dir, formats))


def first_rep_timelines(
    trials: Sequence[Any], samples: Callable[[int], list[dict[str, float]]]
) -> list[Timeline]:
    """The first repetition with samples of every cell (TrialRecords, in schedule order);
    `samples(trial_id)` reads a timeline (Store.get_samples)."""
    chosen: dict[tuple[str, str, str, str], Timeline] = {}
    for t in sorted(trials, key=lambda t: (t.rep, t.seq, t.step)):
        if t.status != "ok" or t.id is None:
            continue
        key = (
            t.config,
            t.chain,
            t.workload,
            json.dumps({**t.params, **t.knobs}, sort_keys=True, default=str),
        )
        if key in chosen:
            continue
        data = samples(t.id)
        if data:
            chosen[key] = Timeline(
                t.config, t.chain, t.workload, t.params, t.knobs, t.rep, data, t.id
            )
    # Back in plan order: first appearance of each cell in the schedule.
    order: dict[tuple[str, str, str, str], int] = {}
    for t in sorted(trials, key=lambda t: (t.seq, t.step)):
        key = (
            t.config,
            t.chain,
            t.workload,
            json.dumps({**t.params, **t.knobs}, sort_keys=True, default=str),
        )
        order.setdefault(key, len(order))
    return [chosen[k] for k in sorted(chosen, key=lambda k: order[k])]
