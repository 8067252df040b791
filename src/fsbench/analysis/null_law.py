"""What a p is worth when it is the smallest of several: one Monte-Carlo calculator for
every sequential design of fsbench.

A design that looks at its data after several rounds (n = 3, 4, ... up to the looks the
budget bought), a pair judged by the smaller p of two tests, or a gate that looks at every
pair of three configs, takes the smallest of several p-values. Under no difference that
smallest p is smaller than a single test's, so it is judged against its own law: drawn
here by simulation (seeded values on the log scale, where fsbench tests ratio metrics),
under each of a few patterns of configs alike, and the least favourable kept.

Two statistics of a comparison (lookstats.py computes both, for the decisions and here):

- **pair**: per look, the smaller p of Welch's t and the round-paired t of two configs;
- **gate**: three configs, per look the smallest of Welch's ANOVA p, the rounds-blocked
  ANOVA's and three times the smallest pair statistic. When the gate stays shut, every
  pair's statistic at every look is at least a third of the gate's boundary there, so the
  pairs' intervals at that level all hold 1 (decisions.py prints them).

The patterns: configs of equal spread, one or two configs twice as noisy, and a machine
that is sometimes much slower: a quarter of the trials (SLOW_SHARE) slowed far beyond the
noise (SLOW_SHIFTS base spreads: 1.4x at a CV of 4%). Under that last pattern a config
whose three trials all fell slow while another's did not looks like a real difference of
that size: a look at n = 3 cannot tell them apart, so a p no smaller than such a pattern
gives is worth no more than its chance (about 1% a pair), and only a difference well
beyond the slow factor orders at the first look; from n = 5 such runs of slow trials are
rare and the looks regain their power. A machine slower still (more base spreads: a
quieter metric, or slower trials) is not covered; bench/rounds_blocks.py measures the
quick preset's shape with a quarter of its trials 1.4x slower.

The looks are judged on one scale: each look's statistic is replaced by its worst marginal
law (the largest share of draws, over the patterns, at or below it), and the smallest of
those over the looks is judged against its own worst law. Every look then has the same
worst-case rate alone (a Pocock boundary, counted rather than bounded, so the looks' strong
correlation is not wasted), and the first look's boundary falls to nothing at the levels
where only a slow pattern could have crossed it. An observed statistic's calibrated p is
valid at every level (the run-wide control scales its level freely), and the per-look
boundaries for a level are its exact inverse: `calibrated(...) <= level` exactly when some
look's statistic is below its boundary.

Other statistics join the calculator with `register` (the race's ranks:
execute/race/bounds.py), with their smallest over the looks drawn at once. Pure and cached:
a second or so the first time a set of looks is asked for.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fsbench.analysis.lookstats import P_FLOOR, statistics_from_moments

PAIR, GATE = "pair", "gate"
# The same statistics of configs that shared no rounds (two runs, two hosts, two groups):
# Welch's t alone, Welch's ANOVA or Bonferroni; their own laws, so that they are not judged
# against the law of a smaller p they cannot have.
PAIR_WELCH, GATE_WELCH = "pair-welch", "gate-welch"
# Whether a kind's configs shared rounds, and its configs (a gate: three).
_ROUNDS = {PAIR: True, GATE: True, PAIR_WELCH: False, GATE_WELCH: False}
# The share of trials a slow machine slows, and by how many base spreads (log scale):
# 1.4x at a CV of 4%. A second pattern of any slowdown (thousands of spreads) would hold
# every slow machine, but then no first look could order anything at the levels a run's
# control tests at, whatever the difference (the minimum rounds would decide nothing).
SLOW_SHARE = 0.25
SLOW_SHIFTS = (8.0,)
DRAWS = 40_000
SEED = 20261128

Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Pattern:
    """Configs alike in mean: their spreads (standard deviations of the log values), and
    a share of trials slowed by `slow` base spreads."""

    spreads: tuple[float, ...]
    slow_share: float = 0.0
    slow: float = 0.0


def _patterns(k: int) -> tuple[Pattern, ...]:
    """Equal spreads, one (and with three configs two) twice as noisy, and the slow
    machine. Configs up to four times noisier than each other (CV 5% against 20%) then
    see false orders at up to about 6-7% instead of 5% (bench/decide_rules.py measures
    it); holding that pattern to 5% too would cost every comparison power."""
    even = (1.0,) * k
    noisy = tuple((1.0,) * (k - j) + (2.0,) * j for j in range(1, k))
    slow = tuple(Pattern(even, SLOW_SHARE, shift) for shift in SLOW_SHIFTS)
    return (Pattern(even), *(Pattern(s) for s in noisy), *slow)


PATTERNS = {kind: _patterns(3 if kind in (GATE, GATE_WELCH) else 2) for kind in _ROUNDS}


class _Draws:
    """A law's draws under one pattern, round by round, with running sums over the rounds
    so far (each config's values and squares, each pair's within-round differences and
    their squares, the round means and their squares) and the statistic of every look
    reached: seeded by the kind, pattern and round, so every design's looks share the
    same draws (a law for looks 3-10 reuses the one for 3-6)."""

    def __init__(self, kind: str, index: int) -> None:
        self.kind, self.index = kind, index
        self.pattern = PATTERNS[kind][index]
        k = len(self.pattern.spreads)
        self.pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
        self.sums, self.squares = np.zeros((DRAWS, k)), np.zeros((DRAWS, k))
        self.diffs = np.zeros((DRAWS, len(self.pairs)))
        self.diff_squares = np.zeros((DRAWS, len(self.pairs)))
        self.rounds_sum, self.rounds_squares = np.zeros(DRAWS), np.zeros(DRAWS)
        self.rounds = 0
        self.columns: dict[int, Array] = {}

    def round_values(self, r: int) -> Array:
        """Round r's values: (draws, configs), log scale."""
        seed = zlib.crc32(f"{SEED}:{self.kind}:{self.index}:{r}".encode())
        rng = np.random.default_rng(seed)
        spreads = np.asarray(self.pattern.spreads)
        x = rng.standard_normal((DRAWS, len(spreads))) * spreads[None, :]
        if self.pattern.slow_share:
            x = x + (rng.random(x.shape) < self.pattern.slow_share) * self.pattern.slow
        return np.asarray(x, float)

    def column(self, n: int) -> Array:
        """The statistic of the look at n rounds, over the draws."""
        while self.rounds < n:
            x = self.round_values(self.rounds)
            self.rounds += 1
            self.sums += x
            self.squares += x * x
            d = np.stack([x[:, j] - x[:, i] for i, j in self.pairs], axis=1)
            self.diffs += d
            self.diff_squares += d * d
            mean = x.mean(axis=1)
            self.rounds_sum += mean
            self.rounds_squares += mean * mean
            if self.rounds >= 2:
                self.columns[self.rounds] = self._look()
        return self.columns[n]

    def _look(self) -> Array:
        n = self.rounds

        def moments(total: Array, squares: Array) -> tuple[Array, Array]:
            mean = total / n
            return mean, np.maximum(squares - total * mean, 0.0) / (n - 1)

        means, variances = moments(self.sums, self.squares)
        differences = np.stack(moments(self.diffs, self.diff_squares), axis=2)
        _, round_variance = moments(self.rounds_sum, self.rounds_squares)
        pairs, gate = statistics_from_moments(
            means, variances, n, differences, round_variance, _ROUNDS[self.kind]
        )
        return np.asarray(pairs.min(axis=1) if gate is None else gate)


@functools.lru_cache(maxsize=16)
def _draws(kind: str, index: int) -> _Draws:
    return _Draws(kind, index)


@dataclass(frozen=True)
class Law:
    """A statistic's law over some looks under the least favourable of its patterns:
    per look, each pattern's sorted draws (the marginal laws), and per pattern the sorted
    smallest worst-marginal share over the looks (the joint law)."""

    margins: tuple[tuple[Array, ...], ...]  # [look][pattern]
    joint: tuple[Array, ...]  # [pattern]

    @property
    def draws(self) -> int:
        return len(self.margins[0][0])

    def share(self, look: int, x: Array | float) -> Array:
        """The worst marginal law at one look: over the patterns, the largest share of
        draws at or below x ((count + 1) / (draws + 1))."""
        found = [np.searchsorted(m, x, side="right") for m in self.margins[look]]
        return np.asarray((np.max(found, axis=0) + 1) / (self.draws + 1), float)

    def scaled(self, per_look: Array) -> Array:
        """The smallest worst-marginal share over the looks, per row (draws, looks)."""
        shares = [self.share(j, per_look[..., j]) for j in range(per_look.shape[-1])]
        return np.asarray(np.min(np.stack(shares, axis=-1), axis=-1))

    def calibrated(self, per_look: Sequence[float]) -> float:
        s = float(self.scaled(np.asarray(per_look, float)))
        found = max(np.searchsorted(j, s, side="right") for j in self.joint)
        return float(min(1.0, (found + 1) / (self.draws + 1)))

    def boundaries(self, level: float) -> tuple[float, ...]:
        """Per look, the statistic below which the calibrated p is at most `level`."""
        looks = len(self.margins)
        floor = 1 / (self.draws + 1)
        pooled = np.unique(np.concatenate(self.joint))
        worst = np.max([np.searchsorted(j, pooled, side="right") for j in self.joint], axis=0)
        over = np.nonzero((worst + 1) / (self.draws + 1) > level)[0]
        critical = pooled[over[0]] if len(over) else np.inf  # scaled values below it pass
        if level <= 0 or floor > level or critical <= floor:
            return (0.0,) * looks
        out = []
        for j in range(looks):
            values = np.unique(np.concatenate(self.margins[j]))
            reached = np.nonzero(self.share(j, values) >= critical)[0]
            found = float(values[reached[0]]) if len(reached) else 2.0
            # At the floor nothing is below it: the look cannot pass at this level.
            out.append(found if found > P_FLOOR else 0.0)
        return tuple(out)


def calibrated(kind: str, looks: tuple[int, ...], observed: Sequence[float] | float) -> float:
    """The p of an observed statistic: per look of `looks` for the comparisons' kinds
    (looks not made yet: 1), its smallest over them for a registered kind; how often the
    least favourable pattern gives one as extreme under no difference."""
    if kind in PATTERNS:
        per_look = list(observed) if isinstance(observed, Sequence) else [observed]
        per_look += [1.0] * (len(looks) - len(per_look))
        if _welch_alone(kind, looks):
            return float(per_look[0])  # one look of Welch's t alone: its own p is its law
        return _law(kind, looks).calibrated(per_look)
    assert not isinstance(observed, Sequence)
    laws = _registered(kind, looks)
    shares = [(np.searchsorted(law, observed, side="right") + 1) / (len(law) + 1) for law in laws]
    return float(min(1.0, max(shares)))


@functools.lru_cache(maxsize=4096)
def boundaries(kind: str, looks: tuple[int, ...], level: float) -> tuple[float, ...]:
    """Per look of `looks`, the statistic a look must go below for a calibrated p of
    `level` (a comparison's kinds: each look its own)."""
    if _welch_alone(kind, looks):
        # Its own p at most the level: a p equal to it passes.
        return (float(np.nextafter(level, 1.0)),) if level > 0 else (0.0,)
    return _law(kind, looks).boundaries(level)


def _welch_alone(kind: str, looks: tuple[int, ...]) -> bool:
    """One look of one pair judged by Welch's t alone."""
    return kind == PAIR_WELCH and len(looks) == 1


def threshold(kind: str, looks: tuple[int, ...], level: float) -> float:
    """A registered statistic's boundary: the smallest over the looks below which its
    calibrated p is at most `level` (`calibrated(...) <= level` exactly when the observed
    statistic is below it)."""
    if level <= 0:
        return 0.0
    laws = _registered(kind, looks)
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
    """A registered statistic: how to draw its smallest value over some looks under no
    difference, the spread patterns to draw it under (the least favourable kept) and how
    many draws per pattern."""

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
def _registered(kind: str, looks: tuple[int, ...]) -> tuple[Array, ...]:
    """Per spread pattern, the sorted smallest statistic over `looks` of a registered
    statistic's draws under no difference (seeded by the kind, looks and pattern)."""
    stat = _STATISTICS[kind]
    out = []
    for i, spreads in enumerate(stat.spreads):
        rng = np.random.default_rng(zlib.crc32(f"{SEED}:{kind}:{looks}:{i}".encode()))
        out.append(np.sort(stat.sample(rng, stat.draws, spreads, looks)))
    return tuple(out)


@functools.lru_cache(maxsize=64)
def _law(kind: str, looks: tuple[int, ...]) -> Law:
    """A comparison statistic's law over `looks`: its draws under every pattern."""
    columns = [[_draws(kind, i).column(n) for n in looks] for i in range(len(PATTERNS[kind]))]
    margins = tuple(tuple(np.sort(c[j]) for c in columns) for j in range(len(looks)))
    law = Law(margins, ())
    joint = tuple(np.sort(law.scaled(np.stack(c, axis=1))) for c in columns)
    return Law(margins, joint)
