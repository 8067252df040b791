"""The executor contract: where trials run. One repetition loop (matrix.py) decides what
runs and in which order, stores what comes back and handles resume and interrupt; an
executor only runs the slots it is handed, somewhere: on this host (local.py), inside a
QEMU guest with its own kernel (vm.py). Adding a place to run is adding one executor.

benchexec swaps its executor the same way, and hyperfine has `trait Executor`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from fsbench import workloads
from fsbench.execute.hooks import View
from fsbench.execute.schedule import Slot
from fsbench.plan.model import Cell, Plan
from fsbench.plan.targets import TargetSpec
from fsbench.store.records import TrialRecord
from fsbench.store.results import Store
from fsbench.system import knobs, numbers
from fsbench.system.errors import FsbenchError
from fsbench.system.opened import Opened
from fsbench.system.units import parse_size


@dataclass(frozen=True)
class Binding:
    """The run an executor works for, given before preflight: the store, the run's uid
    (known before the run is stored), and its live view."""

    store: Store
    uid: str
    view: View


OnStart = Callable[[Slot], None]
OnRecords = Callable[[Slot, list[TrialRecord]], None]


def started(slots: Sequence[Slot], refused: set[str], on_start: OnStart) -> Iterator[Slot]:
    """The slots an executor runs one by one, each announced as it starts: those of a cell
    the kernel has refused (`refused`, which grows as the run goes) are skipped."""
    for slot in slots:
        if slot.cell.key not in refused:
            on_start(slot)
            yield slot


# Room the filesystem itself takes (journal, metadata, btrfs chunks): a workload must fit
# in the target with this much to spare.
FS_OVERHEAD_FRACTION = 0.15
FS_OVERHEAD_MIN = 128 << 20

S = TypeVar("S", bound=TargetSpec)


class Executor(Opened, ABC):
    """Runs scheduled trials somewhere. Use as a context manager: `open()` makes what the
    trials need (a loop device, a guest image), `close()` releases all of it on every path.
    """

    kind: ClassVar[str]
    # Capability: the executor runs the whole plan elsewhere, each place with its own
    # repetition loop that stores its own trials (many hosts, each running its part). It
    # gets every slot in one call and never calls on_records; the loop here neither adapts
    # repetitions nor counts trials for it.
    whole_plan: ClassVar[bool] = False

    def __init__(self, plan: Plan, cells: Sequence[Cell]) -> None:
        self.plan = plan
        self.cells = list(cells)

    def target_spec(self, spec_type: type[S]) -> S:
        """The plan's target spec, of the kind this executor runs (another is refused in
        one line: a plan handed to the wrong executor)."""
        if not isinstance(self.plan.target, spec_type):
            raise FsbenchError(
                f"the {self.kind} executor runs {self.kind} targets, not {self.plan.target.kind}"
            )
        return self.plan.target

    def bind(self, run: Binding) -> None:
        """The run this executor works for, before preflight. Most need nothing of it; one
        that runs the plan's parts elsewhere names them after the run's uid."""

    @abstractmethod
    def preflight(self) -> list[str]:
        """Refuse a run that cannot work (FsbenchError, one line) before anything is made;
        return warnings for cells that will be unsupported."""

    def release_stale(self) -> list[str]:
        """Release what crashed runs left behind here; one line per thing released."""
        return []

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """The run's target as the store keeps it: `kind`, a one-line `summary` that
        reports print as it is, and the facts (device model, rotational, kernel...)."""

    @abstractmethod
    def run(
        self,
        slots: Sequence[Slot],
        refused: set[str],
        on_start: OnStart,
        on_records: OnRecords,
    ) -> None:
        """Run the slots in order and hand each one's records (one per chain step) to
        `on_records` as soon as it ends. A cell whose key is in `refused` (the kernel said
        no once) is skipped; a cell refused now is added to it."""

    def fresh_start(self, slot: Slot) -> bool:
        """Whether `slot`, first of a `run` call, starts on a machine nothing has warmed
        since the last call (a guest booted for it): the loop then runs a warm-up before
        it unless it is one. On this host the machine stays warm between calls."""
        return False

    def unfinished(self) -> list[str]:
        """What this executor could not finish although the run was not interrupted (the
        failed hosts of a run on many machines), one line each. The run is then stored
        `incomplete`, and `--resume` finishes what is missing."""
        return []

    def banner(self) -> str:
        """What the run says before it starts, after the plan's own numbers."""
        return ""


def check_fits(cells: Sequence[Cell], target_size: int, machine_mem: int | None) -> None:
    """Refuse, before anything runs, a cell whose workload cannot fit on the target. A
    working set sized to memory (`scale_to_mem`) is sized as its trials will size it: to
    the cell's mem knob, else to `machine_mem`, the RAM of the machine the trials run on
    (None where that is not known here, on the machine that controls many hosts: each checks again
    before it runs)."""
    usable = target_size - max(FS_OVERHEAD_MIN, int(target_size * FS_OVERHEAD_FRACTION))
    if usable <= 0:
        raise FsbenchError(
            f"a {numbers.size(target_size)} target is too small: the filesystems' own metadata "
            f"takes ~{numbers.size(FS_OVERHEAD_MIN)}; give --image-size 1G or more"
        )
    for cell in cells:
        cap = cell.knobs.get(knobs.MEM, "none")
        mem = parse_size(cap) if cap != "none" else machine_mem
        need = 0
        for name, params in cell.steps:
            wl = workloads.get(name)
            instance = wl()
            model = wl.params_model.model_validate(params)
            if mem is not None:
                model = instance.for_memory(model, mem)
            need = max(need, instance.required_bytes(model))
        if need > usable:
            shown = " ".join(f"{k}={numbers.setting(v)}" for k, v in cell.params.items())
            raise FsbenchError(
                f"{cell.workload} {shown} needs {numbers.size(need)} but a "
                f"{numbers.size(target_size)} target leaves ~{numbers.size(usable)} after the "
                "filesystem's own metadata: use a larger --image-size or a smaller --scale"
            )


def input_files(cells: Iterable[Cell]) -> list[str]:
    """The files of this machine that the cells' steps read (Workload.input_params), as
    the plan names them, each once, in the cells' order."""
    names: dict[str, None] = {}
    for cell in cells:
        for name, params in cell.steps:
            wl = workloads.get(name)
            names.update(dict.fromkeys(wl().inputs(wl.params_model.model_validate(params))))
    return list(names)


def check_params(cells: Sequence[Cell], *, inputs_only: bool = False) -> None:
    """Refuse, before anything runs, parameters a workload cannot run here although its
    model accepts them (Workload.refuses: a fio job file that is not there). `inputs_only`
    where trials run on another machine (a VM guest), which judges the rest itself: only
    the steps that read files of this one (Workload.inputs), checked where they are."""
    seen: set[str] = set()
    for cell in cells:
        for name, params in cell.steps:
            wl = workloads.get(name)
            model = wl.params_model.model_validate(params)
            key = f"{name} {model.model_dump_json()}"
            if key in seen:
                continue
            seen.add(key)
            if inputs_only and not wl().inputs(model):
                continue
            why = wl().refuses(model)
            if why:
                raise FsbenchError(f"workload {name}: {why}")


def check_workloads(plan: Plan, *, vm: bool) -> None:
    """Workloads that need the VM target, or run only alone."""
    for spec in plan.workloads:
        vm_only = [s for s in spec.steps if workloads.get(s).vm_only]
        if vm_only and not vm:
            raise FsbenchError(f"workload {vm_only[0]} needs the VM target: add --target vm")
        if vm_only and len(spec.steps) > 1:
            raise FsbenchError(f"workload {vm_only[0]} runs alone, not in a chain")
