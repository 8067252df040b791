"""One pair of configs in a comparison: its evidence at every look, before the
comparison's multiplicity and the run's control decide it (decisions.py).

At each look the pair has had (n = 3, 4, ...), two tests of the two configs' values (on
the log scale for ratio metrics: times and rates, every value positive, where a difference
is a ratio and noise grows with the value; on the raw scale otherwise): Welch's t, and
the round-paired t where both configs ran in the same rounds (lookstats.py); the smaller p
at every look calibrated to the design's looks (null_law.py); equivalence by the first
look whose interval is inside the margin (TOST). Counts fsbench reads itself that never
vary are answered exactly, counts of events out of N by Fisher's exact test.

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
from fsbench.analysis.lookstats import (
    PAIRED,
    WELCH,
    blocked_anova_from_moments,
    gate_statistic,
    paired_from_moments,
)
from fsbench.analysis.null_law import GATE, GATE_WELCH, PAIR, PAIR_WELCH
from fsbench.analysis.stats import (
    fisher_exact,
    moments,
    t_quantile,
    welch_anova_from_moments,
    welch_from_moments,
)

ORDER, EQUIVALENT, UNDECIDED = "order", "equivalent", "undecided"
LOG, RAW = "log", "raw"
# The tests a pair is judged by (its `test` names the one whose interval it shows).
TESTS = (WELCH, PAIRED)


@dataclass(frozen=True)
class Side:
    """One config's values in a comparison, with the repetition each came from."""

    label: str
    values: tuple[float, ...]
    reps: tuple[int, ...] = ()
    over: int | None = None  # counts of events out of `over` (crashes): Fisher's test
    # The rounds its reps count ("" unknown): configs of the same rounds (one run's group
    # on one host) ran each rep in one round, a block the round-paired t pairs them by.
    rounds: str = ""

    def upto(self, n: int) -> list[float]:
        """The values of repetitions 1..n (all of them when reps were not recorded)."""
        if not self.reps:
            return list(self.values[:n])
        return [v for v, r in zip(self.values, self.reps, strict=True) if r <= n]

    def by_rep(self, n: int) -> dict[int, float]:
        """The values of repetitions 1..n by repetition (nothing when reps were not
        recorded, or the rounds are unknown)."""
        if not self.reps or not self.rounds:
            return {}
        return {r: v for v, r in zip(self.values, self.reps, strict=True) if r <= n}

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)


def _exp(x: float) -> float:
    """e^x, infinite beyond a float's range (an interval at a confidence next to 1)."""
    return math.exp(x) if x < 709 else math.inf


@dataclass(frozen=True)
class Test:
    """One test of a pair at one look: b's mean minus a's (of the log values, or of the
    values on the raw scale; the round-paired t's mean difference within rounds), its
    standard error, df and two-sided p."""

    name: str  # Welch | paired
    estimate: float
    se: float
    df: float
    p: float


@dataclass(frozen=True)
class Look:
    """A pair's evidence at one look: its tests (Welch's, and the round-paired t where
    the configs shared rounds); on the raw scale `base` is a's mean, the ratio's
    denominator. The look's statistic is the smaller p."""

    n: int
    tests: tuple[Test, ...]
    base: float = 0.0
    # Every value of both configs at or above 0 (a time, a count, bytes): their ratio is
    # too, and its raw-scale interval starts at 0 at the lowest.
    nonnegative: bool = False

    @property
    def p(self) -> float:
        return self.best.p

    @property
    def best(self) -> Test:
        """The test of the smaller p (Welch's on a tie)."""
        return min(self.tests, key=lambda t: t.p)

    def test(self, name: str) -> Test:
        return next(t for t in self.tests if t.name == name)

    def ratio(self, scale: str, name: str | None = None) -> float | None:
        found = self.test(name) if name else self.best
        if scale == LOG:
            return _exp(found.estimate)
        return 1 + found.estimate / self.base if self.base else None

    def interval(
        self, scale: str, confidence: float, name: str | None = None
    ) -> tuple[float, float] | None:
        """The ratio b / a at this confidence by one test (the best by default): its
        inverse, so it excludes 1 exactly when the test's p is below 1 - confidence (None
        on the raw scale when a's mean is zero: no ratio)."""
        found = self.test(name) if name else self.best
        half = t_quantile(found.df, confidence) * found.se if found.se > 0 else 0.0
        lo, hi = found.estimate - half, found.estimate + half
        if scale == LOG:
            return _exp(lo), _exp(hi)
        if not self.base:
            return None
        ends = sorted((1 + lo / self.base, 1 + hi / self.base))
        return (max(0.0, ends[0]) if self.nonnegative else ends[0]), ends[1]

    def narrowest(self, scale: str, confidence: float) -> str:
        """The test whose interval at this confidence is the narrowest (TOST judges it)."""
        return min(self.tests, key=lambda t: t_quantile(t.df, confidence) * t.se).name


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
    test: str = WELCH  # Welch | paired (the test of its interval) | exact | Fisher | resolution
    p: float | None = None  # the order's p, calibrated over the looks (Shaffer-adjusted)
    n: tuple[int, int] = (0, 0)
    needed: int | None = None  # undecided: repetitions per config that would decide
    note: str = ""  # why undecided, or what else holds (an order also within the margin)
    scale: str = LOG  # log | raw: the scale of the test and of `looked`
    looked: tuple[Look, ...] = ()  # the evidence at every look made
    equivalent_at: int | None = None  # the look (its n) that showed equivalence
    equivalent_by: str = ""  # the test whose interval showed it
    law: str = PAIR  # its statistic's law: null_law.PAIR, or PAIR_WELCH without rounds
    noise: float | None = None  # the pair's relative spread (sd of logs, or pooled CV)
    divisor: int = 1  # a step-down's divisor at this pair's step (Holm, Shaffer)
    rank: int = 0  # its place in the step-down (0: the smallest p)

    @property
    def loser(self) -> str:
        return self.b if self.winner == self.a else self.a

    @property
    def tested(self) -> bool:
        return self.test in TESTS and bool(self.looked)

    @property
    def per_look(self) -> dict[int, float]:
        """Its statistic at every look made: the smaller p of its tests."""
        return {look.n: look.p for look in self.looked}

    def shown(self, boundaries: dict[int, float], ordered: bool) -> Pair:
        """The pair with the interval its verdict used: of the first look whose statistic
        is below that look's boundary when it is ordered (the look and test that decided
        it), else of its last look, by the test of the smaller p there, at one minus the
        look's boundary. A look that cannot order at this level (a boundary of 0) shows
        no interval."""
        look = self.looked[-1]
        if ordered:
            look = next(lk for lk in self.looked if lk.p < boundaries.get(lk.n, 0.0))
        boundary = boundaries.get(look.n, 0.0)
        if boundary <= 0:
            return replace(self, ci=None, ratio=look.ratio(self.scale), test=look.best.name)
        return replace(
            self,
            ci=look.interval(self.scale, 1 - boundary),
            ci_level=1 - boundary,
            ratio=look.ratio(self.scale),
            test=look.best.name,
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
    """Both tests of b against a at every look the pair has had (from n = 3): Welch's,
    and the round-paired t over the rounds both configs ran in (two or more)."""
    out = []
    nonnegative = scale == RAW and min((*a.values, *b.values), default=0.0) >= 0
    for n in design.looks(min(a.n, b.n)):
        if n < MIN_REPS:
            continue
        xa, xb = _transform(a.upto(n), scale), _transform(b.upto(n), scale)
        (na, ma, va), (nb, mb, vb) = moments(xa), moments(xb)
        if na < 2 or nb < 2 or (va == 0 and vb == 0):
            continue  # constant on both sides at this look: nothing to test here
        _, df, p = welch_from_moments(mb, vb, nb, ma, va, na)
        se = math.sqrt(va / na + vb / nb)
        tests = [Test(WELCH, mb - ma, se, float(df), float(p))]
        ra, rb = a.by_rep(n), b.by_rep(n)
        if a.rounds == b.rounds and len(common := sorted(set(ra) & set(rb))) >= 2:
            d = _transform([rb[r] for r in common], scale)
            d0 = _transform([ra[r] for r in common], scale)
            _, m, var = moments([y - x for x, y in zip(d0, d, strict=True)])
            mean, se_p, df_p, p_p = paired_from_moments(m, var, len(common))
            tests.append(Test(PAIRED, float(mean), float(se_p), float(df_p), float(p_p)))
        out.append(Look(n, tuple(tests), ma if scale == RAW else 0.0, nonnegative))
    return tuple(out)


def _equivalent_at(
    looked: Sequence[Look], scale: str, design: Design, n: int, law: str
) -> tuple[int, str] | None:
    """The first look whose narrowest interval at the design's equivalence level there
    is inside the margin (TOST), and its test; None when none is."""
    for look in looked:
        level = design.equivalence_level(n, look.n, law)
        name = look.narrowest(scale, level)
        found = look.interval(scale, level, name)
        if found is not None and 1 - design.margin <= found[0] and found[1] <= 1 + design.margin:
            return look.n, name
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
    """One pair's evidence before multiplicity: an exact answer, a Fisher p, or its tests
    at every look with their smaller p calibrated over the looks (`p`, not yet
    adjusted)."""
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
    # Configs that shared rounds have both tests at every look; others (or a look with
    # too few rounds in common) are judged by Welch's alone, at every look.
    law = PAIR if all(len(look.tests) > 1 for look in looked) else PAIR_WELCH
    if law == PAIR_WELCH:
        looked = tuple(replace(look, tests=look.tests[:1]) for look in looked)
    equivalent = _equivalent_at(looked, scale, design, min(n), law)
    return replace(
        pair,
        test=looked[-1].best.name,
        looked=looked,
        law=law,
        p=design.p_value(law, {look.n: look.p for look in looked}, min(n)),
        equivalent=equivalent is not None,
        equivalent_at=equivalent[0] if equivalent else None,
        equivalent_by=equivalent[1] if equivalent else "",
        ratio=looked[-1].ratio(scale),
        noise=_noise(a, b, scale),
    )


def gate_p(
    sides: Sequence[Side], pairs: Sequence[Pair], design: Design, scale: str
) -> float | None:
    """Three configs' gate (null_law.GATE) over their looks, calibrated: at each look
    Welch's ANOVA, the ANOVA with rounds as blocks (over the rounds all three configs ran
    in, when they share rounds) and the three pairs' own statistics; None where a look
    has a config without spread (Welch's ANOVA weighs it infinitely) or a pair was not
    tested there."""
    import numpy as np

    n = min(s.n for s in sides)
    looks = [lk for lk in design.looks(n) if lk >= MIN_REPS]
    by_look = [p.per_look for p in pairs]
    if not looks or any(set(looks) - set(found) for found in by_look):
        return None
    stats = [[moments(_transform(s.upto(lk), scale)) for s in sides] for lk in looks]
    if any(m[0] < 2 or m[2] == 0 for row in stats for m in row):
        return None
    ns, means, variances = (np.array([[m[i] for m in row] for row in stats]) for i in range(3))
    anova = welch_anova_from_moments(means, variances, ns)
    law = gate_law(pairs)
    per_look = {
        lk: float(
            gate_statistic(
                anova[i],
                _blocked_p(sides, lk, scale) if law == GATE else 1.0,
                min(f[lk] for f in by_look),
            )
        )
        for i, lk in enumerate(looks)
    }
    return design.p_value(law, per_look, n)


def gate_law(pairs: Sequence[Pair]) -> str:
    """The law of three configs' gate: with rounds (null_law.GATE) when every pair was
    judged with them, else Welch's alone (GATE_WELCH)."""
    return GATE if all(p.law == PAIR for p in pairs) else GATE_WELCH


def _blocked_p(sides: Sequence[Side], n: int, scale: str) -> float:
    """The blocked ANOVA's p at look n over the rounds every config ran in (1 when they
    share fewer than two, or no rounds at all)."""
    import numpy as np

    found = [s.by_rep(n) for s in sides]
    if len({s.rounds for s in sides}) > 1:
        return 1.0
    common = sorted(set.intersection(*(set(f) for f in found)))
    if len(common) < 2:
        return 1.0
    x = np.array([_transform([f[r] for r in common], scale) for f in found])  # configs x rounds
    round_variance = float(np.var(x.mean(axis=0), ddof=1))
    p = blocked_anova_from_moments(
        x.mean(axis=1), x.var(axis=1, ddof=1), len(common), round_variance
    )
    return float(p)
