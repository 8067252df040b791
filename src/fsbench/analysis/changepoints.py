"""Change points in a series of run means: where the level of a metric moved, and how sure.

Two tests, each calibrated on its own, so that together they stay within their sum:

- **A split** of a segment in two, searched over every place that leaves MIN_SIZE runs or
  more on each side, then each side searched again (binary segmentation):
  - on a segment of more than SHORT runs, **E-divisive means** (Matteson & James, "A
    Nonparametric Approach for Multiple Change Point Analysis of Multivariate Data", JASA
    109(505), 2014; as MongoDB runs it on its nightly performance series, Daly et al.,
    ICPE 2020): the split that maximises the energy distance between its two sides, kept
    when a permutation test says no shuffled order of the same values splits as well
    (p <= ALPHA). The permutation test sees the search itself (the best split of every
    shuffle), so picking the best split does not inflate false changes.
  - on a segment of SHORT runs or fewer, the **largest Student t over the splits** (pooled
    variance), its p read from its exact null law under normal noise. No test that only
    shuffles can be sure at that length: the order that puts 4 low runs of 8 together is
    one of C(8, 4) / 2 = 35, p >= 1/35 > ALPHA. The largest t is pivotal (its law depends
    on the length alone, not on the level or the noise), so its law is drawn once per
    length (NULL_DRAWS normal series, a fixed seed) and every short series is read
    against it.
- **The newest runs, confirmed** (a fixed, not a searched, hypothesis): the last j runs
  (j = 2..TAIL) each against the segment before them by Student's prediction test, all on
  the same side, the block's p the largest of theirs (an intersection-union test: it is
  a change only when every run of the block is one), Bonferroni over the blocks tried. A
  single run, however far off, is no change until a second one confirms it: a spike the
  night it arrives cannot tell itself from a change, and the gate would fail on spikes.

MongoDB's own implementation (signal-processing-algorithms 2.1.1) was not used: it
requires numpy < 2 and setuptools < 60 and shuffles numpy's global random state, so its
reports would not be reproducible (docs/history.md). This is the method as published,
with the permutations drawn from a generator seeded by the series itself: the same runs
give the same report.
"""

from __future__ import annotations

import functools
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
SHORT = 12  # a segment this short or shorter is split by the largest t, not by shuffles
NULL_DRAWS = 100_000  # normal series drawn per length for the largest t's null law
NULL_SEED = 50  # of those draws: the same law, hence the same report, every time
TAIL = 4  # the newest 2..TAIL runs are tested as a block against the runs before them
CONFIRM = 2  # the fewest runs of a block: one run alone is no change (a spike)
TAIL_ALPHA = 0.01  # shared among the blocks tried (Bonferroni)
TAIL_BEFORE = 5  # the fewest runs before the newest block that give its test a variance
FEWEST = 2 * MIN_SIZE  # the shortest series any change can be found in


@dataclass(frozen=True)
class Change:
    """A change point: the series' level differs from index `at` on (the first run after)."""

    at: int
    p: float
    method: str  # "e-divisive" (permutation test), "largest-t" or "newest-runs" (Student)


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
    """The best split of `x` and its p (the largest t's up to SHORT runs, else the
    permutation test's); None when it is too short to split."""
    if len(x) < FEWEST:
        return None
    if len(x) <= SHORT:
        return largest_t(x)
    return permuted(x, rng)


def permuted(
    x: np.ndarray, rng: np.random.Generator, shuffles: int = PERMUTATIONS
) -> tuple[int, float]:
    """E-divisive's best split of `x` and its permutation p over `shuffles` shuffles."""
    tau, q = _energy(x)
    # A shuffle that reproduces the same two sides computes the same Q in another order of
    # sums: it ties, and must count, though rounding can put it 1e-15 below (uncounted,
    # such ties made p about half what it is on short series).
    tie = q - TIE * abs(q)
    at_least = sum(_energy(rng.permutation(x))[1] >= tie for _ in range(shuffles))
    return tau, (1 + at_least) / (shuffles + 1)


def e_divisive(values: Sequence[float], seed: int | None = None) -> list[Change]:
    """The change points E-divisive means finds in `values`, in order. The permutations
    are drawn from a generator seeded by `seed` (by default, the values themselves)."""
    x = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed_of(x) if seed is None else seed)
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
        found.append(Change(at, tested[1], "largest-t" if hi - lo <= SHORT else "e-divisive"))
        bounds = sorted({*bounds, at})
    return sorted(found, key=lambda c: c.at)


def _placed(x: np.ndarray, tau: int) -> int:
    """Where a change found at `tau` of segment `x` lies. The test says there is one; but
    a split is searched only MIN_SIZE runs in from either end, so a change 1 or 2 runs
    from an end is found at the limit (20 runs, then 2 slower ones: at 19, a run early).
    At a limit, the change is placed where the two sides' means fit best (least squares:
    the level shift's maximum likelihood) among the limit and the splits beyond it;
    elsewhere the test's own split stands."""
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


def prediction_p(before: Sequence[float], x: float) -> float | None:
    """Two-sided p of one more value `x` drawn like `before` (Student's prediction test:
    Student's two-sample test with one value after; None when `before` has no variance)."""
    return student_p(before, [x])


def newest(values: Sequence[float], start: int = 0) -> Change | None:
    """A change at the newest runs: the last j values (j = CONFIRM..TAIL) against the
    values from `start` up to them, each of the j on the same side and far enough on its
    own (the block's p: the largest of theirs); the smallest p of those blocks below
    TAIL_ALPHA / blocks, reported Bonferroni-adjusted."""
    n = len(values)
    blocks = TAIL - CONFIRM + 1
    best: Change | None = None
    for j in range(CONFIRM, TAIL + 1):
        before, after = values[start : n - j], values[n - j :]
        if len(before) < TAIL_BEFORE:
            break
        centre = float(np.mean(before))
        sides = {math.copysign(1.0, a - centre) for a in after}
        ps = [prediction_p(before, a) for a in after]
        if len(sides) > 1 or any(p is None for p in ps):
            continue
        p = max(p for p in ps if p is not None)
        if p < TAIL_ALPHA / blocks and (best is None or p * blocks < best.p):
            best = Change(n - j, min(1.0, p * blocks), "newest-runs")
    return best


def pending(values: Sequence[float], start: int = 0) -> float | None:
    """The p of the newest run alone against the values from `start` before it, when it is
    as far off as a block's run must be: a change if the next run confirms it (None when
    it is not, or there are too few runs before)."""
    before = values[start:-1]
    if len(before) < TAIL_BEFORE:
        return None
    p = prediction_p(before, values[-1])
    return p if p is not None and p < TAIL_ALPHA / (TAIL - CONFIRM + 1) else None


def detect(values: Sequence[float], seed: int | None = None) -> list[Change]:
    """Every change point of the series: E-divisive's, then one at the newest runs when
    they differ from the segment they would end (reported p Bonferroni-adjusted)."""
    found = e_divisive(values, seed)
    start = found[-1].at if found else 0
    last = newest(values, start)
    if last is not None and last.at > start:
        found.append(last)
    return found


def largest_t(x: np.ndarray) -> tuple[int, float]:
    """The split of `x` with the largest two-sample Student t (|t|, pooled variance, at
    least MIN_SIZE values a side) and its p under the null law of that largest t for
    series of this length (normal noise, no change)."""
    taus, t = _split_t(x[None, :])
    best = int(np.argmax(t[0]))
    law = null_law(len(x))
    beyond = len(law) - int(np.searchsorted(law, t[0, best] * (1 - TIE), side="left"))
    return int(taus[best]), (1 + beyond) / (len(law) + 1)


def _split_t(xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The splits of series `xs` (one per row) and |t| of each (rows x splits)."""
    n = xs.shape[1]
    z = xs - xs.mean(axis=1, keepdims=True)
    s1 = np.cumsum(z, axis=1)[:, :-1]  # the sums of the first tau values, tau = 1..n-1
    total2 = (z * z).sum(axis=1, keepdims=True)
    taus = np.arange(MIN_SIZE, n - MIN_SIZE + 1)
    m, k = taus.astype(float), (n - taus).astype(float)
    left = s1[:, taus - 1]
    diff = -left / m - left / k  # mean after - mean before (the centred sums are -left)
    within = total2 - left * left / m - left * left / k  # the residual sum of squares
    sp = np.sqrt(np.maximum(within, 0.0) / (n - 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(diff) / (sp * np.sqrt(1 / m + 1 / k))
    t = np.where(sp > 0, t, np.where(np.abs(diff) > 0, np.inf, 0.0))
    return taus, t


@functools.cache
def null_law(n: int) -> np.ndarray:
    """The largest |t| over the splits of NULL_DRAWS normal series of `n` values, sorted:
    the law any series of n values with no change follows under normal noise (the largest
    t does not depend on the level or scale of the noise)."""
    rng = np.random.default_rng(NULL_SEED + n)
    out = []
    for start in range(0, NULL_DRAWS, 20_000):  # in blocks: memory stays small
        _, t = _split_t(rng.standard_normal((min(20_000, NULL_DRAWS - start), n)))
        out.append(t.max(axis=1))
    return np.sort(np.concatenate(out))


def critical_t(n: int) -> float:
    """The largest t a series of `n` values must reach to be a change at ALPHA."""
    law = null_law(n)
    return float(law[min(len(law) - 1, math.ceil((1 - ALPHA) * (len(law) + 1)) - 1)])


def seed_of(x: np.ndarray) -> int:
    return zlib.crc32(np.ascontiguousarray(x).tobytes())
