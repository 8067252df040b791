"""Deciding a comparison: every pair of configs ordered, equivalent or undecided.

One comparison is the configs measured in the same conditions (one workload step, one
combination of parameters and knobs, one metric). Each pair of its configs gets one of
three answers, each with its evidence:

- **order**: one is better. Welch's t-test over the repetitions and the round-paired t
  (the rounds are blocks: a shock that slowed a whole round cancels), the smaller p of
  the two judged against its own law, on the log scale for ratio metrics (times and
  rates: a difference there is a ratio, and noise grows with the value), from n = 3. Two
  configs: the pair at the comparison's level. Three: a gate first (Welch's ANOVA, the
  ANOVA with rounds as blocks, or Bonferroni over the three pairs), then every pair at
  the same level
  (with three configs at most one pair can be equal once any two differ, so the gate
  protects the pairs: the family-wise rate is held). More than three: Holm's step-down with
  Shaffer's (1986) logical constraints. Counts fsbench reads itself (extents, files) that do
  not vary between repetitions are exact (2 extents are not 3: no test needed); counts of
  events out of N (damaged crashes of N power cuts) are tested by Fisher's exact test.
- **equivalent**: the ratio has a 90% confidence interval inside 1 ± the plan's margin
  (two one-sided tests, TOST; Schuirmann 1987).
- **undecided**: neither, with the repetitions per config that would decide it at the
  noise measured.

How often the data were looked at, and so what a p is worth, is the comparison's design
(design.py, null_law.py). The level a comparison's pairs are judged at is the run's
(family.py: Benjamini & Bogomolov over the run's tested comparisons), and the interval
printed beside a pair is the one its verdict used: at the per-look boundary of that
level, so an interval that excludes 1 is always an order, and an undecided pair's always
holds 1. Below n = 3 a timing is not tested and has no interval.

Pure functions: values in, decisions out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Required, TypedDict, Unpack

from fsbench.analysis.design import (
    ALPHA,
    CONTROLLED,
    MIN_REPS,
    NEEDED_LIMIT,
    Design,
    needed_reps,
)
from fsbench.analysis.lookstats import PAIRED, WELCH
from fsbench.analysis.pairs import (
    EQUIVALENT,
    ORDER,
    UNDECIDED,
    Pair,
    Side,
    draft,
    exact_metric,
    gate_law,
    gate_p,
    scale_of,
)
from fsbench.analysis.stats import step_down
from fsbench.system import numbers

# How a pair's test is named beside its interval.
TEST_NAMES = {WELCH: "Welch", PAIRED: "round-paired t"}

__all__ = ["EQUIVALENT", "ORDER", "UNDECIDED", "Decision", "Pair", "Side", "at_level", "decide"]


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
    # The p that the comparison has any difference (its gate with three configs, else
    # its smallest adjusted pair p; None when nothing was tested): what the run-wide
    # control selects comparisons by. Exact answers never enter it.
    family_p: float | None = None
    family_q: float | None = None  # the same, Benjamini-Hochberg-adjusted over the run's
    level: float = ALPHA  # the level its pairs were ordered at (after the run's control)
    headline: bool = True
    key: tuple[str, ...] = ()  # chain, workload, dimensions (JSON), metric
    gate_p: float | None = None  # three configs: the gate's calibrated p
    explain: bool = True  # undecided pairs say the repetitions that would decide them
    # The metric of the same trials this one is an exact reciprocal or multiple of (MB/s
    # of a fixed tree and its seconds): one hypothesis, counted once by the run's control.
    twin_of: str | None = None

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
        if any(p.test == "Welch" and not p.tested for p in open_):
            return f"undecided: n < {MIN_REPS}"
        return f"undecided: beyond {NEEDED_LIMIT} repetitions at this noise"

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
                f"{p.winner} better than {p.loser} ({factor}, {_fmt_ci(p)}, "
                f"{TEST_NAMES.get(p.test, p.test)} {_p_text(p.p)}{also})"
            )
        if p.kind == EQUIVALENT:
            if p.test == "exact":
                return f"{p.a} = {p.b} ({p.note})"
            return (
                f"{p.a} ≈ {p.b} (ratio {_fmt_ratio(p.ratio)}, {_fmt_ci(p)}, within "
                f"±{self.design.margin:.0%})"
            )
        evidence = f"ratio {_fmt_ratio(p.ratio)}, {_fmt_ci(p)}" if p.ci else ""
        why = "; ".join(x for x in (p.note, evidence) if x) or "a mean of zero: no ratio"
        if p.needed is not None:
            return f"{p.a} vs {p.b}: undecided ({why}; n≈{p.needed} per config would decide)"
        if not p.tested or p.ratio is None:
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
            "level_controls": CONTROLLED,
            "gate_p": self.gate_p,
            "family_p": self.family_p,
            "twin_of": self.twin_of,
            "margin": self.design.margin,
            "sequential": self.design.sequential,
            "looks": list(self.design.planned(min((min(p.n) for p in self.pairs), default=0)))
            if self.pairs
            else [],
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


def decide(sides: Sequence[Side], **options: Unpack[Options]) -> Decision | None:
    """The answers for one comparison's configs (in table order) at the full level; the
    run's control over its comparisons (family.control_run) sets the level they are
    finally judged at. None with fewer than two configs that have values, or a metric
    with no direction. `options`: those of `evidence`."""
    found = evidence(sides, **options)
    return None if found is None else at_level(found, found.design.alpha)


class Options(TypedDict, total=False):
    """How one comparison is judged (the keywords of `evidence` and `decide`)."""

    better: Required[str]
    metric: str | None
    unit: str | None
    resolution: float
    design: Design | None
    headline: bool
    key: tuple[str, ...]
    explain: bool


def evidence(
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
    """The comparison's evidence, its tested pairs not yet judged (`decide` judges them
    at the full level, family.control_run at the run's)."""
    design = design or Design()
    usable = [s for s in sides if s.values]
    if len(usable) < 2 or better not in ("higher", "lower"):
        return None
    higher = better == "higher"
    exact = exact_metric(unit, resolution, usable)
    scale = scale_of(usable)
    drafts = [
        draft(a, b, higher, design, exact, resolution, scale)
        for i, a in enumerate(usable)
        for b in usable[i + 1 :]
    ]
    welch = [i for i, p in enumerate(drafts) if p.tested]
    fisher = [i for i, p in enumerate(drafts) if p.test == "Fisher" and p.p is not None]
    gate = gate_p(usable, drafts, design, scale) if len(usable) == 3 and len(welch) == 3 else None
    pairs = list(drafts)
    family_p: float | None = None
    if gate is not None:
        # A pair is ordered at level L when the gate and the pair both are: its p is the
        # larger of the two.
        for i in welch:
            pairs[i] = replace(pairs[i], p=max(gate, pairs[i].p or 1.0))
        family_p = gate
    for tested in (welch if gate is None else [], fisher):
        if not tested:
            continue
        every = len(tested) == len(drafts)
        steps = step_down([drafts[i].p or 1.0 for i in tested], len(usable) if every else None)
        for i, s in zip(tested, steps, strict=True):
            pairs[i] = replace(pairs[i], p=s.adjusted, divisor=s.divisor, rank=s.rank)
        smallest = min(s.adjusted for s in steps)
        family_p = smallest if family_p is None else min(family_p, smallest)
    decision = Decision(
        metric=metric,
        unit=unit,
        better=better,
        labels=tuple(s.label for s in usable),
        means=tuple(s.mean for s in usable),
        pairs=tuple(pairs),
        design=design,
        family_p=family_p,
        headline=headline,
        key=key,
        gate_p=gate,
        explain=explain,
    )
    return decision


def _p_text(p: float | None) -> str:
    return "p n/a" if p is None else numbers.p(p)


def at_level(decision: Decision, level: float, shown: float | None = None) -> Decision:
    """The decision with its tested pairs judged at `level` (0: the run's control did not
    select the comparison; its intervals are then shown at `shown`, the level it missed):
    ordered where their p is at most `level`, the others equivalent or undecided as their
    evidence says, each with the interval its verdict used. Exact answers stay."""
    judged = level if level > 0 else (shown if shown is not None else decision.design.alpha)
    gate_open = decision.gate_p is not None and level > 0 and decision.gate_p <= level
    # The divisor of the first step a step-down did not pass: the level every pair it
    # left open was judged at.
    open_divisor = {
        p.rank: p.divisor
        for p in decision.pairs
        if p.tested and not (level > 0 and p.p is not None and p.p <= level)
    }
    stop = open_divisor[min(open_divisor)] if open_divisor else 1
    pairs = []
    for p in decision.pairs:
        if p.test == "Fisher":
            ordered = p.p is not None and level > 0 and p.p <= level
            p = replace(p, kind=ORDER if ordered else UNDECIDED, winner=p.leader if ordered else "")
        elif p.tested:
            n = min(p.n)
            ordered = p.p is not None and level > 0 and p.p <= level
            design = decision.design
            if decision.gate_p is not None and not gate_open:
                # The gate stayed shut: every pair's statistic at every look is above a
                # third of the gate's boundary there, so intervals at that level hold 1.
                gate = design.boundaries(gate_law(decision.pairs), judged, n)
                bounds = {look: b / 3 for look, b in gate.items()}
            elif decision.gate_p is not None:
                bounds = design.boundaries(p.law, level, n)
            else:
                divisor = p.divisor if ordered else stop
                bounds = design.boundaries(p.law, judged / divisor, n)
            p = p.shown(bounds, ordered)
            if ordered:
                p = replace(p, kind=ORDER, winner=p.leader, needed=None)
            else:
                p = replace(p, kind=EQUIVALENT if p.equivalent else UNDECIDED, winner="")
                if p.equivalent:
                    p = _equivalence_shown(p, design)
                elif p.ci is None:
                    p = replace(p, note=_FIRST_LOOKS)
                elif decision.explain:
                    p = replace(p, needed=_needed(p, design, bounds[max(bounds)]))
        pairs.append(p)
    return replace(decision, pairs=tuple(pairs), level=level)


def _equivalence_shown(p: Pair, design: Design) -> Pair:
    """An equivalent pair shows the interval equivalence was judged on, at its look."""
    look = next(lk for lk in p.looked if lk.n == p.equivalent_at)
    level = design.equivalence_level(min(p.n), look.n, p.law)
    name = p.equivalent_by
    return replace(
        p,
        ci=look.interval(p.scale, level, name),
        ci_level=level,
        ratio=look.ratio(p.scale, name),
        test=name,
    )


# Why an undecided pair shows no interval: at its run's level, its looks so far could not
# order anything (under the law's slow machine, a config whose every trial fell slow while
# another's did not looks exactly like a difference: null_law.py).
_FIRST_LOOKS = (
    "its looks so far cannot order at this level: a run of slow trials would look the same"
)


def _needed(p: Pair, design: Design, boundary: float) -> int | None:
    """Repetitions per config that would decide an undecided pair at the noise measured,
    at the per-look level it was judged at; never fewer than it has."""
    ratio = p.ratio or 1.0
    found = needed_reps(
        p.noise, ratio - 1, design.margin, boundary, design.equivalence_level(min(p.n))
    )
    return None if found is None else max(found, min(p.n) + 1)
