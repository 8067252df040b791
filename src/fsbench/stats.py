"""Pure statistics over repeated measurements: no I/O, no state."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


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


def t_quantile(df: float, confidence: float = 0.95) -> float:
    # scipy.special, imported here: scipy.stats alone costs a second at every start.
    from scipy.special import stdtrit

    return float(stdtrit(df, 1 - (1 - confidence) / 2))


def _t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with df degrees of freedom."""
    from scipy.special import stdtr

    return float(stdtr(df, -t))


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


def outliers(values: Sequence[float], threshold: float = 3.5) -> list[int]:
    """Indexes of outliers by modified z-score (Iglewicz & Hoaglin: 0.6745 (x - median) /
    MAD > 3.5). Reported, never dropped. A zero MAD (most values equal) flags nothing."""
    if len(values) < 3:
        return []
    med = statistics.median(values)
    mad = statistics.median(abs(v - med) for v in values)
    if mad == 0:
        return []
    return [i for i, v in enumerate(values) if abs(0.6745 * (v - med) / mad) > threshold]


@dataclass(frozen=True)
class Welch:
    t: float
    df: float
    p: float


def welch(a: Sequence[float], b: Sequence[float]) -> Welch | None:
    """Welch's unequal-variance t-test; None when either side has fewer than 2 values."""
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = statistics.variance(a), statistics.variance(b)
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    se2 = va / len(a) + vb / len(b)
    if se2 == 0:
        # Both constant: equal means are no difference; different ones are certain.
        return Welch(0.0, float("inf"), 1.0) if ma == mb else Welch(float("inf"), 0.0, 0.0)
    t = (ma - mb) / math.sqrt(se2)
    df = se2**2 / ((va / len(a)) ** 2 / (len(a) - 1) + (vb / len(b)) ** 2 / (len(b) - 1))
    p = 2 * _t_sf(abs(t), df)
    return Welch(t, df, p)


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm-Bonferroni adjusted p-values (step-down, monotone), None kept in place."""
    indexed = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    m = len(indexed)
    adjusted: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(indexed):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


def ratio_ci(
    a: Sequence[float], b: Sequence[float], confidence: float = 0.95
) -> tuple[float, tuple[float, float] | None]:
    """mean(b) / mean(a) with a CI by the delta method (Welch df); CI None if n < 2."""
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    if ma == 0:
        return float("nan"), None
    ratio = mb / ma
    if len(a) < 2 or len(b) < 2 or mb == 0:
        return ratio, None
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    rel = math.sqrt(va / ma**2 + vb / mb**2)
    w = welch(a, b)
    df = w.df if w and math.isfinite(w.df) and w.df > 0 else len(a) + len(b) - 2
    half = t_quantile(df, confidence) * rel
    return ratio, (ratio * math.exp(-half), ratio * math.exp(half))


@dataclass(frozen=True)
class Ranking:
    best: int  # index of the best group
    margin: float  # relative advantage over the runner-up (0.12 = 12 % better)
    runner_up: int | None
    p_adjusted: float | None  # Holm-adjusted p of best vs runner-up
    significant: bool


def rank(
    groups: Sequence[Sequence[float]], higher_is_better: bool, alpha: float = 0.05
) -> Ranking | None:
    """The best group by mean, and whether it beats every other group significantly
    (Welch, Holm-corrected over the comparisons of the best with each other group)."""
    usable = [i for i, g in enumerate(groups) if g]
    if len(usable) < 2:
        return None
    means = {i: statistics.fmean(groups[i]) for i in usable}
    order = sorted(usable, key=lambda i: means[i], reverse=higher_is_better)
    best, others = order[0], order[1:]
    tests = [welch(groups[best], groups[i]) for i in others]
    adjusted = holm([t.p if t else None for t in tests])
    significant = all(p is not None and p < alpha for p in adjusted)
    runner_up = others[0]
    mb, mr = means[best], means[runner_up]
    if mr == 0:
        margin = 0.0
    else:
        margin = (mb - mr) / abs(mr) if higher_is_better else (mr - mb) / abs(mr)
    return Ranking(best, abs(margin), runner_up, adjusted[0], significant)
