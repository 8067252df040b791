"""`--reps decide`: the run's design planned from its budget, then rounds until decided.

1. **Projection.** Each comparison group's time per round is the sum of its configs' trial
   times: each cell's from this host's earlier trials of it in the store, else from the
   priors shipped with the preset (analysis/costs.py), else from one warm-up trial of the
   cell (run before any counted round: the plan needs them all). With the store or the
   priors knowing every cell, no projection warm-up runs.
2. **Plan.** The budget left is shared out as looks (analysis/budget.py); each group's
   sequential boundaries are computed for its looks only. The plan is said before the
   counted rounds: per group, its looks and what differences they can tell apart.
3. **Minimum.** Every group's first rounds (n = 3 for timings, 2 for exact counts), group
   after group, each behind a warm-up trial of its own just before them (the first trial
   after other work is slower here: bench/results/warmup_effect.json). The plan counts
   every warm-up trial it spends: the projection's, and the groups'.
4. **Re-plan.** The looks are shared out again from what the minimum rounds and the warm-up
   trial before them cost (budget.replan), before any look is taken: nothing so far has
   stopped a group on a timing, so each group's boundaries are still those of its final
   looks. Then the groups still open get their looks raised to the rounds their open pairs
   need at the noise measured, from the time the groups already answered will not spend
   (budget.raise_by_need). A resumed run keeps the plan it had.
5. **More rounds** for the groups still open, cheapest answer first, each within its
   planned looks while the budget lasts. A group stops on exactly the answer the report
   will print: the run-wide control (family.py) with every group still running counted as
   undecided, which can only give it more later.

Everything after the executor's preflight counts against the budget; the run's design
record (the run's facts, `design`) keeps the plan, what was spent, and by how much and
why the run went over, for the report.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol

from fsbench.analysis import budget, costs, verdicts
from fsbench.analysis.budget import BudgetPlan, GroupCost
from fsbench.analysis.decisions import UNDECIDED, Decision
from fsbench.analysis.design import MIN_REPS, MIN_REPS_EXACT, Design
from fsbench.analysis.rows import build_rows
from fsbench.execute.hooks import Hooks
from fsbench.execute.schedule import Slot
from fsbench.plan.model import Plan
from fsbench.store import runkinds
from fsbench.store.griddesign import GridDesign
from fsbench.store.records import TrialRecord
from fsbench.store.results import Store
from fsbench.store.runkinds import GridFacts


class Loop(Protocol):
    """What the decided repetitions need of the repetition loop (loop.py)."""

    plan: Plan
    store: Store
    hooks: Hooks
    records: list[TrialRecord]  # every trial of the run stored so far
    stored: set[int]  # seqs stored
    refused: set[str]  # cells the kernel refused
    dropped: int  # planned slots that will not run
    clock: Callable[[], float]
    instrumented: budget.Instrumented | None  # a pass after the run, reserved from its budget

    @property
    def run_id(self) -> int: ...

    def by_group(self) -> dict[int, list[Slot]]: ...

    def warmup_slot(self, first: Slot) -> Slot: ...

    def run_slots(self, slots: Sequence[Slot], cold: bool = False) -> bool: ...


# Runs of this host the projection looks back over for trials of the same cells.
HISTORY_RUNS = 5


class Decide:
    def __init__(self, loop: Loop) -> None:
        self.loop = loop
        self.plan = loop.plan
        self.groups: list[list[Slot]] = list(loop.by_group().values())
        # A resumed run goes on with the plan it made and the time it had spent.
        self.previous = runkinds.design(loop.store.get_run(loop.run_id))
        self.started = loop.clock() - (self.previous.spent_s or 0.0)
        self.final: set[int] = set()
        self.plans: list[budget.GroupPlan] = []
        self.reserved = 0.0  # seconds of the budget kept for the instrumented pass
        self.counted_s: dict[int, list[float]] = {}  # seconds of each counted round
        self.warmed_s: dict[int, float] = {}  # seconds of its warm-up before its first rounds
        self.workload_facts = loop.store.get_run(loop.run_id).workloads
        self.plan_alpha = self._base().alpha
        self.design = GridDesign()  # the record kept with the run
        # Per group: its trials counted when its comparisons' evidence was last computed,
        # and that evidence.
        self._cached: dict[int, tuple[int, list[Decision]]] = {}

    # -- the phases -----------------------------------------------------------------

    def run(self) -> None:
        found = self._resumed()
        resumed = found is not None
        if found is None:
            projected, warmed = self._project()
            spent = self.loop.clock() - self.started
            found = budget.plan(
                projected, self.plan.budget, spent, self.plan.max_reps, warmed,
                self.loop.instrumented,
            )  # fmt: skip
        self.plans, self.reserved = list(found.groups), found.reserved
        for line in found.lines():
            self.loop.hooks.note(line)
        self._record(found)
        for index in range(len(self.groups)):
            self._minimum(index)
        if not resumed:
            found = self._replan(found)
        self._more()
        self._record(found, done=True)
        for group_slots in self.groups:
            self.loop.dropped += sum(
                1
                for s in group_slots
                if s.seq not in self.loop.stored and s.cell.key not in self.loop.refused
            )

    def _resumed(self) -> BudgetPlan | None:
        """The plan a resumed run made before it stopped (its looks were fixed then), or
        None for a new run."""
        kept = self.previous
        if len(kept.groups) != len(self.groups) or any(
            s.cell.key not in kept.cells for g in self.groups for s in g
        ):
            return None
        return BudgetPlan.from_record(kept)

    def _project(self) -> tuple[list[GroupCost], int]:
        """Every group's projected cost, config by config: each cell's counted trial from
        this host's stored trials of it, else the shipped priors (analysis/costs.py), else
        one warm-up trial of that cell, run now (stored, never counted); and how many
        warm-up trials that took."""
        keys = {s.cell.key for g in self.groups for s in g}
        known = {**costs.priors(keys), **self._history()}
        warmed = 0
        for group_slots in self.groups:
            for cell in _cells(group_slots):
                if cell.key not in known:
                    took, records = self._warm_cell(group_slots, cell.key)
                    known[cell.key] = costs.CellCost((took,), (), costs.counts_only(records))
                    warmed += 1
        names = _names(self.groups)
        out = []
        for index, group_slots in enumerate(self.groups):
            mine = [known[c.key] for c in _cells(group_slots)]
            noise = [n for c in mine if (n := _cv(c.values)) is not None]
            # Its warm-up trial runs the cell of its first counted slot.
            warmed_cell = known[_first(group_slots).cell.key]
            out.append(
                GroupCost(
                    names[index],
                    len(mine),
                    sum(c.trial_s for c in mine),
                    mine[0].counts_only,
                    statistics.median(noise) if noise else None,
                    warmed_cell.trial_s if self.plan.warmup > 0 else 0.0,
                )
            )
        return out, warmed

    def _minimum(self, index: int) -> None:
        """The group's first rounds: to n = 2, then (unless its exact answers are all in)
        to its minimum, after a warm-up trial of its own just before them: the first
        trial after other work is slower here (fio's first write twice as slow;
        bench/results/warmup_effect.json), and the projection's warm-ups ran before other
        groups' work."""
        group_plan = self.plans[index]
        if self.plan.warmup > 0:
            self.warmed_s[index], _ = self._warm(index)
        self._rounds(index, 1, MIN_REPS_EXACT)
        if group_plan.n_min > MIN_REPS_EXACT or not self._complete(index):
            self._rounds(index, MIN_REPS_EXACT + 1, max(group_plan.n_min, MIN_REPS))

    def _replan(self, first: BudgetPlan) -> BudgetPlan:
        """The looks shared out again from what the minimum rounds cost (budget.replan),
        said when they change, and kept with the run; the evidence computed so far was
        for the first plan's boundaries, so it is computed again."""
        if first.budget is None:
            return first
        measured = []
        for index, group_plan in enumerate(self.plans):
            cost = group_plan.cost
            round_s = self._round_s(index)
            # Without warm-ups cost.warmup_s is 0 and nothing was measured.
            warmup_s = self.warmed_s.get(index, cost.warmup_s)
            measured.append(replace(cost, round_s=round_s, warmup_s=warmup_s))
        reached = [self._n(i) for i in range(len(self.groups))]
        spent = self.loop.clock() - self.started
        found = budget.replan(
            first, measured, reached, spent, self.plan.max_reps, self.loop.instrumented
        )
        for line in found.lines(first):
            self.loop.hooks.note(line)
        self.plans, self.reserved = list(found.groups), found.reserved
        self._cached.clear()
        open_groups = [i for i in range(len(self.groups)) if not self._complete(i)]
        raised = budget.raise_by_need(found, reached, self._needs_if_raised(open_groups))
        for line in budget.raised_lines(found, raised):
            self.loop.hooks.note(line)
        self.plans = list(raised.groups)
        self._cached.clear()
        self._record(raised)
        return raised

    def _more(self) -> None:
        """Rounds for the groups still open, cheapest answer first, within their looks
        and the budget; a group taken up again after other work is warmed first."""
        self._settle()
        while True:
            wanted = []
            for index in range(len(self.groups)):
                if index in self.final:
                    continue
                needs = self._needs(index)
                if needs is None and self.plan.budget is not None:
                    # No round it can have settles it: with a budget to share, it gets none.
                    self.final.add(index)
                    continue
                rounds = (needs or self.plans[index].n_max) - self._n(index)
                wanted.append((rounds * self._round_s(index), index))
            if not wanted:
                return
            _, index = min(wanted)
            first = True
            while not self._complete(index) and self._n(index) < self.plans[index].n_max:
                extra = self._warmup_s(index) if first else 0.0
                if not self._fits(self._round_s(index) + extra):
                    break
                if first:
                    self._warm(index)
                    first = False
                self._rounds(index, self._n(index) + 1, self._n(index) + 1)
            self.final.add(index)
            self._settle()

    # -- one family from loop to report ----------------------------------------------

    def _settle(self) -> None:
        """Groups at their last look are final; so is every group complete with the
        groups not final counted as undecided, repeated until none more is."""
        for index, group_plan in enumerate(self.plans):
            if self._n(index) >= group_plan.n_max:
                self.final.add(index)
        changed = True
        while changed:
            changed = False
            for index in range(len(self.groups)):
                if index not in self.final and self._complete(index):
                    self.final.add(index)
                    changed = True

    def _complete(self, index: int) -> bool:
        """Whether every pair of the group's headline comparisons is answered under the
        run-wide control, every other group not yet final counted as undecided."""
        pending = {i for i in range(len(self.groups)) if i not in self.final and i != index}
        found = self.decisions(pending)
        mine = self._keys(index)
        if not any(k in found for k in mine):
            return self._n(index) >= MIN_REPS  # nothing to compare: its timings want 3
        return all(found[k].complete for k in mine if k in found)

    def decisions(self, pending: set[int], explain: bool = False) -> dict[verdicts.Key, Decision]:
        """The run's headline decisions as its trials so far give them, the comparisons of
        `pending` groups counted as undecided (and those of them answered by exact counts
        so far as possibly tested later)."""
        drafts, _ = self._evidence()
        if not explain:
            drafts = [replace(d, explain=False) for d in drafts]
        pending_keys = {k for i in pending for k in self._keys(i)}
        return verdicts.controlled(drafts, self.plan_alpha, pending_keys)

    def _evidence(self) -> tuple[list[Decision], dict[verdicts.Key, int]]:
        """Every headline comparison's evidence and the group each belongs to, as the
        trials stored so far give them (a group's computed again only when it has a new
        trial)."""
        for index, group_slots in enumerate(self.groups):
            keys = {s.cell.key for s in group_slots}
            mine = [t for t in self.loop.records if t.cell_key in keys]
            cached = self._cached.get(index)
            if cached is None or cached[0] != len(mine):
                rows = build_rows(mine, None, (), self.workload_facts, self.n_max_by_cell())
                found = verdicts.evidence_all(rows, self._base(), headline_only=True)
                self._cached[index] = (len(mine), found)
        drafts = [d for _, found in self._cached.values() for d in found]
        group_of = {d.key: i for i, (_, found) in self._cached.items() for d in found}
        return drafts, group_of  # type: ignore[return-value]

    def _needs(self, index: int) -> int | None:
        """The repetitions that would settle the group's open pairs at the noise measured
        (the most any settleable pair needs), within its planned looks; None when nothing
        is open or no open pair settles within them."""
        if self._complete(index):
            return None
        within = [n for n in self._pair_needs(index) if n <= self.plans[index].n_max]
        return max(within) if within else None

    def _needs_if_raised(self, open_groups: list[int]) -> dict[int, list[int]]:
        """Per group in `open_groups`, its open pairs' needs within max_reps (what
        budget.raise_by_need takes), each as looks up to max_reps would judge it: raised
        looks judge a group more strictly, so a need measured against the looks it has
        would fall short of what the raised looks need, and the group, once raised, would
        stop at once as one no round within its looks would settle."""
        kept = self.plans
        self.plans = [
            replace(g, n_max=max(g.n_max, self.plan.max_reps)) if i in open_groups else g
            for i, g in enumerate(kept)
        ]
        self._cached.clear()
        try:
            needs = {
                i: [n for n in self._pair_needs(i) if n <= self.plan.max_reps] for i in open_groups
            }
            return {i: found for i, found in needs.items() if found}
        finally:
            self.plans = kept
            self._cached.clear()

    def _pair_needs(self, index: int) -> list[int]:
        """Per undecided pair of the group, the repetitions that would settle it at the
        noise and difference measured (none for a pair nothing within the limit would
        settle)."""
        found = self.decisions(set(), explain=True)
        return [
            p.needed
            for k in self._keys(index)
            if k in found
            for p in found[k].pairs
            if p.kind == UNDECIDED and p.needed is not None
        ]

    # -- trials ---------------------------------------------------------------------

    def _warm(self, index: int) -> tuple[float, list[TrialRecord]]:
        """One warm-up trial of the group (loop.warmup_slot, before its first counted
        slot): seconds and records."""
        return self._warmed(self.loop.warmup_slot(_first(self.groups[index])))

    def _warm_cell(self, group_slots: Sequence[Slot], key: str) -> tuple[float, list[TrialRecord]]:
        """One warm-up trial of the group's cell `key`: seconds and records."""
        first = min((s for s in group_slots if s.cell.key == key), key=lambda s: s.seq)
        return self._warmed(replace(self.loop.warmup_slot(first), cell=first.cell))

    def _warmed(self, slot: Slot) -> tuple[float, list[TrialRecord]]:
        began = self.loop.clock()
        self.loop.run_slots([slot])
        took = self.loop.clock() - began
        records = [t for t in self.loop.store.get_trials(self.loop.run_id) if t.seq == slot.seq]
        return took, records

    def _rounds(self, index: int, first: int, last: int) -> None:
        """Counted rounds first..last of the group in one hand (a VM boots one guest for
        them), timed."""
        if last < first:
            return
        slots = [s for s in self.groups[index] if first <= s.rep <= last]
        began = self.loop.clock()
        ran = self.loop.run_slots(slots)
        if ran:
            per = (self.loop.clock() - began) / max(1, last - first + 1)
            self.counted_s.setdefault(index, []).extend([per] * (last - first + 1))
            self._note_spent()

    def _n(self, index: int) -> int:
        """Counted rounds the group has stored."""
        reps = [s.rep for s in self.groups[index] if s.seq in self.loop.stored and s.rep > 0]
        return max(reps, default=0)

    def _round_s(self, index: int) -> float:
        measured = self.counted_s.get(index)
        return statistics.fmean(measured) if measured else self.plans[index].cost.round_s

    def _warmup_s(self, index: int) -> float:
        """A warm-up trial of the group, as its plan (or re-plan) has it: 0 without."""
        return self.plans[index].cost.warmup_s if self.plan.warmup > 0 else 0.0

    def _fits(self, seconds: float) -> bool:
        if self.plan.budget is None:
            return True
        return self.loop.clock() - self.started + seconds <= self.plan.budget - self.reserved

    # -- what the run keeps -----------------------------------------------------------

    def n_max_by_cell(self) -> dict[str, int]:
        """Each cell's planned last look (what its comparisons' boundaries are for)."""
        return {
            slot.cell.key: self.plans[index].n_max
            for index, group_slots in enumerate(self.groups)
            for slot in group_slots
        }

    def _base(self) -> Design:
        return Design(True, MIN_REPS, self.plan.max_reps, self.plan.margin)

    def _keys(self, index: int) -> set[verdicts.Key]:
        """The group's comparisons."""
        _, group_of = self._evidence()
        return {k for k, i in group_of.items() if i == index}

    def _history(self) -> dict[str, costs.CellCost]:
        """This host's earlier trials of the run's cells (the last HISTORY_RUNS runs that
        have any): per cell key, the seconds each took and its first headline metric's
        values, whether exact counts as its last run had them."""
        keys = {s.cell.key for g in self.groups for s in g}
        hostname = self.loop.store.get_run(self.loop.run_id).host.hostname
        out: dict[str, costs.CellCost] = {}
        # An instrumented pass's trials (fsbench explain) cost the tracers' start too: not
        # what a counted trial of the cell costs.
        runs = [
            r
            for r in self.loop.store.list_runs()
            if r.id != self.loop.run_id
            and r.host.hostname == hostname
            and not r.part_of
            and not (r.plan or {}).get("instrumented")
        ]
        used = 0
        for run in reversed(runs):
            if used >= HISTORY_RUNS:
                break
            trials = self.loop.store.get_trials(run.id)
            if not any(t.cell_key in keys for t in trials):
                continue
            used += 1
            for key, found in costs.cell_history(trials, keys).items():
                mine = out.get(key)
                out[key] = (
                    replace(
                        mine,
                        seconds=mine.seconds + found.seconds,
                        values=mine.values + found.values,
                    )
                    if mine
                    else found
                )
        return out

    def _note_spent(self) -> None:
        """What the run has spent so far, kept with it: a resumed run goes on from it."""
        self.design.spent_s = round(self.loop.clock() - self.started, 2)
        self._keep()

    def _record(self, found: BudgetPlan, done: bool = False) -> None:
        """The run's design record: the plan, what it has spent so far, and at the end by
        how much and why it went over."""
        spent = self.loop.clock() - self.started
        design = found.record()
        design.cells = self.n_max_by_cell()
        design.warmup = "trial" if self.plan.warmup > 0 else "none"
        design.spent_s = round(spent, 2)
        if done:
            design.reached = [self._n(i) for i in range(len(self.groups))]
            design.warmups_run = len({t.seq for t in self.loop.records if t.warmup})
            if found.counted_budget is not None:
                over = spent - found.counted_budget
                design.over_s = round(max(0.0, over), 2)
                if over > budget.TOLERANCE * found.counted_budget:
                    design.over_why = _over_why(found, spent)
        self.design = design
        self._keep()

    def _keep(self) -> None:
        """The design into the run's facts, as the fields that were set."""
        facts = GridFacts(design=self.design).model_dump(mode="json", exclude_unset=True)
        self.loop.store.set_facts(self.loop.run_id, facts)


def _over_why(found: BudgetPlan, spent: float) -> str:
    need = found.spent + found.minimum_s
    if found.counted_budget is not None and need > found.counted_budget:
        kept = f" less {found.reserved:.0f} s for the instrumented pass" if found.reserved else ""
        return (
            f"the minimum rounds (n = 3 for timings, 2 for counts) were projected at "
            f"{need:.0f} s on this machine, beyond the budget of {found.budget:.0f} s{kept}"
        )
    # Looks raised by need count the answered groups' unused looks in planned_s: what the
    # rounds were planned to spend is at most the budget.
    planned = min(found.planned_s, found.counted_budget or found.planned_s)
    return (
        f"rounds took longer than projected ({spent:.0f} s spent against {planned:.0f} s planned)"
    )


def _cells(group_slots: Sequence[Slot]) -> list[Any]:
    return list({s.cell.key: s.cell for s in group_slots}.values())


def _names(groups: Sequence[Sequence[Slot]]) -> list[str]:
    """Each group by its workload and the parameters that tell it from the workload's
    other groups ('alloc method=write-4k'; 'fileserver')."""
    cells = [g[0].cell for g in groups]
    out = []
    for cell in cells:
        siblings = [c for c in cells if c.workload == cell.workload]
        varying = sorted(
            k for k in cell.params if len({str(c.params.get(k)) for c in siblings}) > 1
        )
        dims = " ".join(f"{k}={cell.params[k]}" for k in varying)
        out.append(f"{cell.workload} {dims}".strip())
    return out


def _cv(values: Sequence[float]) -> float | None:
    if len(values) < 3 or not statistics.fmean(values):
        return None
    return statistics.stdev(values) / abs(statistics.fmean(values))


def _first(group_slots: Sequence[Slot]) -> Slot:
    """The group's first counted slot (what its warm-up trial goes before)."""
    return min((s for s in group_slots if s.rep == 1), key=lambda s: s.seq)
