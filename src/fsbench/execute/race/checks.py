"""What a race's look tests, and the bounds a config must keep: Friedman's test over the
rounds (blocks) and Conover's post-hoc comparisons against the best, the paired t on log
values for two configs, and the one-sided t that judges a `--require` constraint. Pure
numpy: values in, p-values out (race.py says why each test is the one)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fsbench.analysis.stats import t_quantile
from fsbench.system.errors import FsbenchError

Array = npt.NDArray[np.float64]


_OPS = ("<=", ">=", "<", ">")
_CONSTRAINT = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(<=|>=|<|>)\s*(\S+)\s*$")
SAFE = "safe"


@dataclass(frozen=True)
class Constraint:
    """A bound a config's mean must keep: `lat_p99_us<5000` (metric, operator, value)."""

    metric: str
    op: str
    value: float

    @classmethod
    def parse(cls, text: str) -> Constraint:
        found = _CONSTRAINT.match(text)
        if found is None:
            raise FsbenchError(
                f"--require {text!r}: expected METRIC<VALUE (or <=, >, >=), or 'safe'"
            )
        metric, op, raw = found.groups()
        try:
            value = float(raw)
        except ValueError:
            raise FsbenchError(f"--require {text!r}: {raw!r} is not a number") from None
        if not math.isfinite(value):
            raise FsbenchError(f"--require {text!r}: the bound must be a finite number")
        return cls(metric, op, value)

    @property
    def upper(self) -> bool:
        """Whether the value is an upper bound (`<`, `<=`)."""
        return self.op in ("<", "<=")

    def holds(self, x: float) -> bool:
        return {
            "<": x < self.value,
            "<=": x <= self.value,
            ">": x > self.value,
            ">=": x >= self.value,
        }[self.op]

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.value:g}"


def parse_requirements(items: Iterable[str]) -> tuple[tuple[Constraint, ...], bool]:
    """`--require` values: the metric constraints, and whether `safe` was asked."""
    constraints: list[Constraint] = []
    safe = False
    for item in items:
        if item.strip() == SAFE:
            safe = True
        else:
            constraints.append(Constraint.parse(item))
    return tuple(constraints), safe


def finite(value: float | None) -> float | None:
    if value is None:
        return None
    x = float(value)
    return x if math.isfinite(x) else None


def paired_p(diff: Array) -> float:
    """Two-sided paired t-test of the mean difference against zero."""
    return float(paired_p_many(np.asarray(diff, dtype=np.float64)[None, :])[0])


def paired_p_many(diff: Array) -> Array:
    """`paired_p` of each row (draws x rounds): the one formula, over many draws."""
    from scipy.special import stdtr

    n = diff.shape[1]
    mean = diff.mean(axis=1)
    sd = diff.std(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / (sd / math.sqrt(n))
    p = 2 * stdtr(n - 1, -np.abs(t))
    return np.asarray(np.where(sd == 0, np.where(mean == 0, 1.0, 0.0), p), dtype=np.float64)


def ranks_within(scores: Array) -> Array:
    """Each value's rank within its block (the last axis), 1 = lowest, ties sharing their
    mean rank; blocks are rows (rounds x configs), or rows of many draws at once."""
    below = (scores[..., :, None] > scores[..., None, :]).sum(axis=-1)
    equal = (scores[..., :, None] == scores[..., None, :]).sum(axis=-1)
    return np.asarray(below + (equal + 1) / 2, dtype=np.float64)


def friedman_p(scores: Array) -> float:
    """Friedman's test over the blocks (rows), its chi-square form with the correction
    for ties, as `scipy.stats.friedmanchisquare` computes it (Conover's T1: (k-1) times
    the rank sums' squared deviations over the ranks' total variance). Computed here from
    the ranks the post-hoc needs anyway: scipy's wrapper costs a millisecond a call, and
    a simulation of a thousand races calls it tens of thousands of times. 1.0 when every
    block ties every config."""
    return float(friedman_p_many(ranks_within(np.asarray(scores, dtype=np.float64))[None])[0])


def friedman_p_many(ranks: Array) -> Array:
    """`friedman_p` of each draw (draws x blocks x configs of ranks within blocks)."""
    from scipy.special import chdtrc

    _, b, k = ranks.shape
    sums = ranks.sum(axis=1)
    total = (ranks**2).sum(axis=(1, 2)) - b * k * (k + 1) ** 2 / 4
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = (k - 1) * ((sums - b * (k + 1) / 2) ** 2).sum(axis=1) / total
    return np.asarray(np.where(total > 0, chdtrc(k - 1, t1), 1.0), dtype=np.float64)


def conover_vs_best(scores: Array) -> tuple[Array, Array, int]:
    """Mean ranks (higher better), each config's one-sided p of being worse than the
    config of the highest rank sum by Conover's t on rank sums, Bonferroni over the k-1
    comparisons, and that config's index."""
    ranks = ranks_within(np.asarray(scores, dtype=np.float64))
    b = ranks.shape[0]
    p, top = conover_vs_best_many(ranks[None])
    return ranks.sum(axis=0) / b, p[0], int(top[0])


def conover_vs_best_many(ranks: Array) -> tuple[Array, Array]:
    """`conover_vs_best` of each draw (draws x blocks x configs of ranks within blocks):
    each config's Bonferroni p against its draw's config of the highest rank sum (1 for
    that config), and that config's index."""
    from scipy.special import stdtr

    draws, b, k = ranks.shape
    sums = ranks.sum(axis=1)
    top = np.argmax(sums, axis=1)
    a1 = (ranks**2).sum(axis=(1, 2))
    var = 2 * (b * a1 - (sums**2).sum(axis=1)) / ((b - 1) * (k - 1))
    gap = sums[np.arange(draws), top][:, None] - sums
    with np.errstate(divide="ignore", invalid="ignore"):
        t = gap / np.sqrt(np.where(var > 0, var, 1.0))[:, None]
    # Every block ranking the configs alike (no variance): any gap is certain.
    one_sided = np.where(
        var[:, None] > 0, stdtr((b - 1) * (k - 1), -t), np.where(gap > 0, 0.0, 1.0)
    )
    p = np.minimum(1.0, one_sided * (k - 1))
    p[np.arange(draws), top] = 1.0
    return np.asarray(p, dtype=np.float64), top


def constraint_p(
    values: Sequence[float], constraint: Constraint, level: float
) -> tuple[float | None, float]:
    """One-sided p that the mean breaks the constraint's bound (small: clearly broken),
    and the one-sided confidence bound on the side of the constraint's bound."""
    from scipy.special import stdtr

    n = len(values)
    if n < 2:
        return None, math.nan
    arr = np.asarray(values, dtype=np.float64)
    mean, sd = float(arr.mean()), float(arr.std(ddof=1))
    se = sd / math.sqrt(n)
    excess = mean - constraint.value if constraint.upper else constraint.value - mean
    quantile = t_quantile(n - 1, 1 - 2 * level)
    bound = mean - quantile * se if constraint.upper else mean + quantile * se
    if se == 0:
        broken = not constraint.holds(mean)
        return (0.0 if broken else 1.0), bound
    return float(stdtr(n - 1, -excess / se)), bound
