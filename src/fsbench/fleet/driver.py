"""The run on many hosts, driven (the fleet kind's driver): the grid's repetition loop with
the fleet executor (fleet/executor.py: each host runs the plan with its own loop, as a part
of the run), shown host by host."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)

from fsbench.execute import loop
from fsbench.execute.hooks import Hooks
from fsbench.execute.loop import GridDriver
from fsbench.execute.progress import Display
from fsbench.fleet.executor import HostRun
from fsbench.fleet.target import FLEET_RUN, FleetTargetSpec
from fsbench.plan import model as planning
from fsbench.plan.model import Plan
from fsbench.store.records import RunRecord
from fsbench.store.results import Store


class HostProgress(Display):
    """One bar per host: trials done / total and its ETA, or its state (the fleet executor
    calls `hosts` at every poll)."""

    def __init__(self, store: Store, err: Console | None = None) -> None:
        self.err, self.store = err or Console(stderr=True), store
        self.progress = Progress(
            TextColumn("{task.fields[host]:<16}"),
            MofNCompleteColumn(),
            BarColumn(bar_width=24),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TextColumn("{task.description}"),
            console=self.err,
            transient=False,
        )
        self.tasks: dict[str, TaskID] = {}

    def note(self, text: str) -> None:
        self.err.print(text, markup=False, highlight=False)

    def begin(self, run_id: int, plan: Plan, done: int, total: int, banner: str) -> None:
        self.err.print(
            f"fsbench fleet: run {run_id}, {plan.name} {banner}, store {self.store}",
            markup=False,
            highlight=False,
        )
        self.progress.start()  # only now: a refusal before the run prints one line, no bars

    def hosts(self, hosts: list[HostRun]) -> None:
        for h in hosts:
            name = h.host.name
            if name not in self.tasks:
                self.tasks[name] = self.progress.add_task("", total=None, host=name)
            text = h.state if not h.error else f"{h.state}: {h.error}"
            self.progress.update(
                self.tasks[name],
                total=h.total or None,
                completed=h.done,
                description=text[:90],
            )


class FleetDriver(GridDriver):
    """The run on many hosts: the plan, whole, to the fleet executor; each host's part a
    run of its own (runs.part_of) in the same store; shown host by host."""

    kind = FLEET_RUN

    def live_view(self) -> Hooks:
        return HostProgress(self.store)

    @classmethod
    def resume(
        cls, store: Store, record: RunRecord, target: Mapping[str, Any] | None = None
    ) -> FleetDriver:
        """Goes on with `record` on its stored target, or `target` (the command's flags
        over it: `stored_target`)."""
        plan = loop.stored_plan(record)
        fleet = FleetTargetSpec.model_validate(stored_target(record) if target is None else target)
        plan = plan.model_copy(update={"target": fleet})
        cells = planning.expand(plan, record.overrides)
        return cls(store, plan, cells, overrides=record.overrides, record=record)


def stored_target(record: RunRecord) -> dict[str, Any]:
    """The run's fleet target as stored (or, stored before it was one, made from the loop
    image's size)."""
    plan = loop.stored_plan(record)
    if isinstance(plan.target, FleetTargetSpec):
        return plan.target.model_dump()
    return {"image_size": plan.target.image_size}
