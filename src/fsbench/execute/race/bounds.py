"""The level one look of a race tests at: a Pocock boundary counted from the race's own
statistic under no difference, by fsbench's one calculator of such laws (null_law.py).

With k configs alike, the ranks within each round are a random permutation whatever the
values' law (no ties): the Friedman gate and Conover's comparisons with the best, at
every look from `min_rounds` to `max_rounds`, have a joint law free of the configs'
means, spreads and distribution, so seeded normal draws stand for any continuous law
and one spread pattern is all there is. What a look would drop on is computed by the very
functions a race runs (execute/race/checks.py, over many draws at once), and the level is the
constant one at which some look of an A/A race drops a config with probability alpha (a
fifth kept back for ties and the counting error: NULL_SAFETY). A union bound over the looks
(alpha spent bit by bit, Lan & DeMets) wastes their strong correlation: the same rounds
are in every later look. With two configs the look is the paired t on log values, whose
law is counted the same way under normal noise.

Pure: numbers in, a level out; cached per (k, looks).
"""

from __future__ import annotations

import numpy as np

from fsbench.analysis import null_law
from fsbench.execute.race.checks import (
    Array,
    conover_vs_best_many,
    friedman_p_many,
    paired_p_many,
    ranks_within,
)

# A fifth of alpha kept back for what the normal law does not cover (ties, skew).
NULL_SAFETY = 0.8
RACE_DRAWS = 20_000
_CHUNK = 4_000_000  # draws x rounds x configs per array: ~32 MB of float64


def look_level(k: int, min_rounds: int, max_rounds: int, alpha: float) -> float:
    """The p a look with k configs alive must reach to drop one: constant over the looks
    (Pocock), counted so that an A/A race drops anything in at most alpha of races."""
    kind = race_kind(max(k, 2))
    looks = tuple(range(max(2, min_rounds), max_rounds + 1))
    return null_law.threshold(kind, looks, alpha * NULL_SAFETY)


def race_kind(k: int) -> str:
    """The race's statistic with k configs alive, registered with the calculator."""
    kind = f"race-{k}"
    null_law.register(
        kind, _smallest_paired if k == 2 else _smallest_ranked, ((1.0,) * k,), RACE_DRAWS
    )
    return kind


def _smallest_ranked(
    rng: np.random.Generator, draws: int, spreads: tuple[float, ...], looks: tuple[int, ...]
) -> Array:
    """Per draw, the smallest p over the looks of what would drop a config: Friedman's p
    and the smallest Conover p both below it."""
    k = len(spreads)
    out = []
    chunk = max(1, _CHUNK // (max(looks) * k))
    for start in range(0, draws, chunk):
        ranks = ranks_within(rng.standard_normal((min(chunk, draws - start), max(looks), k)))
        smallest = np.ones(ranks.shape[0])
        for b in looks:
            part = ranks[:, :b, :]
            conover, _ = conover_vs_best_many(part)
            smallest = np.minimum(smallest, np.maximum(friedman_p_many(part), conover.min(axis=1)))
        out.append(smallest)
    return np.concatenate(out)


def _smallest_paired(
    rng: np.random.Generator, draws: int, spreads: tuple[float, ...], looks: tuple[int, ...]
) -> Array:
    """Per draw, the smallest paired-t p over the looks (two configs)."""
    x = rng.standard_normal((draws, max(looks), 2))
    diff = x[:, :, 0] - x[:, :, 1]
    smallest = np.ones(draws)
    for n in looks:
        smallest = np.minimum(smallest, paired_p_many(diff[:, :n]))
    return smallest
