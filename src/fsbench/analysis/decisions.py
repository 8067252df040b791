"""Deciding a comparison: every pair of configs ordered, equivalent or undecided.

One comparison is the configs measured in the same conditions (one workload step, one
combination of parameters and knobs, one metric). Each pair of its configs gets one of
three answers, each with its evidence:

- **order**: one is better. Welch's t-test over the repetitions, corrected over the
  comparison's pairs by Holm's step-down with Shaffer's (1986) logical constraints (three
  configs: alpha/3, then alpha, alpha); for counts fsbench reads itself (extents, files)
  that do not vary between repetitions, the counts themselves (2 extents are not 3: no
  test needed); for counts of events out of N (damaged crashes of N power cuts),
  Fisher's exact test.
- **equivalent**: the ratio of the means has a 90% confidence interval inside
  1 ± the plan's margin (two one-sided tests, TOST; Schuirmann 1987).
- **undecided**: neither, with the repetitions per config that would decide it at the
  noise measured.

How often the data were looked at, and so what a p is worth, is the run's design
(design.py: a look after every round, or one look).

Across the run's comparisons, false orders are controlled too (Benjamini & Bogomolov
2014): the comparisons with any difference are selected by Benjamini-Hochberg at 5% over
the run's comparisons, and the pairs of a selected comparison are ordered at the level
5% x selected / comparisons. An A/A run with twenty metrics then owes no false order to
their number (under no difference at all, any order has probability at most 5%).

Pure functions: values in, decisions out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from fsbench.analysis.design import (
    ALPHA,
    EXACT_UNITS,
    MIN_REPS_EXACT,
    NEEDED_LIMIT,
    Design,
    cv,
    needed_reps,
)
from fsbench.analysis.pvalues import fmt_p
from fsbench.analysis.stats import fisher_exact, moments, shaffer, t_quantile, welch

ORDER, EQUIVALENT, UNDECIDED = "order", "equivalent", "undecided"


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
class Pair:
    """The answer for two configs `a` and `b` (a before b in the table's order)."""

    a: str
    b: str
    kind: str  # order | equivalent | undecided
    winner: str = ""  # the better of the two (an order)
    leader: str = ""  # the better of the two by mean, ordered or not
    equivalent: bool = False  # the ratio's CI is within the margin (TOST)
    ratio: float | None = None  # mean(b) / mean(a)
    ci: tuple[float, float] | None = None  # CI of the ratio at `ci_level`
    ci_level: float = 0.90
    test: str = "Welch"  # Welch | exact | Fisher | resolution
    p: float | None = None  # the order's p: per look, Holm over the pairs; then BH level
    n: tuple[int, int] = (0, 0)
    needed: int | None = None  # undecided: repetitions per config that would decide
    note: str = ""  # why undecided, or what else holds (an order also within the margin)

    @property
    def loser(self) -> str:
        return self.b if self.winner == self.a else self.a

    def as_dict(self) -> dict[str, Any]:
        return {
            "configs": [self.a, self.b],
            "kind": self.kind,
            "better": self.winner or None,
            "ratio": self.ratio,
            "ci": list(self.ci) if self.ci else None,
            "ci_level": self.ci_level if self.ci else None,
            "test": self.test,
            "p": self.p,
            "n": list(self.n),
            "needed": self.needed,
            "note": self.note,
        }


def _welch_p(a: Sequence[float], b: Sequence[float]) -> float | None:
    found = welch(a, b)
    return None if found is None else found.p


def _ratio_ci(
    a: Sequence[float], b: Sequence[float], level: float
) -> tuple[float | None, tuple[float, float] | None]:
    """mean(b) / mean(a) and its CI at `level` (delta method on the log scale, Welch df)."""
    (na, ma, va), (nb, mb, vb) = moments(a), moments(b)
    if ma == 0 or mb == 0 or (ma < 0) != (mb < 0):
        return None, None
    ratio = mb / ma
    if na < 2 or nb < 2:
        return ratio, None
    sa, sb = va / na / ma**2, vb / nb / mb**2
    rel = math.sqrt(sa + sb)
    if rel == 0:
        return ratio, (ratio, ratio)
    df = (sa + sb) ** 2 / (sa**2 / (na - 1) + sb**2 / (nb - 1))
    half = t_quantile(df, level) * rel
    return ratio, (ratio * math.exp(-half), ratio * math.exp(half))


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


@dataclass(frozen=True)
class _Looked:
    """A pair's evidence over the looks: the smallest p / share (its adjusted p before
    Holm), and the look that showed equivalence, if one did."""

    p: float | None
    equivalent_at: int | None
    ratio: float | None
    ci: tuple[float, float] | None
    level: float


def _look(a: Side, b: Side, design: Design) -> _Looked:
    """Welch's p and the ratio's interval at every look the pair has had."""
    n = min(a.n, b.n)
    smallest: float | None = None
    level = design.ci_level
    equivalent_at: int | None = None
    ratio: float | None = None
    ci: tuple[float, float] | None = None
    for look in design.looks(n):
        va, vb = a.upto(look), b.upto(look)
        if len(va) < 2 or len(vb) < 2:
            continue
        p = _welch_p(va, vb)
        if p is not None:
            smallest = p if smallest is None else min(smallest, p)
        if equivalent_at is None:
            ratio, ci = _ratio_ci(va, vb, level)
            if ci is not None and 1 - design.margin <= ci[0] and ci[1] <= 1 + design.margin:
                equivalent_at = look
    if ratio is None:  # no look yet (a sequential design tests from n_min): no interval
        ratio = _ratio_ci(a.values, b.values, level)[0]
    p_adj = None if smallest is None else design.p_value(smallest)
    return _Looked(p_adj, equivalent_at, ratio, ci, level)


def _pair(
    a: Side,
    b: Side,
    higher: bool,
    design: Design,
    exact: bool,
    resolution: float,
    explain: bool,
    pairs: int = 1,
) -> tuple[Pair, float | None]:
    """One pair's evidence before multiplicity, and the p of its test still to be
    corrected (None: no test; the answer is exact, or nothing can be said)."""
    n = (a.n, b.n)
    base = Pair(a.label, b.label, UNDECIDED, n=n)
    if a.over is not None and b.over is not None:
        hits_a, hits_b = int(sum(a.values)), int(sum(b.values))
        rate_a = hits_a / a.over if a.over else 0.0
        rate_b = hits_b / b.over if b.over else 0.0
        pair = replace(
            base, ratio=rate_b / rate_a if rate_a else None, test="Fisher", n=(a.over, b.over)
        )
        if rate_a == rate_b:
            return replace(pair, note=f"the same count ({hits_a} of {a.over} each)"), None
        leader = a.label if (rate_a > rate_b) == higher else b.label
        return replace(pair, leader=leader), fisher_exact(hits_a, a.over, hits_b, b.over)
    ratio = b.mean / a.mean if a.mean else None
    leader = _better(a, b, higher)
    pair = replace(base, ratio=ratio, leader=leader)
    if (
        _constant(a.values)
        and _constant(b.values)
        and min(n) >= (MIN_REPS_EXACT if exact else design.n_min)
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
            ), None
        if not exact and resolution > 0 and abs(x - y) <= resolution * (1 + 1e-9):
            return replace(
                pair,
                test="resolution",
                note=f"{x:g} vs {y:g}: within the tool's resolution of {resolution:g}",
            ), None
        return replace(
            pair,
            kind=ORDER,
            winner=leader,
            test="exact",
            note=f"{a.label} {x:g}, {b.label} {y:g} on every repetition",
        ), None
    if min(n) < 2:
        return replace(pair, note="too few repetitions to test"), None
    looked = _look(a, b, design)
    equivalent = looked.equivalent_at is not None
    # The interval shown: the one equivalence was judged on where it held; else the one
    # an order is judged at (one look's level, shared among the comparison's pairs as the
    # first step of Holm shares it), so that an undecided pair's interval holds 1 unless
    # the run's control over its comparisons is what kept it open.
    ci, level = looked.ci, looked.level
    if not equivalent:
        level = 1 - design.nominal_alpha / pairs
        ci = _ratio_ci(a.values, b.values, level)[1]
    pair = replace(pair, ci=ci, ci_level=level, ratio=looked.ratio or ratio, equivalent=equivalent)
    if resolution > 0 and not exact and abs(a.mean - b.mean) <= resolution * (1 + 1e-9):
        return replace(
            pair,
            test="resolution",
            equivalent=False,
            note=f"the means differ by no more than the tool's resolution ({resolution:g})",
        ), None
    if design.sequential and min(n) < design.n_min:
        pair = replace(pair, note=f"not tested before n={design.n_min}")
    if explain:
        # At the level one look of this design tests a pair among `pairs` (Bonferroni, as
        # Holm is at worst), and never fewer repetitions than the pair already has.
        each = design.nominal_alpha / pairs
        needed = needed_reps(
            _pooled_cv(a, b), (ratio or 1.0) - 1, design.margin, each, design.ci_level
        )
        if needed is not None:
            needed = max(needed, min(n) + 1)
        pair = replace(pair, needed=needed if ratio else None)
    return pair, looked.p


def _pooled_cv(a: Side, b: Side) -> float | None:
    ca, cb = cv(a.values), cv(b.values)
    if ca is None or cb is None:
        return None
    return math.sqrt((ca**2 + cb**2) / 2)


@dataclass(frozen=True)
class Decision:
    """The answers of one comparison: its pairs, and the configs ranked in tiers (best
    first; the configs of a tier are not ordered among themselves)."""

    metric: str | None
    unit: str | None
    better: str  # higher | lower
    labels: tuple[str, ...]  # the configs compared, in table order
    means: tuple[float, ...]
    pairs: tuple[Pair, ...]
    design: Design = field(default_factory=Design)
    family_p: float | None = None  # the smallest Holm-adjusted order p of the comparison
    family_q: float | None = None  # the same, Benjamini-Hochberg-adjusted over the run's
    level: float = ALPHA  # the level its pairs were ordered at (after the run's BH)
    headline: bool = True
    key: tuple[str, ...] = ()  # chain, workload, dimensions (JSON), metric

    @property
    def kind(self) -> str:
        kinds = {p.kind for p in self.pairs}
        if ORDER in kinds:
            return ORDER
        if kinds == {EQUIVALENT}:
            return EQUIVALENT
        return UNDECIDED

    @property
    def decided(self) -> int:
        return sum(1 for p in self.pairs if p.kind != UNDECIDED)

    @property
    def complete(self) -> bool:
        return self.decided == len(self.pairs)

    def pair(self, x: str, y: str) -> Pair | None:
        return next((p for p in self.pairs if {p.a, p.b} == {x, y}), None)

    @property
    def tiers(self) -> list[list[str]]:
        """Labels best first, split where every config before the split is ordered
        better than every config after it."""
        higher = self.better == "higher"
        mean = dict(zip(self.labels, self.means, strict=True))
        ranked = sorted(self.labels, key=lambda x: mean[x], reverse=higher)
        tiers: list[list[str]] = [[ranked[0]]] if ranked else []
        for i in range(1, len(ranked)):
            split = all(
                (p := self.pair(x, y)) is not None and p.kind == ORDER and p.winner == x
                for x in ranked[:i]
                for y in ranked[i:]
            )
            if split:
                tiers.append([ranked[i]])
            else:
                tiers[-1].append(ranked[i])
        return tiers

    @property
    def best(self) -> str:
        """The one config ordered better than every other ("" when there is none)."""
        tiers = self.tiers
        return tiers[0][0] if len(tiers) > 1 and len(tiers[0]) == 1 else ""

    @property
    def worst(self) -> str:
        tiers = self.tiers
        return tiers[-1][0] if len(tiers) > 1 and len(tiers[-1]) == 1 else ""

    def _tier_text(self, tier: list[str]) -> str:
        if len(tier) == 1:
            return tier[0]
        inside = [self.pair(x, y) for i, x in enumerate(tier) for y in tier[i + 1 :]]
        if all(p is not None and p.kind == EQUIVALENT for p in inside):
            return " ≈ ".join(tier)
        return "{" + ", ".join(tier) + "}"

    def _step(self, upper: list[str], lower: list[str]) -> str:
        """How much better one tier is than the next: the range of the pairs' factors."""
        mean = dict(zip(self.labels, self.means, strict=True))
        factors = []
        for x in upper:
            for y in lower:
                hi, lo = max(abs(mean[x]), abs(mean[y])), min(abs(mean[x]), abs(mean[y]))
                factors.append(hi / lo if lo else math.inf)
        return _factor_range(min(factors), max(factors))

    @property
    def ranking(self) -> str:
        """'ext4 ≈ xfs > btrfs (4.3-4.7×)', 'xfs < btrfs (1.5×) < ext4 (2.3×)': best
        first, the sign as the values compare, each step with how far apart it is."""
        tiers = self.tiers
        sign = " > " if self.better == "higher" else " < "
        text = self._tier_text(tiers[0]) if tiers else ""
        for upper, lower in zip(tiers, tiers[1:], strict=False):
            text += f"{sign}{self._tier_text(lower)} ({self._step(upper, lower)})"
        # Orders inside a tier (a config that beats one but not another), said after it.
        inner = [
            f"{p.winner}{sign}{p.loser} ({self._step([p.winner], [p.loser])})"
            for tier in tiers
            for p in self.pairs
            if p.kind == ORDER and p.a in tier and p.b in tier
        ]
        return "; ".join([text, *inner])

    @property
    def short(self) -> str:
        """For a table's verdict row."""
        if self.kind == ORDER:
            return self.ranking
        if self.kind == EQUIVALENT:
            if all(p.test == "exact" for p in self.pairs):  # the same count every time
                return " = ".join(self.labels)
            return f"{' ≈ '.join(self.labels)} (±{self.design.margin:.0%})"
        open_ = [p for p in self.pairs if p.kind == UNDECIDED]
        same = [f"{p.a} ≈ {p.b}" for p in self.pairs if p.kind == EQUIVALENT]
        if same:  # some pairs answered: say them, and that the rest is open
            return "; ".join(same) + f"; {len(open_)} pair{'s' if len(open_) > 1 else ''} undecided"
        needed = [p.needed for p in open_]
        if any(p.test == "resolution" for p in open_) and all(n is None for n in needed):
            return "undecided: within the tool's resolution"
        if needed and all(n is not None for n in needed):
            return f"undecided: n≈{max(n or 0 for n in needed)} would decide"
        if any(p.note == "too few repetitions to test" for p in open_):
            return "undecided: too few repetitions"
        return "undecided: beyond 1000 repetitions at this noise"

    def pair_text(self, p: Pair) -> str:
        """One pair's answer with its evidence, in words."""
        if p.test == "Fisher":
            if p.kind == ORDER:
                return (
                    f"{p.winner} better than {p.loser} (Fisher's exact test {_p_text(p.p)}, Holm)"
                )
            return f"{p.a} vs {p.b}: undecided ({p.note or 'Fisher ' + _p_text(p.p)})"
        if p.kind == ORDER:
            factor = _pair_factor(p)
            if p.test == "exact":
                return f"{p.winner} better than {p.loser} ({p.note}; {factor})"
            also = f"; also within ±{self.design.margin:.0%}" if p.equivalent else ""
            return (
                f"{p.winner} better than {p.loser} ({factor}, Welch {_p_text(p.p)}, "
                f"Holm{'+BH' if self.level < ALPHA else ''}{also})"
            )
        if p.kind == EQUIVALENT:
            if p.test == "exact":
                return f"{p.a} = {p.b} ({p.note})"
            return (
                f"{p.a} ≈ {p.b} (ratio {_fmt_ratio(p.ratio)}, {_fmt_ci(p)}, within "
                f"±{self.design.margin:.0%})"
            )
        why = p.note or (
            f"ratio {_fmt_ratio(p.ratio)}, {_fmt_ci(p)}" if p.ci else "a mean of zero: no ratio"
        )
        if p.needed is not None:
            return f"{p.a} vs {p.b}: undecided ({why}; n≈{p.needed} per config would decide)"
        if p.test in ("resolution", "exact") or p.note == "too few repetitions to test":
            return f"{p.a} vs {p.b}: undecided ({why})"
        if p.ratio is None:
            return f"{p.a} vs {p.b}: undecided ({why})"
        return f"{p.a} vs {p.b}: undecided ({why}; more than {NEEDED_LIMIT} repetitions needed)"

    @property
    def text(self) -> str:
        """The ranking and every pair's evidence, in one paragraph."""
        head = {
            ORDER: self.ranking,
            EQUIVALENT: f"all equivalent within ±{self.design.margin:.0%}",
            UNDECIDED: "undecided",
        }[self.kind]
        return f"{head}: " + "; ".join(self.pair_text(p) for p in self.pairs)

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "unit": self.unit,
            "better": self.better,
            "configs": list(self.labels),
            "means": list(self.means),
            "kind": self.kind,
            "ranking": self.ranking,
            "tiers": self.tiers,
            "best": self.best or None,
            "worst": self.worst or None,
            "decided": self.decided,
            "pairs": [p.as_dict() for p in self.pairs],
            "level": self.level,
            "margin": self.design.margin,
            "sequential": self.design.sequential,
            "text": self.text,
        }


def _fmt_ratio(r: float | None) -> str:
    return "n/a" if r is None else f"{r:.3g}"


def _fmt_ci(p: Pair) -> str:
    if not p.ci:
        return "no CI"
    level = f"{100 * p.ci_level:.3g}%"
    return f"{level} CI {p.ci[0]:.3g}-{p.ci[1]:.3g}"


def _factor_range(lo: float, hi: float) -> str:
    def one(f: float) -> str:
        if not math.isfinite(f):
            return "∞"
        return f"{f:.2g}×" if f >= 1.095 else f"{100 * (f - 1):.2g}%"

    a, b = one(lo), one(hi)
    if a == b:
        return a
    if a.endswith("×") and b.endswith("×"):
        return f"{a[:-1]}-{b}"
    return f"{a}-{b}"


def _pair_factor(p: Pair) -> str:
    if p.ratio is None or p.ratio <= 0:
        return "n/a"
    f = max(p.ratio, 1 / p.ratio)
    return _factor_range(f, f) + (" apart" if f < 1.095 else "")


def decide(
    sides: Sequence[Side],
    *,
    better: str,
    metric: str | None = None,
    unit: str | None = None,
    resolution: float = 0.0,
    design: Design | None = None,
    headline: bool = True,
    key: tuple[str, ...] = (),
    explain: bool = True,
) -> Decision | None:
    """The answers for one comparison's configs (in table order), with Holm over its
    pairs; the run's own multiplicity is `control_run`'s. None with fewer than two configs
    that have values, or a metric with no direction."""
    design = design or Design()
    usable = [s for s in sides if s.values]
    if len(usable) < 2 or better not in ("higher", "lower"):
        return None
    higher = better == "higher"
    exact = exact_metric(unit, resolution, usable)
    count = len(usable) * (len(usable) - 1) // 2
    drafts: list[tuple[Pair, float | None]] = [
        _pair(a, b, higher, design, exact, resolution, explain, count)
        for i, a in enumerate(usable)
        for b in usable[i + 1 :]
    ]
    # Pairs answered without a test count in the step-down as what they are: an exact
    # order rejected for certain, anything else never rejected.
    certain = [p if p is not None else (0.0 if pair.kind == ORDER else 1.0) for pair, p in drafts]
    stepped = shaffer(certain, len(usable))
    pairs = []
    for (pair, p), q in zip(drafts, stepped, strict=True):
        pairs.append(replace(pair, p=q) if p is not None else pair)
    adjusted = [q if p is not None else None for (_, p), q in zip(drafts, stepped, strict=True)]
    tested = [p for p in adjusted if p is not None]
    exact_orders = any(p.kind == ORDER and p.test == "exact" for p in pairs)
    family = 0.0 if exact_orders else (min(tested) if tested else None)
    decision = Decision(
        metric=metric,
        unit=unit,
        better=better,
        labels=tuple(s.label for s in usable),
        means=tuple(s.mean for s in usable),
        pairs=tuple(pairs),
        design=design,
        family_p=family,
        headline=headline,
        key=key,
    )
    return at_level(decision, design.alpha)


def _p_text(p: float | None) -> str:
    return "p n/a" if p is None else fmt_p(p)


def at_level(decision: Decision, level: float) -> Decision:
    """The decision with its tested pairs ordered where their p is at most `level`, the
    others equivalent or undecided as their evidence says. Exact answers stay."""
    pairs = []
    for p in decision.pairs:
        if p.test in ("Welch", "Fisher"):
            if p.p is not None and level > 0 and p.p <= level:
                p = replace(p, kind=ORDER, winner=p.leader)
            else:
                p = replace(p, kind=EQUIVALENT if p.equivalent else UNDECIDED, winner="")
        pairs.append(p)
    return replace(decision, pairs=tuple(pairs), level=level)
