"""Trials on this host: one target (a sparse loop image, or a real disk after the safety
checks) serves every filesystem of the run; fsbench's Runner measures each trial.

`SlotRunner` is the part every place that runs the Runner shares (this host, and the
QEMU guest, which runs it on its scratch disk): the slots in order, a refused cell not
asked again, and each record stamped with where it ran in its round and what ran before.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from fsbench import workloads
from fsbench.execute.executors.base import (
    Executor,
    OnRecords,
    OnStart,
    check_fits,
    check_params,
    check_workloads,
    started,
)
from fsbench.execute.runner import Runner, cache_root, mount_root
from fsbench.execute.schedule import Slot
from fsbench.execute.targets import stale
from fsbench.execute.targets.base import Target
from fsbench.execute.targets.blockdev import BlockDevice
from fsbench.execute.targets.loop import LoopImage
from fsbench.plan.model import Cell, Plan
from fsbench.plan.targets import LoopTargetSpec
from fsbench.store.summaries import target_summary
from fsbench.system import cache as system
from fsbench.system import filesystems, monitors, servers
from fsbench.system.errors import FsbenchError


@dataclass
class SlotRunner:
    """Slots through one Runner, with the rules every executor keeps."""

    runner: Runner
    previous: str = ""  # the cell key of the last trial run here; "" before the first

    def run(
        self, slots: Sequence[Slot], refused: set[str], on_start: OnStart, on_records: OnRecords
    ) -> None:
        for slot in started(slots, refused, on_start):
            records = self.runner.run_cell(slot.seq, slot.rep, slot.cell)
            for record in records:
                record.position = slot.position
                record.previous_cell = self.previous
            self.previous = slot.cell.key
            if any(r.status == "unsupported" for r in records):
                refused.add(slot.cell.key)
            on_records(slot, records)


def make_target(t: LoopTargetSpec) -> Target:
    if t.device:
        return BlockDevice(t.device, destroy_data=t.destroy_data)
    if t.destroy_data:
        raise FsbenchError("--destroy-data only makes sense with --device")
    return LoopImage(t.workdir, t.image_size)


class LocalExecutor(Executor):
    kind: ClassVar[str] = "loop"

    def __init__(self, plan: Plan, cells: Sequence[Cell]) -> None:
        super().__init__(plan, cells)
        self.spec = self.target_spec(LoopTargetSpec)
        self.workdir = self.spec.workdir
        self.target = make_target(self.spec)
        self._slots: SlotRunner | None = None
        self._mnt = mount_root(self.workdir)

    def preflight(self) -> list[str]:
        if os.geteuid() != 0:
            raise FsbenchError("fsbench run needs root (mkfs, mount, losetup): run it as root")
        check_workloads(self.plan, vm=False)
        warnings: list[str] = []
        kernel = filesystems.kernel_filesystems()
        for config in self.plan.fs:
            avail = filesystems.availability(filesystems.get(config.type), kernel)
            if not avail.available:
                warnings.append(f"{config.display}: {avail.reason}; its cells will be unsupported")
        for spec in self.plan.workloads:
            if spec.scales and self.plan.scale not in spec.scales:
                continue
            for step in spec.steps:
                missing = workloads.get(step).missing()
                if missing:
                    raise FsbenchError(f"workload {step}: {missing}")
        missing = monitors.missing(self.plan.monitors)
        if missing:
            raise FsbenchError(missing)
        check_params(self.cells)
        if self.spec.device is None:  # a loop image's size is known before it exists
            check_fits(self.cells, self.spec.image_size, system.mem_total())
        return warnings

    def release_stale(self) -> list[str]:
        return stale.release_stale(self.workdir) if self.workdir.exists() else []

    def open(self) -> None:
        # A real device's safety checks happen here, before anything is written; its size
        # is known only now.
        self.target.open()
        try:
            if self.spec.device is not None:
                check_fits(self.cells, self.target.size_bytes, system.mem_total())
        except BaseException:
            self.target.close()
            raise
        runner = Runner(
            self.target,
            self._mnt,
            self.plan.scale,
            cache_root(self.workdir),
            self.plan.timeout,
            self.plan.steady,
            self.plan.monitors,
            self.plan.instrumented,
        )
        self._slots = SlotRunner(runner)

    def close(self) -> None:
        try:
            if self._slots is not None:
                self._slots.runner.close()  # a second device, the archives kept warm
            shutil.rmtree(servers.scratch_dir(self.workdir), ignore_errors=True)
            if self._mnt.exists() and not os.path.ismount(self._mnt):
                self._mnt.rmdir()
        finally:
            self.target.close()

    def describe(self) -> dict[str, Any]:
        desc = self.target.describe()
        return {**desc, "summary": target_summary(desc)}

    def run(
        self, slots: Sequence[Slot], refused: set[str], on_start: OnStart, on_records: OnRecords
    ) -> None:
        if self._slots is None:
            raise FsbenchError("the local executor is not open")
        self._slots.run(slots, refused, on_start, on_records)
