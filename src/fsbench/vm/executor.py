"""Trials inside a QEMU guest with its own kernel: filesystems this kernel lacks, other
kernels, boot tests. Each guest boots the cached image with a fresh scratch disk and runs
fsbench's own Runner there (executors.local.SlotRunner); its records stream back as they
are written. A guest runs one kernel and whole comparison groups, about one round's worth
of trials; a boot trial is a guest of its own."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from itertools import groupby
from typing import TYPE_CHECKING, Any, ClassVar

from fsbench import workloads
from fsbench.execute.executors import base as checks
from fsbench.execute.executors.base import Executor, OnRecords, OnStart
from fsbench.execute.schedule import Slot
from fsbench.plan.model import Cell, Plan
from fsbench.store import trialfacts
from fsbench.store.records import TrialRecord
from fsbench.store.summaries import vm_notes, vm_summary
from fsbench.system import knobs
from fsbench.system.errors import FsbenchError
from fsbench.vm import measured as measured_on_host
from fsbench.vm.target import VmTargetSpec

if TYPE_CHECKING:  # QEMU, images: imported when a VM run asks for them
    from fsbench.vm import VmCell, VmSpec


def chunks(slots: Sequence[Slot], kernel_of: dict[str, str | None]) -> list[list[Slot]]:
    """Slots cut into guests: contiguous slots of one kernel, whole groups at a time, up to
    one slot per cell of that kernel (about one round, as many guests as rounds), and at
    least one group: each guest starts with a group's first slots, never mid-group."""
    cap = Counter(kernel_of.values())
    runs: list[list[Slot]] = []  # the slots of one group, contiguous
    for slot in slots:
        if runs and runs[-1][-1].group == slot.group:
            runs[-1].append(slot)
        else:
            runs.append([slot])
    out: list[list[Slot]] = []
    for run in runs:
        kernel = kernel_of[run[0].cell.key]
        last = out[-1] if out else None
        if last and kernel_of[last[0].cell.key] == kernel and len(last) + len(run) <= cap[kernel]:
            last.extend(run)
        else:
            out.append(list(run))
    return out


def check_kernel(spec: str | None) -> None:
    """Refuse a --kernel that cannot be had, before anything runs: a path with no kernel
    in it, a spec that names no Debian kernel, a package apt does not know. Downloading it
    waits for the run (a cached kernel needs no apt)."""
    from fsbench.system import proc
    from fsbench.vm import kernels
    from fsbench.vm.cache import DEFAULT_CACHE

    if spec and ("/" in spec or os.path.exists(spec)):
        kernels.path_kernel(spec)
        return
    package = kernels.kernel_package(spec)
    if (DEFAULT_CACHE / "kernels" / package / "kernel.json").is_file():
        return
    res = proc.run(["apt-cache", "show", "--no-all-versions", package], timeout=60)
    if not res.ok or not res.stdout.strip():
        raise FsbenchError(
            f"--kernel {spec}: apt knows no package {package} (apt-cache search linux-image "
            "lists them; run apt-get update if the list is old)"
        )


class VmExecutor(Executor):
    kind: ClassVar[str] = "vm"

    def __init__(self, plan: Plan, cells: Sequence[Cell]) -> None:
        super().__init__(plan, cells)
        self.spec = self.target_spec(VmTargetSpec)
        self.default_kernel = self.spec.kernels[0]
        self.guests: dict[str, dict[str, Any]] = {}  # kernel -> the guest's provenance

    def _kernel(self, cell: Cell) -> str | None:
        return cell.knobs.get(knobs.KERNEL, self.default_kernel)

    def _spec(self, kernel: str | None) -> VmSpec:
        from fsbench import vm

        t = self.spec
        return vm.VmSpec(
            kernel=kernel,
            ram_mb=t.guest_ram_mb,
            vcpus=t.vcpus,
            scratch_bytes=t.image_size,
            throttle=dict(t.throttle),
            workdir=t.workdir,
        )

    def preflight(self) -> list[str]:
        if os.geteuid() != 0:
            raise FsbenchError("fsbench run needs root (mkfs, mount, losetup): run it as root")
        checks.check_workloads(self.plan, vm=True)
        # The guest judges its own tools; the files the host carries to it are checked here.
        checks.check_params(self.cells, inputs_only=True)
        # The guest's kernel and tools decide; this host only needs QEMU.
        from fsbench.system.qemu import qemu_missing

        missing = qemu_missing()
        if missing:
            raise FsbenchError(missing)
        for kernel in dict.fromkeys(self._kernel(c) for c in self.cells):
            check_kernel(kernel)
        checks.check_fits(self.cells, self.spec.image_size, self.spec.guest_ram_mb << 20)
        return []

    def release_stale(self) -> list[str]:
        from fsbench import vm

        return list(vm.release_stale(self.spec.workdir))

    def banner(self) -> str:
        kernels = ", ".join(k or "default" for k in self.spec.kernels)
        return (
            f"in a QEMU guest (kernel {kernels}); the first run builds the guest image "
            "(a few minutes, cached)"
        )

    def fresh_start(self, slot: Slot) -> bool:
        # Every run() boots fresh guests; a boot trial is a guest of its own and a boot
        # after a boot is what it measures.
        return not workloads.get(slot.cell.workload).vm_only

    def describe(self) -> dict[str, Any]:
        """The last guest's provenance, and every kernel's when several."""
        if not self.guests:
            return {"kind": self.kind, "summary": "QEMU guest (not booted yet)"}
        last = list(self.guests.values())[-1]
        out: dict[str, Any] = {"kind": self.kind, **last}
        if len(self.guests) > 1:
            out["kernels"] = {k: g.get("kernel_version") for k, g in self.guests.items()}
        out["summary"] = vm_summary(out)
        out["notes"] = vm_notes(out)
        return out

    def run(
        self, slots: Sequence[Slot], refused: set[str], on_start: OnStart, on_records: OnRecords
    ) -> None:
        kernel_of = {c.key: self._kernel(c) for c in self.cells}
        for chunk in chunks(slots, kernel_of):
            kernel = kernel_of[chunk[0].cell.key]
            # In the schedule's order: a boot or a crash series is measured from here
            # (guests of its own); the other slots share one guest.
            for boots, segment in groupby(chunk, lambda s: workloads.get(s.cell.workload).vm_only):
                todo = [s for s in segment if s.cell.key not in refused]
                if boots:
                    for slot in todo:
                        self._on_host(slot, kernel, refused, on_start, on_records)
                else:
                    # A guest cut short in a trial (frozen, killed at its time limit, QEMU
                    # dead): that trial failed, the slots after it go on in a fresh guest.
                    while todo:
                        todo = self._guest(todo, kernel, refused, on_start, on_records)

    def _on_host(
        self,
        slot: Slot,
        kernel: str | None,
        refused: set[str],
        on_start: OnStart,
        on_records: OnRecords,
    ) -> None:
        if slot.cell.key in refused:
            return
        on_start(slot)
        measured = measured_on_host.REGISTRY.get(slot.cell.workload)
        records = measured.measure(self._vm_cell(slot), self._spec(kernel))
        for record in records:  # a guest of its own: nothing ran before it there
            record.position, record.previous_cell = slot.position, ""
        if any(r.status == "unsupported" for r in records):
            refused.add(slot.cell.key)
        on_records(slot, records)
        booted = trialfacts.vm(records[0].provenance)
        if booted and (kernel or "default") not in self.guests:
            self.guests[kernel or "default"] = booted

    def _guest(
        self,
        batch: list[Slot],
        kernel: str | None,
        refused: set[str],
        on_start: OnStart,
        on_records: OnRecords,
    ) -> list[Slot]:
        """The batch in one guest; the guest's SlotRunner skips refused cells and stamps
        each record with its position and the cell before it, as on the host. Returns the
        slots a guest cut short never tried."""
        from fsbench import vm

        by_seq = {s.seq: s for s in batch}
        waiting = list(batch)  # slots whose records have not come back yet

        def next_starts() -> None:
            while waiting and waiting[0].cell.key in refused:
                waiting.pop(0)  # the guest skips it
            if waiting:
                on_start(waiting[0])

        def streamed(records: list[TrialRecord]) -> None:
            slot = by_seq[records[0].seq]
            if any(r.status == "unsupported" for r in records):
                refused.add(slot.cell.key)
            seqs = [s.seq for s in waiting]
            if slot.seq in seqs:
                del waiting[: seqs.index(slot.seq) + 1]
            on_records(slot, records)
            next_starts()

        next_starts()
        job = vm.VmJob(
            [self._vm_cell(s) for s in batch],
            str(self.plan.scale),
            self.plan.timeout,
            self.plan.model_dump(mode="json", by_alias=True),
            refused=sorted(refused),
        )
        result = vm.run_in_vm(job, self._spec(kernel), on_cell=streamed)
        self.guests[kernel or "default"] = result.provenance
        # Cut short: the trial it was in failed (the reason and the console's tail), the
        # slots after it untried.
        untried = waiting[1:] if result.cut_short else []
        later = {s.seq for s in untried}
        missing = [
            r
            for r in vm.import_records(result, only_missing=True, skip=refused)
            if r.seq not in later
        ]
        for seq in dict.fromkeys(r.seq for r in missing):
            on_records(by_seq[seq], [r for r in missing if r.seq == seq])
        if not result.ok and not result.records and not result.cut_short:
            raise FsbenchError(
                f"the VM did not run: {result.error.splitlines()[0]}"
                if result.error
                else "the VM did not run"
            )
        return untried

    @staticmethod
    def _vm_cell(slot: Slot) -> VmCell:
        from fsbench import vm

        return vm.VmCell.of(slot.seq, slot.rep, slot.cell, slot.position)
