"""One pair of configs in a comparison: its evidence at every look, before the
comparison's multiplicity and the run's control decide it (decisions.py).

Welch's t-test of the two configs' values at each look the pair has had (n = 3, 4, ...),
on the log scale for ratio metrics (times and rates, every value positive: a difference
there is a ratio, and noise grows with the value) and on the raw scale otherwise; the
smallest p over the looks calibrated to the design's looks (null_law.py); equivalence by
the first look whose interval is inside the margin (TOST). Counts fsbench reads itself
that never vary are answered exactly, counts of events out of N by Fisher's exact test.

Pure functions: values in, evidence out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from fsbench.analysis.design import (
    EXACT_UNITS,
    MIN_REPS,
    MIN_REPS_EXACT,
    Design,
    cv,
)
from fsbench.analysis.null_law import GATE, PAIR, gate_statistic
from fsbench.analysis.stats import (
    fisher_exact,
    moments,
    t_quantile,
    welch_anova_from_moments,
    welch_from_moments,
)

ORDER, EQUIVALENT, UNDECIDED = "order", "equivalent", "undecided"
LOG, RAW = "log", "raw"


@dataclass(frozen=True)
class Side:
    """One config's values in a comparison, with the repetition each came from."""

    label: str
    values: tuple[float, ...]
    reps: tuple[int, ...] = ()
    over: int | None = None  # counts of events out of `over` (crashes): Fisher's test

    def upto(self, n: int) -> list[float]:
        """The values of repetitions 1..n (all of them when reps were not recorded)."""
        if not self.reps:
            return list(self.values[:n])
        return [v for v, r in zip(self.values, self.reps, strict=True) if r <= n]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)


@dataclass(frozen=True)
class Look:
    """A pair's evidence at one look: b's mean minus a's (of the log values, or of the
    values on the raw scale), its standard error, Welch's df and p; on the raw scale
    `base` is a's mean, the ratio's denominator."""

    n: int
    estimate: float
    se: float
    df: float
    p: float
    base: float = 0.0

    def ratio(self, scale: str) -> float | None:
        if scale == LOG:
            return math.exp(self.estimate)
        return 1 + self.estimate / self.base if self.base else None

    def interval(self, scale: str, confidence: float) -> tuple[float, float] | None:
        """The ratio b / a at this confidence: the inverse of the look's own test, so it
        excludes 1 exactly when the test's p is below 1 - confidence (None on the raw
        scale when a's mean is zero: no ratio)."""
        half = t_quantile(self.df, confidence) * self.se if self.se > 0 else 0.0
        lo, hi = self.estimate - half, self.estimate + half
        if scale == LOG:
            return math.exp(lo), math.exp(hi)
        if not self.base:
            return None
        ends = sorted((1 + lo / self.base, 1 + hi / self.base))
        return ends[0], ends[1]


@dataclass(frozen=True)
class Pair:
    """The answer for two configs `a` and `b` (a before b in the table's order)."""

    a: str
    b: str
    kind: str  # order | equivalent | undecided
    winner: str = ""  # the better of the two (an order)
    leader: str = ""  # the better of the two by mean, ordered or not
    equivalent: bool = False  # the ratio's CI is within the margin (TOST)
    ratio: float | None = None  # b / a: of the geometric means on the log scale
    ci: tuple[float, float] | None = None  # CI of the ratio at `ci_level`
    ci_level: float = 0.90
    test: str = "Welch"  # Welch | exact | Fisher | resolution
    p: float | None = None  # the order's p, calibrated over the looks (Shaffer-adjusted)
    n: tuple[int, int] = (0, 0)
    needed: int | None = None  # undecided: repetitions per config that would decide
    note: str = ""  # why undecided, or what else holds (an order also within the margin)
    scale: str = LOG  # log | raw: the scale of the test and of `looked`
    looked: tuple[Look, ...] = ()  # the evidence at every look made
    equivalent_at: int | None = None  # the look (its n) that showed equivalence
    noise: float | None = None  # the pair's relative spread (sd of logs, or pooled CV)
    divisor: int = 1  # a step-down's divisor at this pair's step (Holm, Shaffer)
    rank: int = 0  # its place in the step-down (0: the smallest p)

    @property
    def loser(self) -> str:
        return self.b if self.winner == self.a else self.a

    @property
    def tested(self) -> bool:
        return self.test == "Welch" and bool(self.looked)

    def shown(self, confidence: float, before: float | None = None) -> Pair:
        """The pair with the interval of the first look whose p is below `before` (the
        look that decided it), else of the last look, at `confidence`."""
        look = self.looked[-1]
        if before is not None:
            look = next((lk for lk in self.looked if lk.p < before), look)
        return replace(
            self,
            ci=look.interval(self.scale, confidence),
            ci_level=confidence,
            ratio=look.ratio(self.scale),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "configs": [self.a, self.b],
            "kind": self.kind,
            "better": self.winner or None,
            "ratio": self.ratio,
            "ci": list(self.ci) if self.ci else None,
            "ci_level": self.ci_level if self.ci else None,
            "test": self.test,
            "scale": self.scale if self.tested else None,
            "p": self.p,
            "n": list(self.n),
            "needed": self.needed,
            "note": self.note,
        }


def exact_metric(unit: str | None, resolution: float, sides: Sequence[Side]) -> bool:
    """A count fsbench reads or counts itself: integers with a step of one."""
    return (
        unit in EXACT_UNITS
        and resolution <= 1
        and all(float(v).is_integer() for s in sides for v in s.values)
    )


def _constant(values: Sequence[float]) -> bool:
    return len(values) >= 1 and min(values) == max(values)


def _better(a: Side, b: Side, higher: bool) -> str:
    return a.label if (a.mean > b.mean) == higher else b.label


def scale_of(sides: Sequence[Side]) -> str:
    """Log for ratio metrics (every value positive); raw otherwise (a zero or a sign)."""
    return LOG if all(v > 0 for s in sides for v in s.values) else RAW


def _transform(values: Sequence[float], scale: str) -> list[float]:
    return [math.log(v) for v in values] if scale == LOG else list(values)


def _looks(a: Side, b: Side, design: Design, scale: str) -> tuple[Look, ...]:
    """Welch's test of b against a at every look the pair has had (from n = 3), all
    looks in one computation."""
    import numpy as np

    kept = []  # (n, moments of a, moments of b)
    for n in design.looks(min(a.n, b.n)):
        if n < MIN_REPS:
            continue
        ma_, mb_ = moments(_transform(a.upto(n), scale)), moments(_transform(b.upto(n), scale))
        if ma_[0] < 2 or mb_[0] < 2 or (ma_[2] == 0 and mb_[2] == 0):
            continue  # constant on both sides at this look: nothing to test here
        kept.append((n, ma_, mb_))
    if not kept:
        return ()
    na, ma, sa = (np.array([k[1][i] for k in kept], float) for i in range(3))
    nb, mb, sb = (np.array([k[2][i] for k in kept], float) for i in range(3))
    _, df, p = welch_from_moments(mb, sb, nb, ma, sa, na)
    se = np.sqrt(sa / na + sb / nb)
    return tuple(
        Look(
            n,
            float(mb[i] - ma[i]),
            float(se[i]),
            float(df[i]),
            float(p[i]),
            float(ma[i]) if scale == RAW else 0.0,
        )
        for i, (n, _, _) in enumerate(kept)
    )


def _equivalent_at(looked: Sequence[Look], scale: str, design: Design, n: int) -> int | None:
    """The first look whose interval at the design's equivalence level is inside the
    margin (TOST), or None."""
    level = design.equivalence_level(n)
    for look in looked:
        found = look.interval(scale, level)
        if found is not None and 1 - design.margin <= found[0] and found[1] <= 1 + design.margin:
            return look.n
    return None


def _noise(a: Side, b: Side, scale: str) -> float | None:
    """The pair's noise as a relative spread: the pooled sd of the log values (about the
    CV), or the pooled CV on the raw scale."""
    if scale == LOG:
        variances = [moments(_transform(s.values, LOG))[2] for s in (a, b) if s.n >= 2]
        return math.sqrt(sum(variances) / 2) if len(variances) == 2 else None
    ca, cb = cv(a.values), cv(b.values)
    if ca is None or cb is None:
        return None
    return math.sqrt((ca**2 + cb**2) / 2)


def draft(
    a: Side, b: Side, higher: bool, design: Design, exact: bool, resolution: float, scale: str
) -> Pair:
    """One pair's evidence before multiplicity: an exact answer, a Fisher p, or Welch's
    test at every look with its p calibrated over the looks (`p`, not yet adjusted)."""
    n = (a.n, b.n)
    base = Pair(a.label, b.label, UNDECIDED, n=n, scale=scale)
    if a.over is not None and b.over is not None:
        hits_a, hits_b = int(sum(a.values)), int(sum(b.values))
        rate_a = hits_a / a.over if a.over else 0.0
        rate_b = hits_b / b.over if b.over else 0.0
        pair = replace(
            base, ratio=rate_b / rate_a if rate_a else None, test="Fisher", n=(a.over, b.over)
        )
        if rate_a == rate_b:
            return replace(pair, note=f"the same count ({hits_a} of {a.over} each)")
        leader = a.label if (rate_a > rate_b) == higher else b.label
        return replace(pair, leader=leader, p=fisher_exact(hits_a, a.over, hits_b, b.over))
    ratio = b.mean / a.mean if a.mean else None
    leader = _better(a, b, higher)
    pair = replace(base, ratio=ratio, leader=leader)
    if (
        _constant(a.values)
        and _constant(b.values)
        and min(n) >= (MIN_REPS_EXACT if exact else MIN_REPS)
    ):
        x, y = a.values[0], b.values[0]
        if x == y:
            return replace(
                pair,
                kind=EQUIVALENT,
                equivalent=True,
                ratio=1.0,
                ci=(1.0, 1.0),
                test="exact",
                note=f"{x:g} on every repetition of both",
            )
        if not exact and resolution > 0 and abs(x - y) <= resolution * (1 + 1e-9):
            return replace(
                pair,
                test="resolution",
                note=f"{x:g} vs {y:g}: within the tool's resolution of {resolution:g}",
            )
        return replace(
            pair,
            kind=ORDER,
            winner=leader,
            test="exact",
            note=f"{a.label} {x:g}, {b.label} {y:g} on every repetition",
        )
    if min(n) >= 2 and resolution > 0 and not exact:
        if abs(a.mean - b.mean) <= resolution * (1 + 1e-9):
            return replace(
                pair,
                test="resolution",
                note=f"the means differ by no more than the tool's resolution ({resolution:g})",
            )
    looked = _looks(a, b, design, scale)
    if not looked:
        first = design.n_min if design.sequential else MIN_REPS
        return replace(pair, note=f"n < {max(first, MIN_REPS)}: not tested yet")
    smallest = min(look.p for look in looked)
    equivalent_at = _equivalent_at(looked, scale, design, min(n))
    return replace(
        pair,
        test="Welch",
        looked=looked,
        p=design.p_value(PAIR, smallest, min(n)),
        equivalent=equivalent_at is not None,
        equivalent_at=equivalent_at,
        ratio=looked[-1].ratio(scale),
        noise=_noise(a, b, scale),
    )


def gate_p(
    sides: Sequence[Side], pairs: Sequence[Pair], design: Design, scale: str
) -> float | None:
    """Three configs' gate (null_law.GATE) over their looks, calibrated, from the three
    pairs' own looks and Welch's ANOVA at each; None where a look has a config without
    spread (Welch's ANOVA weighs it infinitely) or a pair was not tested there."""
    import numpy as np

    n = min(s.n for s in sides)
    looks = [lk for lk in design.looks(n) if lk >= MIN_REPS]
    by_look = [{lk.n: lk.p for lk in p.looked} for p in pairs]
    if not looks or any(set(looks) - set(found) for found in by_look):
        return None
    stats = [[moments(_transform(s.upto(lk), scale)) for s in sides] for lk in looks]
    if any(m[0] < 2 or m[2] == 0 for row in stats for m in row):
        return None
    ns, means, variances = (np.array([[m[i] for m in row] for row in stats]) for i in range(3))
    anova = welch_anova_from_moments(means, variances, ns)
    smallest = min(
        gate_statistic(float(anova[i]), min(found[lk] for found in by_look))
        for i, lk in enumerate(looks)
    )
    return design.p_value(GATE, smallest, n)
