"""Steady state of a per-second series, by the rule fio's `ss=` options use: a window of
`window` seconds in which the throughput's spread (the largest deviation of a second from
the window's mean) or its slope (least squares, per second) stays within a fraction of
the window's mean. Measuring starts where the first such window starts; before it is
ramp-up (a cache filling, a database checkpointing its way in). A series shorter than
the window cannot be judged (a size-based write that lasted a few seconds): that is said
(`judged`), not taken for a failure to settle. Pure functions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

# fio's documented examples: ss=iops:10% (spread) and ss=iops_slope:0.1% (slope).
SPREAD_LIMIT = 0.10
SLOPE_LIMIT = 0.001
WINDOW_S = 10


@dataclass(frozen=True)
class Steady:
    reached: bool
    start_s: float | None  # where measuring starts (the first steady window's first second)
    window_s: int
    mean: float | None  # over the series from start_s on (None: not reached)
    rule: str
    judged: bool = True  # False: fewer samples than the window, the rule does not apply

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _slope(ys: Sequence[float]) -> float:
    n = len(ys)
    mx = (n - 1) / 2
    my = sum(ys) / n
    num = sum((i - mx) * (y - my) for i, y in enumerate(ys))
    den = sum((i - mx) ** 2 for i in range(n))
    return num / den if den else 0.0


def steady_state(
    t: Sequence[float],
    v: Sequence[float],
    window: int = WINDOW_S,
    spread: float = SPREAD_LIMIT,
    slope: float = SLOPE_LIMIT,
) -> Steady:
    """The first window of `window` consecutive samples (one a second) whose spread or
    slope is within its limit, relative to the window's mean."""
    rule = f"{window} s window: spread <= {spread:.0%} or slope <= {slope:.1%} of the mean per s"
    n = min(len(t), len(v))
    if n < window:
        return Steady(False, None, window, None, rule, judged=False)
    for i in range(0, n - window + 1):
        ys = v[i : i + window]
        mean = sum(ys) / window
        if mean <= 0:
            continue
        steady = max(abs(y - mean) for y in ys) <= spread * mean or abs(_slope(ys)) <= slope * mean
        if steady:
            rest = v[i:n]
            return Steady(True, float(t[i]), window, sum(rest) / len(rest), rule)
    return Steady(False, None, window, None, rule)
