"""The grid run: one repetition loop for every place trials run, the driver of the grid's
kinds (a comparison, a calibration, a run on many hosts).

It decides what runs and in which order (schedule.py: comparison groups, a warm-up round,
balanced shuffled rounds), hands the slots to an executor (executors/: this host, a QEMU
guest, ...), stores every trial as soon as it comes back, and owns what its runs share:
`--reps auto` and `decide`, going on with a resumed run where it stopped. Its runs live
through the one session (session.py: set-up, create or reopen, interrupts, the end). It
knows nothing of where the trials run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from fsbench import workloads
from fsbench.analysis.budget import Instrumented
from fsbench.analysis.convergence import convergence, group_needs_more
from fsbench.execute import schedule, session
from fsbench.execute.decide import Decide
from fsbench.execute.executors import Executor, for_plan
from fsbench.execute.hooks import Hooks
from fsbench.execute.progress import ProgressHooks
from fsbench.execute.schedule import WARMUP_REP, Slot
from fsbench.execute.session import Driver
from fsbench.plan import model as planning
from fsbench.plan.model import MIN_AUTO_REPS, Cell, Plan
from fsbench.store import runkinds
from fsbench.store.records import RunRecord, TrialRecord
from fsbench.store.results import Store
from fsbench.store.runkinds import RunKind
from fsbench.system.errors import FsbenchError

# Exit codes of the grid's commands after a normal end (an interrupt is 130, a refusal 2).
EXIT_OK, EXIT_UNSUPPORTED, EXIT_FAILED = 0, 3, 4


@dataclass
class Outcome:
    run_id: int
    counts: dict[str, int] = field(default_factory=dict)  # status -> trials stored now
    interrupted: bool = False
    # What the executor could not finish (Executor.unfinished), one line each.
    unfinished: list[str] = field(default_factory=list)


def with_seed(plan: Plan) -> Plan:
    """The plan with its order seed fixed (a fresh one if it names none): the stored plan
    then reproduces the run's order exactly, on resume too."""
    if plan.seed is not None:
        return plan
    return plan.model_copy(update={"seed": schedule.new_seed()})


def slots_of(plan: Plan, cells: Sequence[Cell]) -> list[Slot]:
    if plan.seed is None:
        raise ValueError("slots_of needs a plan with its seed (with_seed)")
    # A decided run warms each group with one trial, added where it runs (`_Decide`), not
    # with a planned round.
    warmup = 0 if plan.reps == "decide" else plan.warmup
    return schedule.build(cells, plan.planned_reps, plan.seed, warmup, warms)


def warms(cell: Cell) -> bool:
    """Whether a cell's trials are warmed up (a crash series boots fresh guests: no)."""
    return all(workloads.get(name).warms for name, _ in cell.steps)


class GridDriver(Driver):
    """The driver of the grid's kinds (a comparison, a calibration; with the executor of
    many machines, a run on many hosts): the plan's matrix through the repetition loop, on the
    executor its target names. Its live display is the progress bar unless `view` says
    otherwise; `clock` is what the budget is counted on (a simulation's own); `instrumented`,
    a pass to follow the run, whose projected cost `--reps decide` keeps from the budget."""

    kind = runkinds.GRID

    def __init__(
        self,
        store: Store,
        plan: Plan,
        cells: Sequence[Cell],
        *,
        overrides: Mapping[str, list[str]],
        record: RunRecord | None = None,
        view: Hooks | None = None,
        executor: Executor | None = None,
        kind: RunKind | None = None,
        part: session.Part | None = None,
        tag: str = "",
        uid: str | None = None,
        argv: list[str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        instrumented: Instrumented | None = None,
    ) -> None:
        self.store, self.record, self.kind = store, record, kind or self.kind
        self.instrumented = instrumented
        self.plan = plan if record is not None else with_seed(plan)
        self.cells = list(cells)
        self.overrides = dict(overrides)
        self.view: Hooks = view if view is not None else self.live_view()
        self.executor: Executor = executor or for_plan(self.plan, self.cells)
        self.part, self.tag, self.uid, self.argv, self.clock = part, tag, uid, argv, clock
        self.slots = slots_of(self.plan, self.cells)
        self.outcome: Outcome | None = None

    def live_view(self) -> Hooks:
        """Its live display when none is given: the progress bar."""
        return ProgressHooks(len(self.cells), self.store)

    @classmethod
    def resume(cls, store: Store, record: RunRecord) -> GridDriver:
        plan = stored_plan(record)
        return cls(
            store,
            plan,
            planning.expand(plan, record.overrides),
            overrides=record.overrides,
            record=record,
            kind=runkinds.kind_of(record),
        )

    def start(self) -> session.NewRun:
        return session.NewRun(
            name=self.plan.name,
            plan=self.plan,
            schedule=[(s.rep, s.cell.key) for s in self.slots],
            overrides=self.overrides,
            uid=self.uid,
            part=self.part,
            tag=self.tag,
            argv=self.argv,
        )

    def body(self, life: session.Life) -> None:
        loop = _Loop(self.plan, self.cells, self.slots, self.store, self.executor, self.view,
                     life.run_id, self.clock, self.instrumented)  # fmt: skip
        self.outcome = loop.outcome
        loop.run()
        life.unfinished = loop.outcome.unfinished = self.executor.unfinished()

    @classmethod
    def exit_code(cls, store: Store, record: RunRecord) -> int:
        """0 when every cell measured; 3 when some were unsupported (results, not errors, but
        scripts should be able to tell); 4 when a trial failed or some of it could not run."""
        if record.status == "incomplete":
            return EXIT_FAILED
        statuses = {t.status for t in store.run_trials(record)}
        if "failed" in statuses:
            return EXIT_FAILED
        if "unsupported" in statuses:
            return EXIT_UNSUPPORTED
        return EXIT_OK


def stored_plan(record: RunRecord) -> Plan:
    """The plan a run keeps, as this fsbench reads it (one that no longer validates is
    refused in one line)."""
    try:
        return Plan.model_validate(record.plan)
    except ValidationError as exc:
        raise FsbenchError(
            f"run {record.id}: stored plan no longer valid: {planning.one_line(exc)}"
        ) from None


def run(
    plan: Plan,
    cells: Sequence[Cell],
    store: Store,
    *,
    hooks: Hooks | None = None,
    resume_run: int | None = None,
    kind: str = runkinds.GRID.name,
    **options: Any,
) -> Outcome:
    """The repetition loop called as a library (tests, simulations): the run (or with
    `resume_run`, the rest of it) lived through the session; every trial is stored as it
    ends. Returns with `interrupted` set after Ctrl-C (the run is then `interrupted` and a
    resume finishes it); any other error marks it `failed`. `options` are GridDriver's
    (overrides, argv, executor, part, uid, tag, clock)."""
    record = store.get_run(resume_run) if resume_run is not None else None
    driver = GridDriver(
        store, plan, cells, view=hooks or Hooks(), record=record, kind=runkinds.KINDS.get(kind),
        **options,
    )  # fmt: skip
    life = session.run(driver, command=False)
    outcome = driver.outcome or Outcome(life.run_id)
    outcome.interrupted = life.interrupted
    return outcome


class _Loop:
    def __init__(
        self,
        plan: Plan,
        cells: list[Cell],
        slots: list[Slot],
        store: Store,
        executor: Executor,
        hooks: Hooks,
        run_id: int,
        clock: Callable[[], float] = time.monotonic,
        instrumented: Instrumented | None = None,
    ) -> None:
        self.plan, self.cells, self.slots = plan, cells, slots
        self.clock, self.instrumented = clock, instrumented
        self.store, self.executor, self.hooks = store, executor, hooks
        self.outcome = Outcome(run_id)
        trials = store.get_trials(run_id)
        self.records = list(trials)  # every trial of the run stored so far, in order
        self.stored = {t.seq for t in trials}
        self.refused = {t.cell_key for t in trials if t.status == "unsupported"}
        self.dropped = 0  # slots --reps auto decided not to run
        self.scheduled = {s.seq for s in slots}
        # Warm-ups added after the schedule (a resumed run, a fresh guest) take the seqs
        # after it, so every trial keeps a seq of its own across resumes.
        self.next_seq = max([len(slots), *(s + 1 for s in self.stored)])
        self.handed = False  # nothing has run in this process yet

    @property
    def total(self) -> int:
        """Slots that will have run at the end, as far as is known now: a refused cell's
        and a converged group's remaining slots do not count."""
        skipped = sum(
            1 for s in self.slots if s.cell.key in self.refused and s.seq not in self.stored
        )
        return len(self.slots) - skipped - self.dropped

    @property
    def run_id(self) -> int:
        return self.outcome.run_id

    def run(self) -> None:
        self.hooks.begin(self.run_id, self.plan, self.done, self.total, self.executor.banner())
        if self.executor.whole_plan:
            self.executor.run(self.slots, self.refused, self._started, self._finished)
            return
        if self.plan.reps == "decide":
            self._until_decided()
            return
        if self.plan.reps != "auto":
            self._hand(self.slots)
            return
        by_group: dict[int, list[Slot]] = {}
        for slot in self.slots:
            by_group.setdefault(slot.group, []).append(slot)
        for group_slots in by_group.values():
            members = list({s.cell.key: s.cell for s in group_slots}.values())
            self._hand([s for s in group_slots if s.rep <= MIN_AUTO_REPS])
            for rep in range(MIN_AUTO_REPS + 1, self.plan.planned_reps + 1):
                rest = [s for s in group_slots if s.rep >= rep]
                if not group_needs_more(self.plan, members, self.store.get_trials(self.run_id)):
                    self.dropped += sum(
                        1
                        for s in rest
                        if s.seq not in self.stored and s.cell.key not in self.refused
                    )
                    break
                self._hand([s for s in rest if s.rep == rep])
        self.store.set_convergence(
            self.run_id, convergence(self.plan, self.cells, self.store.get_trials(self.run_id))
        )

    def by_group(self) -> dict[int, list[Slot]]:
        out: dict[int, list[Slot]] = {}
        for slot in self.slots:
            out.setdefault(slot.group, []).append(slot)
        return out

    def _until_decided(self) -> None:
        """`--reps decide`: the design planned from the budget, then rounds per group until
        every pair of its configs is ordered or equivalent (decide.py)."""
        Decide(self).run()

    def _hand(self, slots: Sequence[Slot], rewarm: bool = False) -> None:
        """Slots not stored yet (a resumed run skips the rest) to the executor, after a
        warm-up where they would otherwise start cold with a counted trial (`rewarm`: the
        group is taken up again after other work)."""
        self.run_slots(slots, cold=rewarm or not self.handed)

    def run_slots(self, slots: Sequence[Slot], cold: bool = False) -> bool:
        """The slots not stored yet nor refused, to the executor; a warm-up first when
        they start `cold` or the executor starts them on a fresh machine (a booted guest).
        Whether anything ran."""
        pending = [s for s in slots if s.seq not in self.stored]
        pending = [s for s in pending if s.cell.key not in self.refused]
        if not pending:
            return False
        cold = cold or self.executor.fresh_start(pending[0])
        if cold and not pending[0].warmup and self.plan.warmup > 0 and warms(pending[0].cell):
            pending.insert(0, self.warmup_slot(pending[0]))
        self.handed = True
        self.executor.run(pending, self.refused, self._started, self._finished)
        self.store.set_target(self.run_id, self.executor.describe())
        return True

    def warmup_slot(self, first: Slot) -> Slot:
        """A warm-up trial before `first`, of the cell the schedule runs just before it in
        its group (so `first` follows what the design meant it to follow): stored, never
        counted, like the warm-up round. The first trial after a restart or in a freshly
        booted guest then counts for nobody."""
        before = [s for s in self.slots if s.group == first.group and s.seq < first.seq]
        cell = before[-1].cell if before else first.cell
        slot = Slot(self.next_seq, WARMUP_REP, first.position, first.group, cell)
        self.next_seq += 1
        return slot

    @property
    def done(self) -> int:
        """Scheduled slots stored (added warm-ups are extra, not progress)."""
        return len(self.stored & self.scheduled)

    def _started(self, slot: Slot) -> None:
        self.hooks.started(slot, self.done, self.total)

    def _finished(self, slot: Slot, records: list[TrialRecord]) -> None:
        self.store.record_trials(self.run_id, records)
        self.records.extend(records)
        self.stored.add(slot.seq)
        counts = self.outcome.counts
        for record in records:
            counts[record.status] = counts.get(record.status, 0) + 1
        self.hooks.finished(slot, records, self.done, self.total)
