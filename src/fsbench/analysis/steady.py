"""Steady state of a per-second series, by the criteria fio's `ss=` options use: a window
of `window` seconds in which the throughput's spread (the largest deviation of a second
from the window's mean) and its slope (least squares, per second) both stay within a
fraction of the window's mean (`require`: "both" by default, as an oscillating series
with no slope is not steady; "spread" or "slope" alone as fio's ss=iops / ss=iops_slope).
Measuring starts where the first such window starts; before it is
ramp-up (a cache filling, a database checkpointing its way in). A series shorter than
the window cannot be judged (a size-based write that lasted a few seconds): that is said
(`judged`), not taken for a failure to settle. Pure functions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

# fio's documented example for the spread, ss=iops:10%. Its slope example (0.1% of the
# mean per second) alone rejects any real series once both are required (the slope of
# 5% noise over 10 s is about 0.5%/s): the slope may move the window by the spread limit.
SPREAD_LIMIT = 0.10
SLOPE_LIMIT = 0.01
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


REQUIRE = ("both", "spread", "slope")


def steady_state(
    t: Sequence[float],
    v: Sequence[float],
    window: int = WINDOW_S,
    spread: float = SPREAD_LIMIT,
    slope: float = SLOPE_LIMIT,
    require: str = "both",
) -> Steady:
    """The first window of `window` consecutive samples (one a second) whose spread and
    slope (or the one `require` names) are within their limits, relative to the window's
    mean."""
    if require not in REQUIRE:
        raise ValueError(f"steady-state criterion {require!r}: one of {', '.join(REQUIRE)}")
    parts = {
        "spread": f"spread <= {spread:.0%}",
        "slope": f"slope <= {slope:.1%} of the mean per s",
    }
    said = " and ".join(parts.values()) if require == "both" else parts[require]
    rule = f"{window} s window: {said}"
    n = min(len(t), len(v))
    if n < window:
        return Steady(False, None, window, None, rule, judged=False)
    for i in range(0, n - window + 1):
        ys = v[i : i + window]
        mean = sum(ys) / window
        if mean <= 0:
            continue
        flat = max(abs(y - mean) for y in ys) <= spread * mean
        level = abs(_slope(ys)) <= slope * mean
        steady = {"both": flat and level, "spread": flat, "slope": level}[require]
        if steady:
            rest = v[i:n]
            return Steady(True, float(t[i]), window, sum(rest) / len(rest), rule)
    return Steady(False, None, window, None, rule)
