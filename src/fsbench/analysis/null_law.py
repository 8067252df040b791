"""What a p is worth when it is the smallest of several: one Monte-Carlo calculator for
every sequential design of fsbench.

A design that looks at its data after several rounds (n = 3, 4, ... up to the looks the
budget bought), or a gate that looks at every pair of three configs, takes the smallest
of several p-values. Under no difference that smallest p is smaller than a single test's,
so it is judged against its own law: drawn here by simulation (seeded normal values on the
log scale, where fsbench tests ratio metrics), under each of a few patterns of spread
between the configs, and the least favourable pattern kept. An observed statistic's
calibrated p is how often the worst pattern gives one as small (a valid p at every level,
so the run-wide control can scale its level freely), and the per-look threshold for a level
is the matching quantile: a Pocock boundary (one constant level per look) counted, not
bounded, so the looks' strong correlation is not wasted.

Two statistics:

- **pair**: the smallest Welch p of two configs over the looks.
- **gate**: three configs, per look the smaller of Welch's ANOVA p and three times the
  smallest pair's Welch p (the ANOVA or a Bonferroni gate over the pairs), smallest over
  the looks. When the gate stays shut, every pair's p at every look is at least a third of
  the threshold, so the pairs' intervals at that level all hold 1 (decisions.py prints them).

A single look of one pair needs no law: Welch's own p is its law. Other statistics join
the calculator with `register` (the race's ranks: execute/race/bounds.py). Pure and cached: a few
hundred milliseconds the first time a set of looks is asked for.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fsbench.analysis.stats import welch_anova_from_moments, welch_from_moments

PAIR, GATE = "pair", "gate"
# Spreads (standard deviations of the log values) between the configs of a comparison:
# equal, and one or two configs twice as noisy; the least favourable is kept. Configs up
# to four times noisier than each other (CV 5% against 20%) then see false orders at up
# to about 6-7% instead of 5% (the simulations measure it: bench/decide_rules.py); holding
# that pattern to 5% too would cost every comparison power (looks 3-4: a per-look
# boundary of 0.025 instead of 0.033).
SPREADS = {
    PAIR: ((1.0, 1.0), (1.0, 2.0)),
    GATE: ((1.0, 1.0, 1.0), (1.0, 1.0, 2.0), (1.0, 2.0, 2.0)),
}
DRAWS = 40_000
SEED = 20261128

Array = npt.NDArray[np.float64]


def gate_statistic(anova_p: float, smallest_pair_p: float) -> float:
    """One look's gate: the smaller of the ANOVA's p and the Bonferroni p of the pairs."""
    return min(anova_p, 3 * smallest_pair_p, 1.0)


def calibrated(kind: str, looks: tuple[int, ...], observed: float) -> float:
    """The p of an observed smallest statistic: how often the least favourable spread
    pattern gives one as small under no difference ((count + 1) / (draws + 1))."""
    if kind == PAIR and len(looks) == 1:
        return observed  # one look of one pair: Welch's own p
    laws = _laws(kind, looks)
    shares = [(np.searchsorted(law, observed, side="right") + 1) / (len(law) + 1) for law in laws]
    return float(min(1.0, max(shares)))


def threshold(kind: str, looks: tuple[int, ...], level: float) -> float:
    """The per-look p below which the statistic's calibrated p is at most `level`: the
    boundary every look is held to (`calibrated(...) <= level` exactly when the observed
    statistic is below it)."""
    if level <= 0:
        return 0.0
    if kind == PAIR and len(looks) == 1:
        return level
    laws = _laws(kind, looks)
    draws = len(laws[0])
    allowed = int(np.floor(level * (draws + 1) + 1e-9)) - 1  # draws at or below it
    if allowed < 0:
        return 0.0
    if allowed >= draws:
        return 1.0
    return float(min(law[allowed] for law in laws))


Sampler = Callable[[np.random.Generator, int, tuple[float, ...], tuple[int, ...]], Array]


@dataclass(frozen=True)
class Statistic:
    """A statistic the calculator counts the law of: how to draw its smallest value over
    some looks under no difference, the spread patterns to draw it under (the least
    favourable kept) and how many draws per pattern."""

    sample: Sampler
    spreads: tuple[tuple[float, ...], ...]
    draws: int = DRAWS


_STATISTICS: dict[str, Statistic] = {}


def register(
    kind: str, sample: Sampler, spreads: tuple[tuple[float, ...], ...], draws: int = DRAWS
) -> None:
    """Another statistic for the calculator (the race's: execute/race/bounds.py); idempotent."""
    _STATISTICS.setdefault(kind, Statistic(sample, spreads, draws))


@functools.lru_cache(maxsize=256)
def _laws(kind: str, looks: tuple[int, ...]) -> tuple[Array, ...]:
    """Per spread pattern, the sorted smallest statistic over `looks` of the statistic's
    draws under no difference (seeded by the kind, looks and pattern)."""
    stat = _STATISTICS[kind]
    out = []
    for i, spreads in enumerate(stat.spreads):
        seed = zlib.crc32(f"{SEED}:{kind}:{looks}:{i}".encode())
        out.append(np.sort(stat.sample(np.random.default_rng(seed), stat.draws, spreads, looks)))
    return tuple(out)


def _sample(kind: str) -> Sampler:
    def sample(
        rng: np.random.Generator, draws: int, spreads: tuple[float, ...], looks: tuple[int, ...]
    ) -> Array:
        return smallest_over_looks(kind, looks, spreads, draws, rng)

    return sample


def smallest_over_looks(
    kind: str,
    looks: tuple[int, ...],
    spreads: tuple[float, ...],
    draws: int,
    rng: np.random.Generator,
) -> Array:
    """`draws` values of the pair's or the gate's smallest over the looks, configs alike
    in mean with these spreads: the law's sample."""
    k = len(spreads)
    x = rng.standard_normal((draws, k, max(looks))) * np.asarray(spreads)[None, :, None]
    smallest = np.ones(draws)
    for n in looks:
        part = x[:, :, :n]
        means, variances = part.mean(axis=2), part.var(axis=2, ddof=1)
        smallest = np.minimum(smallest, look_statistic(kind, means, variances, n))
    return smallest


def look_statistic(kind: str, means: Array, variances: Array, n: int) -> Array:
    """One look's statistic over draws (rows) of k configs' means and variances, n each."""
    pairs = [
        welch_from_moments(means[:, i], variances[:, i], n, means[:, j], variances[:, j], n)[2]
        for i in range(means.shape[1])
        for j in range(i + 1, means.shape[1])
    ]
    smallest: Array = np.min(np.stack(pairs, axis=1), axis=1)
    if kind == PAIR:
        return smallest
    anova: Array = welch_anova_from_moments(means, variances, np.full(means.shape, float(n)))
    gate: Array = np.minimum(np.minimum(anova, 3 * smallest), 1.0)
    return gate


for _kind in (PAIR, GATE):
    register(_kind, _sample(_kind), SPREADS[_kind])
