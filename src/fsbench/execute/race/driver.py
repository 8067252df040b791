"""The race of `fsbench tune`, driven (the tune kind's driver): rounds of trials through an
executor, stored like any run's, each fed to the race (execute/race/rule.py) as soon as it
is complete.

- The schedule is the repetition loop's (schedule.py): one comparison group, an uncounted
  warm-up round, then rounds in a Williams order (positions and neighbours balanced over
  the rounds), configs cast into the design by the run's seed, planned up to the last
  round. A round runs the slots of the configs still alive, in that order: dropping a
  config takes its slots out and keeps the others' order. Every slot keeps its `seq` in
  the planned schedule, so a resumed race numbers its trials as the first one would have.
- Trials are stored as they end (kind `tune`, `rep` = the round); the race's settings and
  space are the run's facts (trials.py: TuneSpec). The race is never stored: it is
  replayed from the trials (execute/race/trials.py), by a resume and by reports alike.
  The run lives through the one session every run has (execute/session.py: set-up,
  create or reopen, interrupts, the end).
- Resume: the stored rounds are replayed into a new race; the round a kill cut short
  keeps its stored trials and runs the rest, after a warm-up trial (the first trial of a
  process counts for nobody, as in the loop).
- The budget: the plan's (`--budget`), the race's share of it (`RaceSpace.budget`: split
  evenly when the space made several races) its wall time, mkfs, mounts and warm-ups
  included, kept with the race after every round so that a resumed race counts what the
  killed one spent; a round that would go past it (at the pace of the rounds so far) is
  not started.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from fsbench.execute import schedule
from fsbench.execute.executors import Executor, for_plan
from fsbench.execute.loop import slots_of, stored_plan, warms, with_seed
from fsbench.execute.race.rule import BUDGET
from fsbench.execute.race.trials import RaceSpace, Replay, TuneSpec
from fsbench.execute.race.view import LiveView, Watch
from fsbench.execute.schedule import WARMUP_REP, Slot
from fsbench.execute.session import Driver, Life, NewRun
from fsbench.plan import model as planning
from fsbench.plan.model import Cell, Plan
from fsbench.store import runkinds
from fsbench.store.records import RunRecord, TrialRecord
from fsbench.store.results import Store
from fsbench.system import knobs
from fsbench.system.errors import FsbenchError

Races = list[tuple[list[Cell], dict[str, list[str]]]]


def split(cells: Sequence[Cell], duplicates: int = 0) -> tuple[RaceSpace, Races]:
    """The races a space makes, and the space as each keeps it: one race per comparison
    group of one workload (a parameter the scale sweeps, threads 1 and 4, gives one race
    per value), each with the --set that narrows the plan to it (kept with its run: a
    resume expands that group only). Several workloads or kernels are refused: a race
    compares configs at one of each."""
    found = schedule.groups(cells)
    if len({(c.workload, c.knobs.get(knobs.KERNEL, "")) for c in cells}) > 1:
        raise FsbenchError(
            f"fsbench tune races configs on one workload under one kernel; this plan has "
            f"{len(found)} comparison groups (several workloads or kernels): give one"
        )
    varying = sorted(
        {k for g in found for k in g[0].params if g[0].params[k] != found[0][0].params[k]}
    )
    out = []
    for group in found:
        names = [c.config.display for c in group]
        if len(set(names)) != len(names):
            raise FsbenchError("fsbench tune: one cell per config expected")
        if len(names) < 2:
            raise FsbenchError(
                f"fsbench tune races two configs or more; this space has one ({names[0]}): "
                "give alternatives in braces (--fs 'ext4:mount={noatime,relatime}') or a "
                "[search] table"
            )
        out.append((group, {k: [_set_value(group[0].params[k])] for k in varying}))
    return RaceSpace(duplicates=duplicates, races=len(out), by=varying), out


def _set_value(value: object) -> str:
    """A parameter's value as --set gives it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def config_names(cells: Sequence[Cell]) -> dict[str, str]:
    """Cell key -> the config's name in the race (its display label)."""
    return {c.key: c.config.display for c in cells}


class RaceDriver(Driver):
    """The tune kind's driver: one race of configs (one comparison group: `split`), on
    one machine."""

    kind = runkinds.TUNE

    def __init__(
        self,
        store: Store,
        plan: Plan,
        cells: Sequence[Cell],
        spec: TuneSpec,
        *,
        overrides: Mapping[str, list[str]],
        record: RunRecord | None = None,
        view: Watch | None = None,
        executor: Executor | None = None,
    ) -> None:
        self.store, self.record, self.spec = store, record, spec
        self.cells, self.overrides = list(cells), dict(overrides)
        if split(self.cells)[0].races != 1:
            raise FsbenchError("fsbench tune: a race runs one comparison group (race.split)")
        self.plan = plan if record is not None else with_seed(plan)
        self.executor = executor or for_plan(self.plan, self.cells)
        if self.executor.whole_plan:
            raise FsbenchError(
                f"fsbench tune runs on one machine, not on a {plan.target.kind} target"
            )
        self.view: Watch = view if view is not None else LiveView(spec, store)
        self.slots = slots_of(self.plan.model_copy(update={"reps": spec.max_rounds}), self.cells)

    @classmethod
    def resume(cls, store: Store, record: RunRecord) -> RaceDriver:
        if not record.facts:
            raise FsbenchError(f"run {record.id} keeps no race settings: it cannot be resumed")
        plan = stored_plan(record)
        spec = TuneSpec.model_validate(record.facts)
        cells = planning.expand(plan, record.overrides)
        return cls(store, plan, cells, spec, overrides=record.overrides, record=record)

    def start(self) -> NewRun:
        return NewRun(
            name=self.plan.name,
            plan=self.plan,
            schedule=[(s.rep, s.cell.key) for s in self.slots],
            overrides=self.overrides,
            facts=self.spec,
        )

    def body(self, life: Life) -> None:
        assert self.executor is not None
        rounds = _Rounds(self, life.run_id)
        rounds.run()
        final = rounds.spec.model_copy(update={"stop": rounds.state.finish().result().stop})
        self.store.set_facts(life.run_id, final.model_dump(mode="json"))


class _Rounds:
    """The race's rounds in one process: the stored ones replayed, the rest run."""

    def __init__(self, driver: RaceDriver, run_id: int) -> None:
        assert driver.executor is not None
        self.plan, self.slots, self.store = driver.plan, driver.slots, driver.store
        self.executor, self.watch, self.run_id = driver.executor, driver.view, run_id
        self.spec = spec = driver.spec
        self.budget = spec.space.budget(self.plan.budget)
        self.names = config_names(driver.cells)
        self.configs = list(dict.fromkeys(c.config.display for c in driver.cells))
        slots, store = self.slots, self.store
        self.records: dict[int, list[TrialRecord]] = {}
        for t in store.get_trials(run_id):
            self.records.setdefault(t.seq, []).append(t)
        self.refused = {
            t.cell_key for ts in self.records.values() for t in ts if t.status == "unsupported"
        }
        self.resumed = len(self.records)
        self.next_seq = max([len(slots), *(s + 1 for s in self.records)])
        self.handed = False
        self.state = Replay(self.configs, spec)
        self.clock = self.round_clock = time.monotonic()
        self.spent_before = spec.spent
        self.pace: float | None = None  # wall seconds per trial in this process

    def run(self) -> None:
        self.watch.begin(self.run_id, self.plan, self.resumed, self.executor.banner())
        rounds = sorted({s.rep for s in self.slots})
        for rnd in rounds:
            if self.state.done:
                break
            alive = set(self.state.alive)
            mine = [s for s in self.slots if s.rep == rnd and self.names[s.cell.key] in alive]
            pending = [s for s in mine if s.seq not in self.records]
            if pending and rnd != WARMUP_REP and self._over_budget(len(pending)):
                race = self.state.finish()
                race.stop(BUDGET)
                return
            self.watch.round_begins(rnd, self.state.alive, len(pending))
            self.round_clock = time.monotonic()
            self._hand(pending)
            by_config: dict[str, list[TrialRecord]] = {}
            for slot in mine:
                by_config[self.names[slot.cell.key]] = self.records.get(slot.seq, [])
            dropped = self.state.feed(rnd, by_config)
            if dropped is None:
                # A trial of the round did not come back (the executor skipped it):
                # nothing can be decided on an incomplete round.
                raise FsbenchError(f"round {rnd}: some trials did not run")
            self.watch.round_ends(rnd, self.state.alive, dropped)
            if pending:
                self._spent(len(pending))

    def _spent(self, ran: int) -> None:
        """The wall time so far, kept with the race; the pace per trial."""
        now = time.monotonic()
        self.pace = (now - self.round_clock) / ran
        self.round_clock = now
        self.spec = self.spec.model_copy(update={"spent": self.spent_before + now - self.clock})
        self.store.set_facts(self.run_id, self.spec.model_dump(mode="json"))

    def _over_budget(self, pending: int) -> bool:
        if self.budget is None:
            return False
        spent = self.spent_before + time.monotonic() - self.clock
        return spent + (self.pace or 0.0) * pending > self.budget

    def _hand(self, pending: list[Slot]) -> None:
        pending = [s for s in pending if s.cell.key not in self.refused]
        if not pending:
            return
        cold = (self.resumed and not self.handed) or self.executor.fresh_start(pending[0])
        if cold and not pending[0].warmup and self.plan.warmup > 0 and warms(pending[0].cell):
            pending.insert(0, self._rewarm(pending[0]))
        self.handed = True
        self.executor.run(pending, self.refused, lambda slot: None, self._finished)
        self.store.set_target(self.run_id, self.executor.describe())

    def _rewarm(self, first: Slot) -> Slot:
        """A warm-up trial before `first` (stored, never counted): of the config alive that
        the design runs just before it, else its own."""
        alive = set(self.state.alive)
        before = [s for s in self.slots if s.seq < first.seq and self.names[s.cell.key] in alive]
        cell = before[-1].cell if before else first.cell
        slot = Slot(self.next_seq, WARMUP_REP, first.position, first.group, cell)
        self.next_seq += 1
        return slot

    def _finished(self, slot: Slot, records: list[TrialRecord]) -> None:
        self.store.record_trials(self.run_id, records)
        self.records[slot.seq] = records
        self.watch.trial(slot, records)
