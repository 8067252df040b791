"""The design planned from the budget, before anything is counted.

Each comparison group's time per round is projected config by config (each cell's
counted trial from this host's earlier trials of it, else the priors shipped with the
preset, else a warm-up trial of the cell: analysis/costs.py), and the budget left is shared
out as looks: every group gets its minimum (n = 3 for timings, 2 for groups whose headline
metrics are all exact counts), then one round at a time to the group with the fewest
planned repetitions (the cheaper first) while a round still fits, up to max_reps; groups
of counts get looks from what is left last, since their answers are usually exact at
n = 2. A group's sequential boundaries are then computed for the looks it was given and
no others (design.py): a test that pays for looks that cannot happen throws power away.
The plan counts every warm-up trial it spends: those run for the projection, and each
group's (one before its first rounds, one before its extra rounds).

The looks are shared out once more after every group's minimum rounds, before any look is
taken (`replan`): a projection from warm-up trials (the first trials after other work,
which here run slower than counted ones: bench/results/warmup_effect.json) or from priors
measured on another machine can be off, so the first plan can leave part of the budget
unused or overrun it. The looks still depend on nothing but what rounds cost, and each
group's boundaries are computed for its final looks before its first look.

Then the looks of the groups still open are raised where the evidence says more rounds
would settle them (`raise_by_need`). The re-plan shares the budget as if every group
spent all its looks, but a group whose pairs are all answered after its minimum spends
nothing more, nor does one that no round within max_reps would settle: their time would
go unspent while a group one or two rounds short of its answer stops at its last look.
So a group whose open pairs would settle, at the noise and difference measured, at n
rounds gets its looks raised to n, the raise that settles the most pairs a second first,
while the time the others will not spend covers it. The needs are measured as looks up to
max_reps would judge them (the strictest a raise can make them), so a raised group does not
find at once that its raised looks need more. Looks are only ever raised, once, before the
group's first look past its minimum, and its boundaries are those of the raised looks from
then on: a later look at the same data is judged more strictly, never less.

An instrumented pass planned after the counted run (`fsbench run --explain`) is reserved
from the budget before the looks are shared out (`Instrumented`): its trials are projected
from the same round costs, so the counted run and the pass together fit the budget.

Pure: projected costs in, a plan out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from fsbench.analysis import null_law
from fsbench.analysis.design import ALPHA, DEFAULT_MARGIN, MIN_REPS, MIN_REPS_EXACT, Design
from fsbench.analysis.stats import t_quantile
from fsbench.store.griddesign import GridDesign, GroupLooks

POWER = 0.8
# The noise a plan states what its looks can tell apart at, when nothing was measured yet.
ASSUMED_CVS = (0.05, 0.10)
# A run may end this much past its budget before the report calls it over.
TOLERANCE = 0.05


@dataclass(frozen=True)
class GroupCost:
    """What a comparison group costs and needs, as projected before its counted rounds."""

    name: str  # "fileserver threads=4"
    configs: int
    round_s: float  # seconds one round of it takes
    counts_only: bool = False  # its headline metrics are all exact counts
    noise: float | None = None  # the CV its cells showed before (this host's trials)
    # A warm-up trial: one just before the group's first rounds, and one more before its
    # extra rounds, which come after every other group's first rounds.
    warmup_s: float = 0.0

    @property
    def n_min(self) -> int:
        return MIN_REPS_EXACT if self.counts_only else MIN_REPS


@dataclass(frozen=True)
class Instrumented:
    """An instrumented pass after the counted run: `reps` trials of every cell (no warm-up),
    each projected at what a counted trial of it costs plus `tracer_start_s`, the tracers'
    scripts compiled and attached before its timed phase."""

    reps: int
    tracer_start_s: float

    def cost_s(self, costs: Sequence[GroupCost]) -> float:
        """Its projected seconds: a group's round is one trial of each of its configs."""
        return sum(self.reps * (c.round_s + c.configs * self.tracer_start_s) for c in costs)


@dataclass(frozen=True)
class GroupPlan:
    """The looks a group was given: repetitions from its minimum up to `n_max`."""

    cost: GroupCost
    n_max: int
    wanted: int | None = None  # its looks were raised to this for its open pairs

    @property
    def n_min(self) -> int:
        return self.cost.n_min

    def design(self, margin: float = DEFAULT_MARGIN, alpha: float = ALPHA) -> Design:
        """Its sequential design: looks from n = 3 to n_max (one look when n_max is 3)."""
        return Design(True, MIN_REPS, max(MIN_REPS, self.n_max), margin, alpha)

    def detectable(self, cv: float, alpha: float = ALPHA) -> float | None:
        """The smallest relative difference between two of its configs its last look
        finds with 80% power at this CV (Welch on the log scale, the per-look boundary)."""
        design = self.design(alpha=alpha)
        if self.n_max < MIN_REPS:
            return None
        n = self.n_max
        level = design.boundary(null_law.PAIR, alpha, n)
        df = 2 * n - 2
        z = t_quantile(df, 1 - level) + t_quantile(df, 2 * POWER - 1)
        return math.exp(z * cv * math.sqrt(2 / n)) - 1

    @property
    def warmups(self) -> int:
        """Its warm-up trials: one before its first rounds, one more before its extra
        rounds (none when the run has no warm-ups: no warm-up cost)."""
        return (1 + (self.n_max > self.n_min)) if self.cost.warmup_s > 0 else 0

    @property
    def cost_s(self) -> float:
        return self.n_max * self.cost.round_s + self.warmups * self.cost.warmup_s

    def cost_after(self, reached: int, upto: int | None = None) -> float:
        """What its rounds after `reached` cost, up to its last look (or `upto`, if fewer),
        with the warm-up trial before them."""
        rounds = max(0, min(self.n_max, upto or self.n_max) - reached)
        return rounds * self.cost.round_s + (self.cost.warmup_s if rounds else 0.0)

    def line(self) -> str:
        """'fileserver threads=4 (3 configs): n up to 4 (looks at 3-4); about 14% at CV
        5%, 28% at CV 10%'."""
        c = self.cost
        if self.n_max <= self.n_min:
            looks = f"n = {self.n_max}" + (" (exact counts)" if c.counts_only else " (one look)")
        else:
            first = MIN_REPS
            looks = f"n up to {self.n_max} (looks at {first}-{self.n_max})"
            if c.counts_only:
                looks += f", exact counts from n = {self.n_min}"
            if self.wanted:
                looks += ", raised: its open pairs would settle by then at the noise measured"
        tells = ""
        if not c.counts_only and self.n_max >= MIN_REPS:
            cvs = (c.noise,) if c.noise else ASSUMED_CVS
            parts = []
            for cv in cvs:
                found = self.detectable(cv)
                if found is not None:
                    seen = "the CV seen before" if c.noise else "CV"
                    parts.append(f"{found:.0%} at {seen} {cv:.0%}")
            tells = "; differences of about " + ", ".join(parts) + " or more" if parts else ""
        return f"{c.name} ({c.configs} configs, {c.round_s:.0f} s a round): {looks}{tells}"

    def record(self) -> GroupLooks:
        """As the run's design keeps it."""
        looks = GroupLooks(
            name=self.cost.name,
            configs=self.cost.configs,
            round_s=round(self.cost.round_s, 2),
            counts_only=self.cost.counts_only,
            noise=self.cost.noise,
            warmup_s=round(self.cost.warmup_s, 2),
            n_min=self.n_min,
            n_max=self.n_max,
        )
        if self.wanted:
            looks.wanted = self.wanted
        return looks

    @classmethod
    def from_record(cls, kept: GroupLooks) -> GroupPlan:
        cost = GroupCost(
            kept.name, kept.configs, kept.round_s, kept.counts_only, kept.noise, kept.warmup_s
        )
        return cls(cost, kept.n_max, kept.wanted)


@dataclass(frozen=True)
class BudgetPlan:
    budget: float | None
    spent: float  # seconds gone before the counted rounds (the projection's warm-ups)
    groups: tuple[GroupPlan, ...]
    warmed: int = 0  # warm-up trials run for the projection (cells nothing else knew)
    # Shared out again after the minimum rounds (`replan`), with this many seconds spent.
    replanned_at: float | None = None
    reserved: float = 0.0  # seconds kept from the budget for an instrumented pass after it

    @property
    def counted_budget(self) -> float | None:
        """What the counted rounds may spend: the budget less the reservation."""
        return None if self.budget is None else self.budget - self.reserved

    @property
    def minimum_s(self) -> float:
        """What every group's minimum costs, from now (its warm-up trial included)."""
        return sum(g.n_min * g.cost.round_s + g.cost.warmup_s for g in self.groups)

    @property
    def planned_s(self) -> float:
        return self.spent + sum(g.cost_s for g in self.groups)

    @property
    def warmups(self) -> int:
        """Every warm-up trial the plan spends: the projection's and the groups'."""
        return self.warmed + sum(g.warmups for g in self.groups)

    @property
    def warmups_s(self) -> float:
        """What they cost: the seconds spent before the plan and the groups' projected."""
        return self.spent + sum(g.warmups * g.cost.warmup_s for g in self.groups)

    @property
    def short(self) -> float:
        """Seconds the minimum needs beyond the budget (0 when it fits)."""
        if self.counted_budget is None:
            return 0.0
        return max(0.0, self.spent + self.minimum_s - self.counted_budget)

    def lines(self, before: BudgetPlan | None = None) -> list[str]:
        """What the plan says before the counted rounds; a re-plan, what it changed from
        `before`."""
        if self.replanned_at is not None and self.counted_budget is not None:
            head = (
                f"re-plan after the minimum rounds: {self.replanned_at:.0f} s spent, "
                f"{max(0.0, self.counted_budget - self.replanned_at):.0f} s left"
                + self._reserved_note()
            )
            old = {g.cost.name: g.n_max for g in before.groups} if before else {}
            changed = [g for g in self.groups if old.get(g.cost.name) != g.n_max]
            if not changed:
                return [head + "; the looks stay as planned"]
            return [head + ":"] + [f"  {g.line()}" for g in changed]
        if self.budget is None:
            head = (
                f"plan: no budget; up to {max(g.n_max for g in self.groups)} rounds a group, "
                + self._warmups_note()
            )
        else:
            head = (
                f"plan: budget {self.budget:.0f} s, {self._warmups_note()}, "
                f"{self.planned_s:.0f} s planned" + self._reserved_note()
            )
        out = [head] + [f"  {g.line()}" for g in self.groups]
        if self.short > 0:
            need = self.spent + self.minimum_s + self.reserved
            out.append(
                f"  the minimum rounds need about {need:.0f} s: this run is projected to go "
                f"over its budget by about {self.short:.0f} s (--budget "
                f"{need * (1 + TOLERANCE):.0f} would fit them)"
            )
            if self.warmed:
                # Each the first trial after other work, slower than a counted one
                # (bench/results/warmup_effect-probe-only.json).
                out.append(
                    "  (projected in part from warm-up trials: each the first trial after other "
                    "work, which can run slower than a counted one, so the minimum may take less)"
                )
        return out

    def _warmups_note(self) -> str:
        """'9 warm-up trials (41 s, 3 of them run for the projection)'."""
        trials = f"{self.warmups} warm-up trial" + ("s" if self.warmups != 1 else "")
        ran = f", {self.warmed} of them run for the projection" if self.warmed else ""
        return f"{trials} ({self.warmups_s:.0f} s{ran})"

    def _reserved_note(self) -> str:
        if not self.reserved:
            return ""
        return f", {self.reserved:.0f} s reserved for the instrumented pass after it"

    def record(self) -> GridDesign:
        """As the run keeps it (execute/decide.py adds what it spent and reached)."""
        design = GridDesign(
            budget_s=self.budget,
            warmup_s=round(self.spent, 2),
            planned_s=round(self.planned_s, 2),
            minimum_s=round(self.spent + self.minimum_s, 2),
            groups=[g.record() for g in self.groups],
            warmup_trials=self.warmups,
            projection_warmups=self.warmed,
        )
        if self.replanned_at:
            design.replanned_s = round(self.replanned_at, 2)
        if self.reserved:
            design.reserved_s = round(self.reserved, 2)
        return design

    @classmethod
    def from_record(cls, kept: GridDesign) -> BudgetPlan:
        """The plan a run kept (a resumed run goes on with the looks it fixed)."""
        return cls(
            kept.budget_s,
            kept.warmup_s,
            tuple(GroupPlan.from_record(g) for g in kept.groups),
            kept.projection_warmups or 0,
            replanned_at=kept.replanned_s,
            reserved=kept.reserved_s or 0.0,
        )


def plan(
    costs: Sequence[GroupCost],
    budget: float | None,
    spent: float,
    max_reps: int,
    warmed: int = 0,
    instrumented: Instrumented | None = None,
) -> BudgetPlan:
    """Every group's looks: its minimum, then rounds shared out while they fit in what the
    budget leaves after the `instrumented` pass's reservation."""
    if budget is None:
        looks = tuple(GroupPlan(c, max(max_reps, c.n_min)) for c in costs)
        return BudgetPlan(None, spent, looks, warmed)
    reserved = instrumented.cost_s(costs) if instrumented else 0.0
    groups = [GroupPlan(c, c.n_min) for c in costs]
    left = budget - reserved - spent - sum(g.cost_s for g in groups)
    shared = _share(groups, left, max_reps)
    return BudgetPlan(budget, spent, shared, warmed, reserved=reserved)


def replan(
    first: BudgetPlan,
    measured: Sequence[GroupCost],
    reached: Sequence[int],
    spent: float,
    max_reps: int,
    instrumented: Instrumented | None = None,
) -> BudgetPlan:
    """The looks shared out again after every group's minimum rounds (`reached`: the
    rounds each has), from what its rounds and warm-up trial cost (`measured`) and the
    `spent` seconds, before any look is taken; the `instrumented` pass's reservation is
    projected again from the measured rounds."""
    if first.budget is None:
        return first
    reserved = instrumented.cost_s(measured) if instrumented else 0.0
    groups = [GroupPlan(c, max(c.n_min, n)) for c, n in zip(measured, reached, strict=True)]
    shared = _share(groups, first.budget - reserved - spent, max_reps)
    return BudgetPlan(first.budget, first.spent, shared, first.warmed, spent, reserved=reserved)


def raise_by_need(
    replanned: BudgetPlan, reached: Sequence[int], needs: Mapping[int, Sequence[int]]
) -> BudgetPlan:
    """The re-plan's looks raised for the groups still open. `needs`, by group index: per
    open pair, the rounds that would settle it at the noise and difference measured (pairs
    nothing within max_reps would settle left out); `reached`: the rounds each group has.
    Each open group is counted as spending its rounds up to the most its pairs within its
    looks need (a group not in `needs` spends nothing more); what the budget leaves after
    that goes, one raise at a time, to the raise that settles the most pairs a second,
    while it fits."""
    if replanned.counted_budget is None or replanned.replanned_at is None:
        return replanned
    groups = list(replanned.groups)

    def spends(i: int, n_max: int) -> float:
        """What group i spends with looks up to n_max: rounds until its pairs settle."""
        upto = max((n for n in needs[i] if n <= n_max), default=reached[i])
        return replace(groups[i], n_max=n_max).cost_after(reached[i], upto)

    left = replanned.counted_budget - replanned.replanned_at
    left -= sum(spends(i, groups[i].n_max) for i in needs)
    while True:
        best: tuple[float, float, int, int] | None = None  # (-pairs a second, extra, i, n)
        for i, wanted in needs.items():
            settled = sum(n <= groups[i].n_max for n in wanted)
            for n in sorted({n for n in wanted if n > groups[i].n_max}):
                extra = spends(i, n) - spends(i, groups[i].n_max)
                gain = sum(m <= n for m in wanted) - settled
                rate = -gain / max(extra, 1e-9)
                if extra <= left and (best is None or (rate, extra) < best[:2]):
                    best = (rate, extra, i, n)
        if best is None:
            return replace(replanned, groups=tuple(groups))
        _, extra, i, n = best
        left -= extra
        groups[i] = replace(groups[i], n_max=n, wanted=n)


def raised_lines(replanned: BudgetPlan, raised: BudgetPlan) -> list[str]:
    """What `raise_by_need` changed, said after the re-plan's lines (nothing if nothing)."""
    before = {g.cost.name: g.n_max for g in replanned.groups}
    changed = [g for g in raised.groups if before.get(g.cost.name) != g.n_max]
    if not changed:
        return []
    head = (
        "looks raised for open pairs that more rounds would settle, from the time the "
        "groups already answered will not spend:"
    )
    return [head] + [f"  {g.line()}" for g in changed]


def _share(groups: list[GroupPlan], left: float, max_reps: int) -> tuple[GroupPlan, ...]:
    """One round at a time to the group with the fewest planned (timings, then counts)
    while its round (and the warm-up trial before its first extra round) fits in `left`."""
    for counts in (False, True):
        while True:
            candidates = [
                i
                for i, g in enumerate(groups)
                if g.cost.counts_only == counts and g.n_max < max_reps
            ]
            candidates.sort(key=lambda i: (groups[i].n_max, groups[i].cost.round_s))
            chosen = None
            for i in candidates:
                more = replace(groups[i], n_max=groups[i].n_max + 1)
                extra = more.cost_s - groups[i].cost_s
                if extra <= left:
                    chosen, left = (i, more), left - extra
                    break
            if chosen is None:
                break
            groups[chosen[0]] = chosen[1]
    return tuple(groups)
