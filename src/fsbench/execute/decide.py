"""`--reps decide`: the run's design planned from its budget, then rounds until decided.

1. **Projection.** Each comparison group's time per round comes from this host's earlier
   trials of the same cells in the store, or else from one warm-up trial of the group (run
   for every group before any counted round: the plan needs them all).
2. **Plan.** The budget left is shared out as looks (analysis/budget.py); each group's
   sequential boundaries are computed for its looks only. The plan is said before the
   counted rounds: per group, its looks and what differences they can tell apart.
3. **Minimum.** Every group's first rounds (n = 3 for timings, 2 for exact counts), group
   after group; a group whose projection came from the store gets its warm-up trial just
   before them.
4. **Re-plan.** The looks are shared out again from what the minimum rounds and the warm-up
   trial before them cost (budget.replan), before any look is taken: nothing so far has
   stopped a group on a timing, so each group's boundaries are still those of its final
   looks. A resumed run keeps the plan it had.
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

from fsbench import workloads
from fsbench.analysis import budget, verdicts
from fsbench.analysis.budget import BudgetPlan, GroupCost
from fsbench.analysis.decisions import UNDECIDED, Decision
from fsbench.analysis.design import EXACT_UNITS, MIN_REPS, MIN_REPS_EXACT, Design
from fsbench.analysis.rows import build_rows
from fsbench.execute.hooks import Hooks
from fsbench.execute.schedule import Slot
from fsbench.plan.model import Plan
from fsbench.store import runkinds, trialfacts
from fsbench.store.griddesign import GridDesign
from fsbench.store.records import TrialRecord, slot_seconds
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
            costs, from_warmups = self._project()
            spent = self.loop.clock() - self.started
            found = budget.plan(
                costs, self.plan.budget, spent, self.plan.max_reps, from_warmups,
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

    def _project(self) -> tuple[list[GroupCost], bool]:
        """Every group's projected cost: from this host's stored trials of its cells when
        all have some, else from one warm-up trial of each group, run now (stored, never
        counted); and whether it came from those warm-ups."""
        history = self._history()
        names = _names(self.groups)
        costs: list[GroupCost | None] = []
        for index, group_slots in enumerate(self.groups):
            cells = _cells(group_slots)
            if all(c.key in history for c in cells):
                seconds = sum(statistics.median(history[c.key][0]) for c in cells)
                noise = [n for c in cells if (n := _cv(history[c.key][1])) is not None]
                costs.append(
                    GroupCost(
                        names[index],
                        len(cells),
                        seconds,
                        _counts_only(history[cells[0].key][2]),
                        statistics.median(noise) if noise else None,
                        seconds / len(cells) if self.plan.warmup > 0 else 0.0,
                    )
                )
            else:
                costs.append(None)
        if all(c is not None for c in costs):
            return [c for c in costs if c is not None], False
        out = []
        for index, group_slots in enumerate(self.groups):
            cells = _cells(group_slots)
            took, records = self._warm(index)
            warmup = took if self.plan.warmup > 0 else 0.0
            cost = GroupCost(
                names[index], len(cells), took * len(cells), _counts_only(records), None, warmup
            )
            out.append(cost)
        return out, True

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
        self._record(found)
        return found

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
        found = self.decisions(set(), explain=True)
        needs = [
            p.needed
            for k in self._keys(index)
            if k in found
            for p in found[k].pairs
            if p.kind == UNDECIDED and p.needed is not None
        ]
        within = [n for n in needs if n <= self.plans[index].n_max]
        return max(within) if within else None

    # -- trials ---------------------------------------------------------------------

    def _warm(self, index: int) -> tuple[float, list[TrialRecord]]:
        """One warm-up trial of the group (its first counted cell): seconds and records."""
        group_slots = self.groups[index]
        first = min((s for s in group_slots if s.rep == 1), key=lambda s: s.seq)
        slot = self.loop.warmup_slot(first)
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
        cost = self.plans[index].cost
        return self._round_s(index) / max(cost.configs, 1) if self.plan.warmup > 0 else 0.0

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

    def _history(self) -> dict[str, tuple[list[float], list[float], list[TrialRecord]]]:
        """This host's earlier trials of the run's cells (the last HISTORY_RUNS runs that
        have any): per cell key, the seconds each took, its first headline metric's
        values, and the trials of its last run."""
        keys = {s.cell.key for g in self.groups for s in g}
        hostname = self.loop.store.get_run(self.loop.run_id).host.hostname
        out: dict[str, tuple[list[float], list[float], list[TrialRecord]]] = {}
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
            for key, seconds, values, records in _cell_history(trials, keys):
                mine = out.setdefault(key, ([], [], records))
                mine[0].extend(seconds)
                mine[1].extend(values)
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
    return (
        f"rounds took longer than projected ({spent:.0f} s spent against "
        f"{found.planned_s:.0f} s planned)"
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


def _counts_only(records: Sequence[TrialRecord]) -> bool:
    """Whether the headline metrics these trials report are all exact counts."""
    units = []
    for t in records:
        if t.status != "ok":
            continue
        headline = _headline_of(t)
        units += [m.unit for m in t.metrics if m.name in headline]
    return bool(units) and all(u in EXACT_UNITS for u in units)


def _cv(values: Sequence[float]) -> float | None:
    if len(values) < 3 or not statistics.fmean(values):
        return None
    return statistics.stdev(values) / abs(statistics.fmean(values))


def _cell_history(
    trials: Sequence[TrialRecord], keys: set[str]
) -> list[tuple[str, list[float], list[float], list[TrialRecord]]]:
    """Per cell of `keys` in one run's stored trials: what each of its counted slots cost
    the run (store.records.slot_seconds, over all the run's trials), its first headline
    metric's values, and its trials."""
    cost = slot_seconds(list(trials))
    by_cell: dict[str, list[TrialRecord]] = {}
    for t in trials:
        if t.status == "ok" and not t.warmup and t.cell_key in keys:
            by_cell.setdefault(t.cell_key, []).append(t)
    out = []
    for key, records in by_cell.items():
        seconds = [cost[seq] for seq in sorted({t.seq for t in records}) if seq in cost]
        headline = _headline_of(records[0])
        values = [
            m.value
            for t in records
            if t.step == 0
            for m in t.metrics
            if headline and m.name == headline[0]
        ]
        if seconds:
            out.append((key, seconds, values, records))
    return out


def _headline_of(trial: TrialRecord) -> tuple[str, ...]:
    """The trial's headline metrics: as it recorded them, else its workload's."""
    recorded = trialfacts.headline(trial.provenance)
    if recorded:
        return tuple(recorded)
    try:
        return tuple(workloads.get(trial.workload).headline)
    except KeyError:  # a workload this fsbench no longer has
        return ()
