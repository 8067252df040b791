"""Pure statistics over repeated measurements: no I/O, no state."""

from __future__ import annotations

import bisect
import functools
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


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

    def row_fields(self) -> dict[str, Any]:
        """What a report row states of these values: n, mean, sd, the CI (a list), CV."""
        ci95 = list(self.ci95) if self.ci95 else None
        return {"n": self.n, "mean": self.mean, "sd": self.sd, "ci95": ci95, "cv": self.cv}


@functools.lru_cache(maxsize=4096)
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
    # Exact (statistics works in fractions): a report of a stored run never moves in its
    # last digit.
    sd = statistics.stdev(values)
    half = t_quantile(n - 1, confidence) * sd / math.sqrt(n)
    cv = sd / mean if mean else None
    return Summary(n, mean, median, sd, (mean - half, mean + half), cv, min(values), max(values))


# Fewer values than this have no robust centre: outliers() does not look at them.
OUTLIER_MIN_N = 4


def outliers(values: Sequence[float], threshold: float = 3.5, resolution: float = 0.0) -> list[int]:
    """Indexes of outliers by modified z-score (Iglewicz & Hoaglin: 0.6745 (x - median) /
    MAD > 3.5). Reported, never dropped.

    With a zero MAD (over half the values equal) the score falls back to the mean absolute
    deviation from the median, (x - median) / (1.253314 MeanAD), as Iglewicz and Hoaglin
    and SPSS do, the value itself included in the mean: 100.001 among three 100s is no
    infinite score. A value within `resolution` of the median (the tool's smallest step)
    is never an outlier. Fewer than OUTLIER_MIN_N values are not checked (three normal
    values would be "outliers" one time in four): `outliers_checked` says which."""
    if not outliers_checked(values):
        return []
    med = statistics.median(values)
    deviations = [abs(v - med) for v in values]
    mad = statistics.median(deviations)
    mean_ad = statistics.fmean(deviations)
    out = []
    for i, dev in enumerate(deviations):
        if dev <= resolution or dev == 0:
            continue
        score = 0.6745 * dev / mad if mad > 0 else dev / (1.253314 * mean_ad)
        if score > threshold:
            out.append(i)
    return out


def outliers_checked(values: Sequence[float]) -> bool:
    """Whether `outliers` looks at these values at all (at least OUTLIER_MIN_N)."""
    return len(values) >= OUTLIER_MIN_N


# Two groups of values count as two modes when the gap between them is at least this far
# apart on the log scale (about 20%) and wider, against the two groups' own spread, than
# all but BIMODAL_FALSE of unimodal samples of the same n show (counted by simulation).
BIMODAL_GAP = 0.18
BIMODAL_FALSE = 0.02
# Three values cannot show two groups: two that agree by chance and one apart are common.
BIMODAL_MIN_N = 4


@dataclass(frozen=True)
class Modes:
    """Values that fall in two groups: the lower group's size and mean, the upper's."""

    low: int
    high: int
    low_mean: float
    high_mean: float

    @property
    def factor(self) -> float:
        return self.high_mean / self.low_mean


def bimodal(values: Sequence[float]) -> Modes | None:
    """Two modes in positive values (a machine that is sometimes 1.4x slower), or None:
    the largest gap between sorted log values splits them into two groups (one may be a
    single value); it is two modes when the gap is at least BIMODAL_GAP and its ratio to
    the groups' pooled spread exceeds what normal samples of this n give but in
    BIMODAL_FALSE of draws. Fewer than BIMODAL_MIN_N values are not looked at."""
    import numpy as np

    if len(values) < BIMODAL_MIN_N or min(values) <= 0:
        return None
    logs = np.sort(np.log(np.asarray(values, float)))[None, :]
    ratio, gap, cut = _gap_ratio(logs)
    if gap[0] < BIMODAL_GAP or ratio[0] <= _gap_limit(len(values)):
        return None
    low, high = logs[0, : cut[0]], logs[0, cut[0] :]
    return Modes(len(low), len(high), math.exp(low.mean()), math.exp(high.mean()))


def _gap_ratio(sorted_logs: Any) -> tuple[Any, Any, Any]:
    """Per row of sorted values: the largest gap over the pooled spread of the two groups
    it splits the row into, the gap, and where it cuts (the lower group's size)."""
    import numpy as np

    x = sorted_logs
    n = x.shape[1]
    gaps = np.diff(x, axis=1)
    cut = gaps.argmax(axis=1) + 1
    low = np.arange(n)[None, :] < cut[:, None]
    low_mean = (x * low).sum(axis=1) / low.sum(axis=1)
    high_mean = (x * ~low).sum(axis=1) / (~low).sum(axis=1)
    squares = (((x - low_mean[:, None]) ** 2) * low + ((x - high_mean[:, None]) ** 2) * ~low).sum(
        axis=1
    )
    spread = np.sqrt(squares / (n - 2))
    gap = gaps.max(axis=1)
    with np.errstate(divide="ignore"):
        ratio = np.where(spread > 0, gap / np.where(spread > 0, spread, 1.0), np.inf)
    return ratio, gap, cut


@functools.lru_cache(maxsize=64)
def _gap_limit(n: int) -> float:
    """The gap-to-spread ratio unimodal normal samples of n exceed in BIMODAL_FALSE of
    20,000 seeded draws (the ratio is free of their mean and spread)."""
    import numpy as np

    rng = np.random.default_rng(20261128 + n)
    ratio, _, _ = _gap_ratio(np.sort(rng.standard_normal((20_000, n)), axis=1))
    return float(np.quantile(ratio, 1 - BIMODAL_FALSE))


def min_detectable(
    sd: float | None, mean: float | None, n: int, alpha: float = 0.05, power: float = 0.8
) -> float | None:
    """The smallest relative difference between this config and another measured alike
    (same n, same sd) that a two-sided Welch test at `alpha` detects with `power`:
    (t(1 - alpha/2) + t(power)) * sd * sqrt(2 / n) / |mean|, df = 2n - 2. None below n = 2."""
    if n < 2 or sd is None or not mean:
        return None
    df = 2 * n - 2
    z = t_quantile(df, 1 - alpha) + t_quantile(df, 2 * power - 1)
    return z * sd * math.sqrt(2.0 / n) / abs(mean)


def reps_needed(
    cv: float | None, difference: float, alpha: float = 0.05, power: float = 0.8, limit: int = 1000
) -> int | None:
    """Repetitions per config for `min_detectable` to reach `difference` (relative) with
    this coefficient of variation; None if more than `limit` or no CV known."""
    if cv is None or difference <= 0:
        return None
    if cv == 0:
        return 2

    def enough(n: int) -> bool:
        found = min_detectable(cv, 1.0, n, alpha, power)
        return found is not None and found <= difference

    # What min_detectable finds shrinks with n: the least n that is enough.
    return least_n(enough, 2, limit)


def least_n(holds: Callable[[int], bool], lo: int, hi: int) -> int | None:
    """The least n in lo..hi for which `holds` (true from some n on; a bisection), None
    when it does not hold at hi."""
    if not holds(hi):
        return None
    return lo + bisect.bisect_left(range(lo, hi + 1), True, key=holds)


@dataclass(frozen=True)
class OrderEffect:
    """Whether results depend on where or when a trial ran: its place in the round (a
    linear trend of the residuals with position), the trial run just before it (residuals
    grouped by the previous cell, one-way ANOVA) or its round (residuals grouped by round:
    the rounds are blocks, and a shock that slows a whole round moves every config of it).
    Residuals are relative to each config's own mean."""

    n: int
    position_p: float | None
    position_change: float  # fitted change from the first place to the last, relative
    carryover_p: float | None
    carryover_spread: float  # range of the mean residual per previous cell, relative
    round_p: float | None = None
    round_spread: float = 0.0  # range of the mean residual per round, relative
    round_shift: float = 0.0  # the mean residual of the round farthest from the others'
    round_moved: str = ""  # that round, when it moved every trial of it the same way

    @property
    def p(self) -> float | None:
        """The smallest p of the tests, corrected for being the smallest (Bonferroni:
        times the tests made); None if none could run."""
        found = [p for p in (self.position_p, self.carryover_p, self.round_p) if p is not None]
        if not found:
            return None
        return min(1.0, len(found) * min(found))

    @property
    def size(self) -> float:
        """How far the order moved results, relative: the largest of the effects."""
        return max(abs(self.position_change), self.carryover_spread, self.round_spread)

    @property
    def by_round(self) -> bool:
        """The rounds' test is the one that found it."""
        found = [p for p in (self.position_p, self.carryover_p) if p is not None]
        return self.round_p is not None and all(self.round_p <= p for p in found)


def _grouped(
    residuals: Sequence[float], labels: Sequence[str], spent: int
) -> tuple[float | None, dict[str, list[float]]]:
    """One-way ANOVA of the residuals grouped by label (its p, None when it cannot run:
    fewer than six residuals, fewer than two groups or no group of two, no df left), and
    the groups."""
    groups: dict[str, list[float]] = {}
    for r, label in zip(residuals, labels, strict=True):
        groups.setdefault(label, []).append(r)
    n, k = len(residuals), len(groups)
    df_within = n - k - spent
    if n < 6 or not 2 <= k < n or df_within < 1:
        return None, groups
    grand = statistics.fmean(residuals)
    means = {g: statistics.fmean(v) for g, v in groups.items()}
    ssb = sum(len(v) * (means[g] - grand) ** 2 for g, v in groups.items())
    ssw = sum((x - means[g]) ** 2 for g, v in groups.items() for x in v)
    if ssw == 0:
        return (0.0 if ssb > 0 else 1.0), groups
    return _f_sf((ssb / (k - 1)) / (ssw / df_within), k - 1, df_within), groups


def order_effect(
    residuals: Sequence[float],
    positions: Sequence[int],
    previous: Sequence[str],
    configs: int = 1,
    rounds: Sequence[int] = (),
) -> OrderEffect:
    """Tests on relative residuals (value / its config's mean - 1) of the counted trials of
    one comparison group: slope against position (t-test), differences between the
    trials that followed each other cell (F-test) and, given each trial's round,
    differences between rounds (F-test). The `configs` means already subtracted cost as
    many degrees of freedom (less one: the residuals' own mean is zero). A test needs at
    least six trials, two distinct positions (previous cells, rounds) and a degree of
    freedom left; otherwise its p is None."""
    n = len(residuals)
    spent = max(configs, 1) - 1  # the config means, beyond the grand mean a test fits anyway
    pos_p, change = None, 0.0
    xs = [float(p) for p in positions]
    df_pos = n - 2 - spent
    if n >= 6 and len(set(xs)) >= 2 and df_pos >= 1:
        mx, my = statistics.fmean(xs), statistics.fmean(residuals)
        sxx = sum((x - mx) ** 2 for x in xs)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, residuals, strict=True)) / sxx
        fitted = [my + slope * (x - mx) for x in xs]
        sse = sum((y - f) ** 2 for y, f in zip(residuals, fitted, strict=True))
        change = slope * (max(xs) - min(xs))
        if sse == 0:
            pos_p = 0.0 if slope != 0 else 1.0
        else:
            se = math.sqrt(sse / df_pos / sxx)
            pos_p = 2 * _t_sf(abs(slope / se), df_pos)
    carry_p, groups = _grouped(residuals, previous, spent)
    spread = _spread(groups) if carry_p is not None else 0.0
    if not rounds:
        return OrderEffect(n, pos_p, change, carry_p, spread)
    round_p, by_round = _grouped(residuals, [str(r) for r in rounds], spent)
    if round_p is None:
        return OrderEffect(n, pos_p, change, carry_p, spread)
    means = {g: statistics.fmean(v) for g, v in by_round.items()}
    center = statistics.fmean(means.values())
    far = max(means, key=lambda g: abs(means[g] - center))
    shift = means[far] - center
    every = all((x - center) * shift > 0 for x in by_round[far])
    return OrderEffect(
        n, pos_p, change, carry_p, spread, round_p, _spread(by_round), shift, far if every else ""
    )


def _spread(groups: dict[str, list[float]]) -> float:
    """The range of the groups' mean residuals."""
    means = [statistics.fmean(v) for v in groups.values()]
    return max(means) - min(means)


def _f_sf(f: float, d1: float, d2: float) -> float:
    """P(F > f) for the F distribution with (d1, d2) degrees of freedom."""
    from scipy.special import fdtrc

    return float(fdtrc(d1, d2, f))


@dataclass(frozen=True)
class Welch:
    t: float
    df: float
    p: float


def moments(values: Sequence[float]) -> tuple[int, float, float]:
    """n, mean and sample variance in plain floats (`statistics` computes exactly, in
    fractions: too slow for the sequential rule's simulations, which test a million
    times)."""
    n = len(values)
    mean = math.fsum(values) / n
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    return n, mean, var


def welch(a: Sequence[float], b: Sequence[float]) -> Welch | None:
    """Welch's unequal-variance t-test; None when either side has fewer than 2 values."""
    if len(a) < 2 or len(b) < 2:
        return None
    (na, ma, va), (nb, mb, vb) = moments(a), moments(b)
    if va == 0 and vb == 0:
        # Both constant: equal means are no difference; different ones are certain.
        return Welch(0.0, float("inf"), 1.0) if ma == mb else Welch(float("inf"), 0.0, 0.0)
    t, df, p = welch_from_moments(ma, va, na, mb, vb, nb)
    return Welch(float(t), float(df), float(p))


def welch_from_moments(
    ma: Any, va: Any, na: Any, mb: Any, vb: Any, nb: Any
) -> tuple[Any, Any, Any]:
    """Welch's t, its Welch-Satterthwaite df and two-sided p from each side's mean,
    sample variance and n: plain floats, or numpy arrays over many draws at once (the
    sequential design's simulations use this same formula). Both variances zero: no test
    (the caller answers such pairs exactly)."""
    from scipy.special import stdtr

    sa, sb = va / na, vb / nb
    se2 = sa + sb
    t = (ma - mb) / se2**0.5
    df = se2**2 / (sa**2 / (na - 1) + sb**2 / (nb - 1))
    return t, df, 2 * stdtr(df, -abs(t))


def welch_anova_from_moments(means: Any, variances: Any, ns: Any) -> Any:
    """Welch's (1951) one-way ANOVA for unequal variances: the p that k means are equal,
    from the k means, sample variances and ns along the last axis (floats in a sequence,
    or numpy arrays over many draws at once). Every variance must be positive."""
    import numpy as np
    from scipy.special import fdtrc

    m, v, n = np.asarray(means, float), np.asarray(variances, float), np.asarray(ns, float)
    k = m.shape[-1]
    w = n / v
    total = w.sum(axis=-1, keepdims=True)
    centre = (w * m).sum(axis=-1, keepdims=True) / total
    between = (w * (m - centre) ** 2).sum(axis=-1) / (k - 1)
    spread = ((1 - w / total) ** 2 / (n - 1)).sum(axis=-1)
    f = between / (1 + 2 * (k - 2) / (k * k - 1) * spread)
    return fdtrc(k - 1, (k * k - 1) / (3 * spread), f)


def fisher_exact(a_hits: int, a_n: int, b_hits: int, b_n: int) -> float:
    """Two-sided Fisher exact test of hits/n against hits/n (e.g. damaged crashes out of
    crashes): the probability, with the margins fixed, of a table no likelier than this
    one. 1.0 when either side is empty."""
    if a_n <= 0 or b_n <= 0:
        return 1.0
    hits, total = a_hits + b_hits, a_n + b_n

    def prob(k: int) -> float:
        return math.comb(a_n, k) * math.comb(b_n, hits - k) / math.comb(total, hits)

    seen = prob(a_hits)
    ks = range(max(0, hits - b_n), min(hits, a_n) + 1)
    return min(1.0, sum(p for k in ks if (p := prob(k)) <= seen * (1 + 1e-9)))


@dataclass(frozen=True)
class Step:
    """One hypothesis in a step-down: its adjusted p, the divisor of its step (the
    hypotheses that could still be true together there) and its rank (0: smallest p)."""

    adjusted: float
    divisor: int
    rank: int


def step_down(pvalues: Sequence[float], k: int | None = None) -> list[Step]:
    """Holm's step-down over these p-values (each step dividing by the hypotheses that
    remain), or with `k` and all k(k-1)/2 pairwise p-values of k configs, Shaffer's (1986)
    modified sequentially rejective Bonferroni (S1): each step divides by the most pairwise
    hypotheses that can still be true together. For three configs: alpha/3, then alpha,
    alpha (once two means differ, at most one pair is equal). Controls the family-wise
    error as Holm does and is never less powerful. Adjusted p-values are monotone:
    a hypothesis is rejected at level L exactly when its adjusted p is at most L."""
    m = len(pvalues)
    possible = _true_together(k) if k is not None and m == k * (k - 1) // 2 else range(m + 1)
    order = sorted(range(m), key=lambda i: pvalues[i])
    steps: list[Step] = [Step(1.0, 1, 0)] * m
    running = 0.0
    for rank, i in enumerate(order):
        remaining = m - rank
        divisor = max([x for x in possible if x <= remaining] + [1])
        running = max(running, min(1.0, divisor * pvalues[i]))
        steps[i] = Step(running, divisor, rank)
    return steps


def _adjusted(pvalues: Sequence[float | None], k: int | None) -> list[float | None]:
    present = [i for i, p in enumerate(pvalues) if p is not None]
    steps = step_down([pvalues[i] or 0.0 for i in present], k)
    out: list[float | None] = [None] * len(pvalues)
    for i, step in zip(present, steps, strict=True):
        out[i] = step.adjusted
    return out


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm-Bonferroni adjusted p-values (step-down, monotone), None kept in place."""
    return _adjusted(pvalues, None)


@functools.cache
def _true_together(k: int) -> tuple[int, ...]:
    """How many of the pairwise hypotheses among k means can be true at once (Shaffer
    1986): the means split into groups of equal ones, j of them equal giving C(j, 2)."""
    if k <= 1:
        return (0,)
    found = {j * (j - 1) // 2 + rest for j in range(1, k + 1) for rest in _true_together(k - j)}
    return tuple(sorted(found))


def shaffer(pvalues: Sequence[float | None], k: int) -> list[float | None]:
    """Shaffer-adjusted p-values of all pairwise comparisons of k configs (step_down);
    None kept in place and counted as never rejected."""
    filled = [1.0 if p is None else p for p in pvalues]
    steps = step_down(filled, k)
    return [None if p is None else s.adjusted for p, s in zip(pvalues, steps, strict=True)]


def ratio_ci(
    a: Sequence[float], b: Sequence[float], confidence: float = 0.95, resolution: float = 0.0
) -> tuple[float, tuple[float, float] | None]:
    """mean(b) / mean(a) with a CI by the delta method (Welch df); CI None if n < 2.

    `resolution`, the tool's step: a mean of rounded values is known to no better than
    one step, so the interval is never narrower than a step on each side (rounded values
    that never vary have no variance, not an exact ratio)."""
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
    half = max(t_quantile(df, confidence) * rel, resolution / abs(ma) + resolution / abs(mb))
    return ratio, (ratio * math.exp(-half), ratio * math.exp(half))


def fixed_relation(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float] | None:
    """(power, factor) where every y is factor x x ** power, power -1 (a reciprocal: a
    fixed tree's MB/s of its seconds) or 1 (a multiple); None when neither holds, on
    fewer than two pairs, or on values that are not all positive."""
    if len(xs) != len(ys) or len(xs) < 2 or min(*xs, *ys) <= 0:
        return None
    for power in (-1.0, 1.0):
        logs = [math.log(y) - power * math.log(x) for x, y in zip(xs, ys, strict=True)]
        if max(logs) - min(logs) <= 1e-9 * max(1.0, abs(logs[0])):
            return power, math.exp(statistics.fmean(logs))
    return None
