"""Change points in a series of run means: where the level of a metric moved, and how sure.

Two tests, each calibrated on its own, so that together they stay within their sum:

- **E-divisive means** (Matteson & James, "A Nonparametric Approach for Multiple Change
  Point Analysis of Multivariate Data", JASA 109(505), 2014; as MongoDB runs it on its
  nightly performance series, Daly et al., ICPE 2020): the split of a segment that
  maximises the energy distance between its two sides, kept when a permutation test says
  no shuffled order of the same values splits as well (p <= ALPHA); then each side is
  searched again. The permutation test sees the search itself (the best split of every
  shuffle), so picking the best split does not inflate false changes. It cannot call a
  change with only a few runs after it: a shuffle puts those few values at the end often
  enough (1 run after: p >= 1/n).
- **The newest runs** (a fixed, not a searched, hypothesis): the last j runs (j = 1..TAIL)
  against the segment before them by Student's two-sample t-test (pooled variance, so one
  run after is a prediction-interval test), Bonferroni over the j tried. It sees a large
  change on the night it arrives, which a nightly gate needs.

MongoDB's own implementation (signal-processing-algorithms 2.1.1) was not used: it
requires numpy < 2 and setuptools < 60 and shuffles numpy's global random state, so its
reports would not be reproducible (docs/history.md). This is the method as published,
with the permutations drawn from a generator seeded by the series itself: the same runs
give the same report.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# The level of each test: a series without a change reports one in about ALPHA + TAIL_ALPHA
# of cases (bench/history_detector.py measures it).
ALPHA = 0.01
PERMUTATIONS = 199  # p = (1 + shuffles at least as good) / 200: 0.01 is reachable
EXPONENT = 1.0  # of the distance: (0, 2); 1 as Matteson & James and MongoDB use it
TIE = 1e-9  # relative: a shuffle's Q this close to the observed one is a tie (rounding)
MIN_SIZE = 3  # the fewest runs on a side of an E-divisive split
TAIL = 4  # the newest 1..TAIL runs are tested as a block against the runs before them
TAIL_ALPHA = 0.01  # shared among the TAIL blocks (Bonferroni)
TAIL_BEFORE = 5  # the fewest runs before the newest block that give its test a variance


@dataclass(frozen=True)
class Change:
    """A change point: the series' level differs from index `at` on (the first run after)."""

    at: int
    p: float
    method: str  # "e-divisive" (permutation test) or "newest-runs" (Student t)


def _energy(x: np.ndarray) -> tuple[int, float]:
    """The best split of `x` (the first index of its second part) and its statistic
    Q = m n / (m + n) * E, E the energy distance with exponent 1, over splits leaving at
    least MIN_SIZE values on each side."""
    n = len(x)
    d = np.abs(x[:, None] - x[None, :]) ** EXPONENT
    s = np.zeros((n + 1, n + 1))
    s[1:, 1:] = d.cumsum(0).cumsum(1)  # s[a, b] = sum of d[:a, :b]
    taus = np.arange(MIN_SIZE, n - MIN_SIZE + 1)
    m, k = taus.astype(float), (n - taus).astype(float)
    cross = s[taus, n] - s[taus, taus]  # sum of d[:tau, tau:]
    left = s[taus, taus] / 2  # pairs within x[:tau]
    right = (s[n, n] - 2 * s[taus, n] + s[taus, taus]) / 2  # pairs within x[tau:]
    e = 2 * cross / (m * k) - left / (m * (m - 1) / 2) - right / (k * (k - 1) / 2)
    q = m * k / (m + k) * e
    best = int(np.argmax(q))
    return int(taus[best]), float(q[best])


def _split(x: np.ndarray, rng: np.random.Generator) -> tuple[int, float] | None:
    """The best split of `x` and its permutation p; None when it is too short to split."""
    if len(x) < 2 * MIN_SIZE:
        return None
    tau, q = _energy(x)
    # A shuffle that reproduces the same two sides computes the same Q in another order of
    # sums: it ties, and must count, though rounding can put it 1e-15 below (uncounted,
    # such ties made p about half what it is on short series).
    tie = q - TIE * abs(q)
    at_least = sum(_energy(rng.permutation(x))[1] >= tie for _ in range(PERMUTATIONS))
    return tau, (1 + at_least) / (PERMUTATIONS + 1)


def e_divisive(values: Sequence[float], seed: int | None = None) -> list[Change]:
    """The change points E-divisive means finds in `values`, in order. The permutations
    are drawn from a generator seeded by `seed` (by default, the values themselves)."""
    x = np.asarray(values, dtype=float)
    rng = np.random.default_rng(_seed(x) if seed is None else seed)
    found: list[Change] = []
    bounds = [0, len(x)]
    while True:
        # Matteson & James: among the segments' best splits, the strongest is tested next.
        best: tuple[float, int, int] | None = None  # (Q, lo, hi) of the strongest segment
        for lo, hi in zip(bounds, bounds[1:], strict=False):
            if hi - lo >= 2 * MIN_SIZE:
                q = _energy(x[lo:hi])[1]
                if best is None or q > best[0]:
                    best = (q, lo, hi)
        if best is None:
            break
        _, lo, hi = best
        tested = _split(x[lo:hi], rng)
        if tested is None or tested[1] > ALPHA:
            break
        at = _placed(x[lo:hi], tested[0]) + lo
        found.append(Change(at, tested[1], "e-divisive"))
        bounds = sorted({*bounds, at})
    return sorted(found, key=lambda c: c.at)


def _placed(x: np.ndarray, tau: int) -> int:
    """Where a change E-divisive found at `tau` of segment `x` lies. The permutation test
    says there is one; but a split is searched only MIN_SIZE runs in from either end, so a
    change 1 or 2 runs from an end is found at the limit (20 runs, then 2 slower ones: at
    19, a run early). At a limit, the change is placed where the two sides' means fit best
    (least squares: the level shift's maximum likelihood) among the limit and the splits
    beyond it; elsewhere E-divisive's own split stands."""
    n = len(x)
    candidates = {tau}
    if tau == n - MIN_SIZE:
        candidates.update(range(tau, n))
    if tau == MIN_SIZE:
        candidates.update(range(1, tau + 1))
    if len(candidates) == 1:
        return tau

    def spread(t: int) -> float:
        return float(((x[:t] - x[:t].mean()) ** 2).sum() + ((x[t:] - x[t:].mean()) ** 2).sum())

    return min(candidates, key=lambda t: (spread(t), abs(t - tau), t))


def student_p(before: Sequence[float], after: Sequence[float]) -> float | None:
    """Two-sided p of Student's two-sample t-test with pooled variance (None when there is
    no variance to pool)."""
    m, k = len(before), len(after)
    if m < 2 or k < 1:
        return None
    mb, ma = float(np.mean(before)), float(np.mean(after))
    ss = float(np.sum((np.asarray(before) - mb) ** 2) + np.sum((np.asarray(after) - ma) ** 2))
    df = m + k - 2
    sp = math.sqrt(ss / df) if df > 0 else 0.0
    if sp == 0:
        return 0.0 if ma != mb else 1.0
    t = (ma - mb) / (sp * math.sqrt(1 / m + 1 / k))
    from scipy.special import stdtr  # here: scipy costs time at every start

    return float(2 * stdtr(df, -abs(t)))


def newest(values: Sequence[float], start: int = 0) -> Change | None:
    """A change at the newest runs: the last j values (j = 1..TAIL) against the values
    from `start` up to them, the smallest p of those below TAIL_ALPHA / TAIL."""
    n = len(values)
    best: Change | None = None
    for j in range(1, TAIL + 1):
        before, after = values[start : n - j], values[n - j :]
        if len(before) < TAIL_BEFORE:
            break
        p = student_p(before, after)
        if p is not None and p < TAIL_ALPHA / TAIL and (best is None or p < best.p):
            best = Change(n - j, min(1.0, p * TAIL), "newest-runs")
    return best


def detect(values: Sequence[float], seed: int | None = None) -> list[Change]:
    """Every change point of the series: E-divisive's, then one at the newest runs when
    they differ from the segment they would end (reported p Bonferroni-adjusted)."""
    found = e_divisive(values, seed)
    start = found[-1].at if found else 0
    last = newest(values, start)
    if last is not None and last.at > start:
        found.append(last)
    return found


def _seed(x: np.ndarray) -> int:
    return zlib.crc32(np.ascontiguousarray(x).tobytes())
