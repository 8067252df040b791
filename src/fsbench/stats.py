"""Pure statistics over repeated measurements: no I/O, no state."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats as _sp


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float | None
    median: float | None
    sd: float | None
    ci95: tuple[float, float] | None
    cv: float | None  # sd / mean
    min: float | None
    max: float | None

    @property
    def half_width(self) -> float | None:
        return None if self.ci95 is None else (self.ci95[1] - self.ci95[0]) / 2


def t_quantile(df: int, confidence: float = 0.95) -> float:
    return float(_sp.t.ppf(1 - (1 - confidence) / 2, df))


def summarize(values: Sequence[float], confidence: float = 0.95) -> Summary:
    """n, mean, median, sd, Student-t confidence interval of the mean, CV, min, max."""
    n = len(values)
    if n == 0:
        return Summary(0, None, None, None, None, None, None, None)
    mean = statistics.fmean(values)
    median = statistics.median(values)
    if n == 1:
        return Summary(1, mean, median, None, None, None, values[0], values[0])
    sd = statistics.stdev(values)
    half = t_quantile(n - 1, confidence) * sd / math.sqrt(n)
    cv = sd / mean if mean else None
    return Summary(n, mean, median, sd, (mean - half, mean + half), cv, min(values), max(values))
