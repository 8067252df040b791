"""The design of a comparison: how often its data are looked at, and so what a p is worth.

Looking after every round (the default repetition loop stops a group once every pair is
decided) would inflate false orders if each look used the full 5%. A sequential design
counts instead what looking costs: the smallest Welch p over the looks n_min..n_max of two
identical configs has a law free of their mean and spread, drawn here once (100,000 seeded
draws, cached); an order's p is how often identical configs give a p that small at any
look, and the Pocock boundaries (one constant level per look) are its quantiles. A fifth
of alpha is kept back for what the normal law of equal spreads does not cover. A fixed
design (`--reps N`) has one look with all of alpha.

Pure functions: values in, numbers out.
"""

from __future__ import annotations

import bisect
import functools
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fsbench.analysis.stats import t_quantile

ALPHA = 0.05
DEFAULT_MARGIN = 0.05
# Repetitions before a timing is tested, and before a count is: a count fsbench reads
# itself is exact and decides at 2; a timing needs a variance worth the name.
MIN_REPS = 3
MIN_REPS_EXACT = 2
# Units of counts: integers fsbench reads or counts itself, exact when they do not vary.
EXACT_UNITS = frozenset({"count", "tx", "code"})
# The most repetitions "needed" worth stating; beyond it: "more than 1000".
NEEDED_LIMIT = 1000
POWER = 0.8


@dataclass(frozen=True)
class Design:
    """How the repetitions were decided, and so how often the data were looked at:
    `sequential` (a look after every round from `n_min` to `n_max`) or fixed (one look)."""

    sequential: bool = False
    n_min: int = MIN_REPS
    n_max: int = MIN_REPS
    margin: float = DEFAULT_MARGIN
    alpha: float = ALPHA

    def looks(self, n: int) -> list[int]:
        """The looks made by the time a pair has `n` repetitions (the last one is `n`)."""
        if not self.sequential:
            return [n]
        return list(range(self.n_min, min(n, self.n_max) + 1))

    def p_value(self, smallest: float) -> float:
        """The p of an order whose smallest p over the looks is `smallest`: how often
        identical configs give a p that small at any look (the looks' joint law under
        no difference, `_null_min_p`). A fixed design's p is its one look's."""
        if not self.sequential:
            return smallest
        null = _null_min_p(self.n_min, self.n_max)
        share = (bisect.bisect_right(null, smallest) + 1) / (len(null) + 1)
        # A fifth of alpha kept back (the rule is calibrated to 4%) for what the normal
        # law of equal spreads does not cover (Welch is a little liberal at small n with
        # unequal spreads, timings are skewed) and for the counting error of the law.
        return min(1.0, share / NULL_SAFETY)

    @property
    def nominal_alpha(self) -> float:
        """The p one look must reach for an order: alpha for one look; the Pocock
        boundary of a sequential design (what `p_value` maps to alpha)."""
        if not self.sequential:
            return self.alpha
        null = _null_min_p(self.n_min, self.n_max)
        return null[int(self.alpha * NULL_SAFETY * len(null))]

    @property
    def ci_level(self) -> float:
        """The confidence of the interval equivalence is judged on at each look: 90%
        (TOST at 5%) for one look; for a sequential design the Pocock constant level at
        which looking after every round keeps false equivalence at 5% a side."""
        if not self.sequential:
            return 1 - 2 * self.alpha
        null = _null_min_p(self.n_min, self.n_max)
        return 1 - null[int(2 * self.alpha * len(null))]

    @property
    def rule(self) -> str:
        """The legend's sentence on how pairs were decided."""
        looks = (
            f"a look after each round from n={self.n_min} to {self.n_max}, Pocock boundaries"
            if self.sequential
            else "one look"
        )
        return (
            f"pairs ordered by Welch's t-test (Holm with Shaffer's constraints over a "
            "comparison's pairs, "
            f"Benjamini-Hochberg over the run's comparisons; {looks}), or by counts that "
            f"do not vary; equivalent when the ratio's CI is within ±{self.margin:.0%} "
            "(TOST); otherwise undecided"
        )


NULL_DRAWS = 100_000
NULL_SAFETY = 0.8


@functools.lru_cache(maxsize=32)
def _null_min_p(n_min: int, n_max: int) -> list[float]:
    """The smallest Welch p over the looks n_min..n_max of two identical normal configs,
    sorted, from NULL_DRAWS seeded draws (the law is free of the mean and the spread).
    Its quantiles are the Pocock boundaries of these looks: what a look after every
    round costs, counted rather than bounded, so the looks' correlation is not wasted."""
    import numpy as np
    from scipy.special import stdtr

    rng = np.random.default_rng(20261125)
    x = rng.standard_normal((NULL_DRAWS, 2, n_max))
    smallest = np.ones(NULL_DRAWS)
    for n in range(max(2, n_min), n_max + 1):
        part = x[:, :, :n]
        mean = part.mean(axis=2)
        var = part.var(axis=2, ddof=1) / n
        se2 = var.sum(axis=1)
        t = (mean[:, 0] - mean[:, 1]) / np.sqrt(se2)
        df = se2**2 / ((var[:, 0] ** 2 + var[:, 1] ** 2) / (n - 1))
        smallest = np.minimum(smallest, 2 * stdtr(df, -np.abs(t)))
    return [float(v) for v in np.sort(smallest)]


def design_of(plan: Mapping[str, Any]) -> Design:
    """The design a stored plan ran with. Plans stored before the default decided
    repetitions (a number, or `auto` with its CI target) looked once."""
    margin = float(plan.get("margin") or DEFAULT_MARGIN)
    if plan.get("reps") == "decide":
        n_max = int(plan.get("max_reps") or 10)
        return Design(True, MIN_REPS, max(MIN_REPS, n_max), margin)
    return Design(False, margin=margin)


def cv(values: Sequence[float]) -> float | None:
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    return statistics.stdev(values) / abs(mean) if mean else None


def needed_reps(
    cv: float | None,
    difference: float,
    margin: float,
    alpha: float = ALPHA,
    level: float = 1 - 2 * ALPHA,
) -> int | None:
    """Repetitions per config that would decide a pair whose ratio is 1 + `difference`
    at a coefficient of variation `cv` (each config's, pooled): the fewer of those that
    would order it (Welch at `alpha`, 80% power, if the difference is real) and those that
    would show it equivalent (90% CI within the margin, if it is inside). None when more
    than NEEDED_LIMIT would be needed or nothing is known."""
    if cv is None:
        return None
    d = abs(difference)
    if cv == 0:
        return MIN_REPS

    def decides(n: int) -> bool:
        df = 2 * n - 2
        spread = cv * math.sqrt(2.0 / n)
        power = t_quantile(df, 2 * POWER - 1)
        if d > 0 and (t_quantile(df, 1 - alpha) + power) * spread <= d:
            return True
        return d < margin and (t_quantile(df, level) + power) * spread <= margin - d

    if not decides(NEEDED_LIMIT):
        return None
    lo, hi = 2, NEEDED_LIMIT  # decides(hi) holds; find the least n that decides
    while lo < hi:
        mid = (lo + hi) // 2
        if decides(mid):
            hi = mid
        else:
            lo = mid + 1
    return max(lo, MIN_REPS)
