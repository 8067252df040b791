"""A fake executor: the repetition loop (matrix.run) driven without root, mkfs or a disk.

Its "measurement" is a function of the slot and of what ran before it, so tests can model
a machine whose state moves results: the first trial after other work runs slow, the
first place of every round is penalised, a config is noisier than another. Everything
else (the store, the schedule, convergence, resume, interrupt) is the real code.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from fsbench.execute.executors.base import Executor, OnRecords, OnStart
from fsbench.execute.schedule import Slot
from fsbench.plan.model import Cell, Plan
from fsbench.store.records import MetricRecord, TrialRecord, now


@dataclass
class Ran:
    """What the fake knows when it measures a slot."""

    slot: Slot
    previous: Slot | None  # the slot run just before, in this executor


Measure = Callable[[Ran], float]


def steady(value: float = 1.0, noise: float = 0.01, seed: int = 1) -> Measure:
    rng = random.Random(seed)

    def measure(ran: Ran) -> float:
        return value * (1 + rng.gauss(0, noise))

    return measure


@dataclass
class FakeExecutor(Executor):
    """Runs slots by calling `measure`; raises KeyboardInterrupt before the slot number
    `interrupt_at` (counted over this executor's life); a cell whose config label is in
    `refuse` is `unsupported`; `metric` names the one metric each trial reports."""

    kind: ClassVar[str] = "fake"

    plan: Plan
    cells: list[Cell]
    measure: Measure = field(default_factory=steady)
    interrupt_at: int | None = None
    refuse: set[str] = field(default_factory=set)
    metric: str = "seconds"
    unit: str = "s"  # the metric's unit ("count": a count fsbench reads itself)
    # Every run() call starts on a machine nothing has warmed (a freshly booted guest).
    fresh: bool = False
    preflights: int = 0
    opened: int = 0
    closed: int = 0
    ran: list[Slot] = field(default_factory=list)

    def preflight(self) -> list[str]:
        self.preflights += 1
        return []

    def open(self) -> None:
        self.opened += 1

    def close(self) -> None:
        self.closed += 1

    def describe(self) -> dict[str, Any]:
        return {"kind": "fake", "summary": "a fake executor"}

    def fresh_start(self, slot: Slot) -> bool:
        return self.fresh

    def run(
        self, slots: Sequence[Slot], refused: set[str], on_start: OnStart, on_records: OnRecords
    ) -> None:
        in_call: list[Slot] = []
        for slot in slots:
            if slot.cell.key in refused:
                continue
            if self.interrupt_at is not None and len(self.ran) >= self.interrupt_at:
                raise KeyboardInterrupt
            on_start(slot)
            before = in_call if self.fresh else self.ran
            previous = before[-1] if before else None
            records = [
                self._record(slot, name, params, previous, step)
                for step, (name, params) in enumerate(slot.cell.steps)
            ]
            if any(r.status == "unsupported" for r in records):
                refused.add(slot.cell.key)
            self.ran.append(slot)
            in_call.append(slot)
            on_records(slot, records)

    def _record(
        self, slot: Slot, name: str, params: dict[str, Any], previous: Slot | None, step: int = 0
    ) -> TrialRecord:
        cell = slot.cell
        refused = cell.config.display in self.refuse
        return TrialRecord(
            seq=slot.seq,
            rep=slot.rep,
            cell_key=cell.key,
            config=cell.config.display,
            fs=cell.config.type,
            mkfs_options=list(cell.config.mkfs),
            mount_options=cell.config.mount,
            workload=name,
            params=params,
            step=step,
            chain=cell.workload if cell.is_chain else "",
            knobs=dict(cell.knobs),
            status="unsupported" if refused else "ok",
            message="refused by the fake kernel" if refused else "",
            started_at=now(),
            finished_at=now(),
            metrics=[]
            if refused
            else [MetricRecord(self.metric, self.measure(Ran(slot, previous)), self.unit, "lower")],
            position=slot.position,
            previous_cell=previous.cell.key if previous else "",
        )
