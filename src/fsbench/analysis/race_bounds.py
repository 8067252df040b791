"""The level one look of a race tests at: a Pocock boundary counted from the race's own
statistic under no difference, not bounded by spending alpha over the looks.

With k configs alike, the ranks within each round are a random permutation whatever the
values' law (no ties): the Friedman gate and Conover's comparisons with the best, at
every look from `min_rounds` to `max_rounds`, have a joint law free of the configs'
means, spreads and distribution. It is drawn here once per (k, looks) (seeded normal
draws stand for any continuous law), and the level is the constant one at which some look
of an A/A race drops a config with probability alpha (a fifth kept back, as the repetition
loop keeps it: `design.NULL_SAFETY`). A union bound over the looks (alpha spent bit by bit,
Lan & DeMets) wastes their strong correlation: the same rounds are in every later look.
With two configs the look is the paired t on log values, whose law is counted the same way
under normal noise.

Pure: numbers in, a level out; cached per (k, looks), a few tens of milliseconds each.
"""

from __future__ import annotations

import functools

import numpy as np

NULL_DRAWS = 20_000
# A fifth of alpha kept back for what the normal law does not cover (ties, skew).
NULL_SAFETY = 0.8
_CHUNK = 4_000_000  # draws x rounds x configs per array: ~32 MB of float64


def look_level(k: int, min_rounds: int, max_rounds: int, alpha: float) -> float:
    """The p a look with k configs alive must reach to drop one: constant over the looks
    (Pocock), counted so that an A/A race drops anything in at most alpha of races."""
    null = _null_smallest(max(k, 2), min_rounds, max_rounds)
    return null[int(alpha * NULL_SAFETY * len(null))]


@functools.lru_cache(maxsize=512)
def _null_smallest(k: int, min_rounds: int, max_rounds: int) -> tuple[float, ...]:
    """Under no difference, each draw's smallest p over the looks of what would drop a
    config (Friedman's p and the smallest Conover p both below it; the paired t with two
    configs), sorted."""
    rng = np.random.default_rng(20261126 + 7919 * k + 31 * max_rounds + min_rounds)
    chunk = max(1, _CHUNK // (max_rounds * k))
    parts = []
    for start in range(0, NULL_DRAWS, chunk):
        draws = min(chunk, NULL_DRAWS - start)
        x = rng.standard_normal((draws, max_rounds, k))
        smallest = _smallest_paired if k == 2 else _smallest_ranked
        parts.append(smallest(x, min_rounds))
    return tuple(float(v) for v in np.sort(np.concatenate(parts)))


def _smallest_ranked(x: np.ndarray, min_rounds: int) -> np.ndarray:
    from scipy.special import chdtrc, stdtr

    draws, rounds, k = x.shape
    ranks = x.argsort(axis=2).argsort(axis=2) + 1.0
    sums = ranks.cumsum(axis=1)  # rank sums after each round
    smallest = np.ones(draws)
    for b in range(max(2, min_rounds), rounds + 1):
        r = sums[:, b - 1, :]
        squares = b * k * (k + 1) * (2 * k + 1) / 6  # the ranks' squares, no ties
        total = b * k * (k + 1) * (k - 1) / 12
        t1 = (k - 1) * ((r - b * (k + 1) / 2) ** 2).sum(axis=1) / total
        friedman = chdtrc(k - 1, t1)
        var = 2 * (b * squares - (r**2).sum(axis=1)) / ((b - 1) * (k - 1))
        gap = r.max(axis=1) - r.min(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(var > 0, gap / np.sqrt(np.where(var > 0, var, 1.0)), np.inf)
        conover = np.minimum(1.0, stdtr((b - 1) * (k - 1), -t) * (k - 1))
        smallest = np.minimum(smallest, np.maximum(friedman, conover))
    return smallest


def _smallest_paired(x: np.ndarray, min_rounds: int) -> np.ndarray:
    from scipy.special import stdtr

    diff = x[:, :, 0] - x[:, :, 1]
    draws, rounds = diff.shape
    smallest = np.ones(draws)
    for n in range(max(2, min_rounds), rounds + 1):
        part = diff[:, :n]
        t = part.mean(axis=1) / (part.std(axis=1, ddof=1) / np.sqrt(n))
        smallest = np.minimum(smallest, 2 * stdtr(n - 1, -np.abs(t)))
    return smallest
