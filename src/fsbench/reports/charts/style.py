"""How every chart looks: matplotlib on the Agg canvas, the palette, the rcParams, and
the small formatting rules (ticks, wrapped labels, units) the chart families share."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")

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


def config_colors(configs: Sequence[str]) -> dict[str, str]:
    """One colour per config, the same in every chart of a report."""
    return {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(dict.fromkeys(configs))}


def tick(x: float, _pos: int) -> str:
    """A value axis tick: '0', '2.5', '12,000'."""
    if x == 0:
        return "0"
    if abs(x) >= 10000:
        return f"{x:,.0f}"
    return f"{x:g}"


def wrap(label: str, width: int = 20) -> str:
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


def label_lines(labels: Sequence[str]) -> int:
    """The most lines a wrapped label takes."""
    return max((wrap(x).count("\n") + 1 for x in labels), default=1)


def scale(unit: str | None, values: Sequence[float]) -> tuple[float, str]:
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
