"""The design of a comparison: when its data are looked at, and so what a p is worth.

The repetition loop plans, from the budget, the looks each comparison group can afford
(n = 3, 4, ... up to what its rounds cost allows; loop.py); a look after every round from
n_min to n_max would inflate false orders if each look used the full 5%, so a sequential
design judges the smallest p over its planned looks against that smallest p's own law
under no difference (null_law.py: one constant per-look boundary, Pocock's, counted by
simulation). Looks that cannot happen are not paid for: a group the budget gives one look
tests at the full level. A fixed design (`--reps N`) has one look.

Pure functions: values in, numbers out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fsbench.analysis import null_law
from fsbench.analysis.stats import least_n, t_quantile
from fsbench.plan.model import DEFAULT_MARGIN as DEFAULT_MARGIN  # the plan's default
from fsbench.plan.model import MIN_AUTO_REPS

ALPHA = 0.05
# The rate the run-wide control holds at ALPHA (Benjamini & Bogomolov 2014), in the words
# the legend and the JSON state it: among the comparisons a run selects, the expected share
# that hold a false order. Not the share of runs with any false order: where some configs
# differ and others do not, that one is higher (docs/statistics.md measures both).
CONTROLLED = "the expected share of selected comparisons holding a false order"
# Repetitions before a timing is tested (the plan's minimum for decided repetitions), and
# before a count is: a count fsbench reads itself is exact and decides at 2; a timing needs
# a variance worth the name.
MIN_REPS = MIN_AUTO_REPS
MIN_REPS_EXACT = 2
# Units of counts: integers fsbench reads or counts itself, exact when they do not vary.
EXACT_UNITS = frozenset({"count", "tx", "code"})
# The most repetitions "needed" worth stating; beyond it: "more than 1000".
NEEDED_LIMIT = 1000
POWER = 0.8


@dataclass(frozen=True)
class Design:
    """How the repetitions were decided, and so how often the data were looked at:
    `sequential` (a look after every round from `n_min` to `n_max`, the looks planned
    before the first) or fixed (one look)."""

    sequential: bool = False
    n_min: int = MIN_REPS
    n_max: int = MIN_REPS
    margin: float = DEFAULT_MARGIN
    alpha: float = ALPHA

    def looks(self, n: int) -> list[int]:
        """The looks made by the time a pair has `n` repetitions (the last one is `n`)."""
        if not self.sequential:
            return [n]
        return list(range(self.n_min, min(n, self.n_max) + 1))

    def planned(self, n: int) -> tuple[int, ...]:
        """The looks the boundaries are computed for: those the design planned (a fixed
        design's one look, at the `n` it has)."""
        if not self.sequential:
            return (max(n, 2),)
        return tuple(range(self.n_min, self.n_max + 1))

    def p_value(self, kind: str, per_look: Mapping[int, float], n: int) -> float:
        """The calibrated p of a statistic (null_law.PAIR or GATE) from its value at each
        look made (by the look's n; looks not made count as no evidence)."""
        planned = self.planned(n)
        return null_law.calibrated(kind, planned, [per_look.get(lk, 1.0) for lk in planned])

    def boundaries(self, kind: str, level: float, n: int) -> dict[int, float]:
        """Per planned look (by its n), the statistic a look must go below for a calibrated
        p of `level`."""
        planned = self.planned(n)
        return dict(zip(planned, null_law.boundaries(kind, planned, level), strict=True))

    def boundary(self, kind: str, level: float, n: int, look: int | None = None) -> float:
        """The boundary of one look (by default the last planned: what more repetitions
        are judged at)."""
        found = self.boundaries(kind, level, n)
        return found.get(look, 0.0) if look is not None else found[max(found)]

    def equivalence_level(
        self, n: int, look: int | None = None, kind: str = null_law.PAIR
    ) -> float:
        """The confidence of the interval equivalence is judged on at a look: 90% (TOST
        at 5% a side) for one look of one test, less for more, as the law of the pair's
        statistic (`kind`) counts them."""
        return 1 - self.boundary(kind, 2 * self.alpha, n, look)

    @property
    def one_look(self) -> bool:
        return not self.sequential or self.n_max == self.n_min

    @property
    def looks_said(self) -> str:
        """The looks it was planned for, as the legend says them."""
        if self.one_look:
            return "one look" + (f" at n={self.n_min}" if self.sequential else "")
        return (
            f"a look after each round from n={self.n_min} to {self.n_max}, "
            "Pocock boundaries for those looks"
        )

    @property
    def rule(self) -> str:
        """The legend's sentence on how pairs were decided."""
        return self.rule_with(self.looks_said)

    def rule_with(self, looks: str) -> str:
        """The legend's sentence, with `looks` said (a table's columns may differ in it)."""
        return (
            "pairs ordered by Welch's t-test or the round-paired t on the log scale, the "
            "smaller p judged by its law (three configs: a gate, Welch's ANOVA, the ANOVA "
            "with rounds as blocks or Bonferroni over the pairs, then pairs at the same level; "
            "more: Holm with Shaffer's constraints), Benjamini-Bogomolov over the run's "
            f"tested comparisons ({CONTROLLED} at most {self.alpha:.0%}, not of runs with "
            "one; a metric that is another's exact reciprocal or multiple counted once); "
            f"{looks}; or by counts that do not vary; equivalent when "
            f"the ratio's CI is within ±{self.margin:.0%} (TOST); otherwise undecided"
        )


def design_of(plan: Mapping[str, Any]) -> Design:
    """The design a stored plan ran with. Plans stored before the default decided
    repetitions (a number, or `auto` with its CI target) looked once."""
    margin = float(plan.get("margin") or DEFAULT_MARGIN)
    if plan.get("reps") == "decide":
        n_max = int(plan.get("max_reps") or 10)
        return Design(True, MIN_REPS, max(MIN_REPS, n_max), margin)
    return Design(False, margin=margin)


def cv(values: Sequence[float]) -> float | None:
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    return statistics.stdev(values) / abs(mean) if mean else None


def needed_reps(
    cv: float | None,
    difference: float,
    margin: float,
    alpha: float = ALPHA,
    level: float = 1 - 2 * ALPHA,
) -> int | None:
    """Repetitions per config that would decide a pair whose ratio is 1 + `difference`
    at a coefficient of variation `cv` (each config's, pooled): the fewer of those that
    would order it (Welch at `alpha`, 80% power, if the difference is real) and those that
    would show it equivalent (90% CI within the margin, if it is inside). None when more
    than NEEDED_LIMIT would be needed or nothing is known."""
    if cv is None:
        return None
    d = abs(difference)
    if cv == 0:
        return MIN_REPS

    def decides(n: int) -> bool:
        df = 2 * n - 2
        spread = cv * math.sqrt(2.0 / n)
        power = t_quantile(df, 2 * POWER - 1)
        if d > 0 and (t_quantile(df, 1 - alpha) + power) * spread <= d:
            return True
        return d < margin and (t_quantile(df, level) + power) * spread <= margin - d

    found = least_n(decides, 2, NEEDED_LIMIT)
    return None if found is None else max(found, MIN_REPS)
