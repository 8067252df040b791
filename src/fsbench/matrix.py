"""The matrix executor: preflight checks, then every scheduled trial in order, each
stored as soon as it ends. Unsupported cells are measured once, not once per rep."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsbench import __version__, filesystems, knobs, proc, provenance, sourcetree, workloads
from fsbench.errors import FsbenchError
from fsbench.plan import MIN_AUTO_REPS, Cell, Plan, schedule, slot_seq
from fsbench.runner import Runner, cache_root, mount_root
from fsbench.stats import summarize
from fsbench.store import Store, TrialRecord
from fsbench.targets.base import Target
from fsbench.units import human_bytes

# Room the filesystem itself takes (journal, metadata, btrfs chunks): a workload must fit
# in the target with this much to spare.
FS_OVERHEAD_FRACTION = 0.15
FS_OVERHEAD_MIN = 128 << 20


@dataclass
class Outcome:
    run_id: int
    counts: dict[str, int] = field(default_factory=dict)
    interrupted: bool = False


OnStart = Callable[[int, int, int, Cell], None]  # index, total, rep, cell
OnDone = Callable[[int, int, TrialRecord], None]


def preflight(plan: Plan, cells: list[Cell], target_size: int) -> list[str]:
    """Refuse a run that cannot work before touching anything; return warnings."""
    if os.geteuid() != 0:
        raise FsbenchError("fsbench run needs root (mkfs, mount, losetup): run it as root")
    warnings: list[str] = []
    for spec in plan.workloads:
        vm_only = [s for s in spec.steps if workloads.get(s).vm_only]
        if vm_only and plan.target.kind != "vm":
            raise FsbenchError(f"workload {vm_only[0]} needs the VM target: add --target vm")
        if vm_only and len(spec.steps) > 1:
            raise FsbenchError(f"workload {vm_only[0]} runs alone, not in a chain")
    if plan.target.kind == "vm":
        # The guest's kernel and tools decide; this host only needs QEMU.
        if proc.which("qemu-system-x86_64") is None:
            raise FsbenchError(
                "--target vm needs QEMU: apt-get install qemu-system-x86 qemu-utils debootstrap"
            )
        return warnings
    kernel = filesystems.kernel_filesystems()
    for config in plan.fs:
        avail = filesystems.availability(filesystems.get(config.type), kernel)
        if not avail.available:
            warnings.append(f"{config.display}: {avail.reason}; its cells will be unsupported")
    for spec in plan.workloads:
        if spec.scales and plan.scale not in spec.scales:
            continue
        for step in spec.steps:
            missing = workloads.get(step).missing()
            if missing:
                raise FsbenchError(f"workload {step}: {missing}")
    usable = target_size - max(FS_OVERHEAD_MIN, int(target_size * FS_OVERHEAD_FRACTION))
    for cell in cells:
        need = 0
        for name, params in cell.steps:
            wl = workloads.get(name)
            need = max(need, wl().required_bytes(wl.params_model.model_validate(params)))
        if need > usable:
            shown = " ".join(f"{k}={v}" for k, v in cell.params.items())
            raise FsbenchError(
                f"{cell.workload} {shown} needs {human_bytes(need)} but a "
                f"{human_bytes(target_size)} target leaves ~{human_bytes(usable)} after the "
                "filesystem's own metadata: use a larger --image-size or a smaller --scale"
            )
    return warnings


def _new_run(
    plan: Plan,
    store: Store,
    cells: list[Cell],
    argv: list[str],
    overrides: dict[str, list[str]],
    kind: str,
) -> int:
    return store.create_run(
        name=plan.name,
        fsbench_version=__version__,
        argv=argv,
        plan=plan.model_dump(mode="json", by_alias=True),
        overrides=overrides,
        schedule=[(rep, cell.key) for rep, cell in schedule(cells, plan.planned_reps)],
        host=provenance.host(
            sorted({c.type for c in plan.fs}),
            sorted({s for w in plan.workloads for s in w.steps}),
        ),
        target={"kind": kind},
    )


def execute_vm(
    plan: Plan,
    cells: list[Cell],
    store: Store,
    workdir: Path,
    *,
    argv: list[str],
    overrides: dict[str, list[str]],
    on_start: OnStart | None = None,
    on_done: OnDone | None = None,
    resume_run: int | None = None,
) -> Outcome:
    """The same rounds of repetitions, each round run inside one QEMU guest with its own
    kernel (fsbench's runner in the guest, on a fresh virtio scratch disk); every trial is
    stored as the guest reports it."""
    from fsbench import vm  # QEMU, images: only when asked for
    from fsbench.vm.boot import run_boot_cell

    t = plan.target
    default_kernel = t.kernels[0]

    def spec_for(kernel: str | None) -> vm.VmSpec:
        return vm.VmSpec(
            kernel=kernel,
            ram_mb=t.guest_ram_mb,
            vcpus=t.vcpus,
            scratch_bytes=t.image_size,
            throttle=dict(t.throttle),
            workdir=workdir,
        )

    run_id = resume_run or _new_run(plan, store, cells, argv, overrides, "vm")
    if resume_run:
        store.reopen_run(run_id)
    outcome = Outcome(run_id)
    total = len(cells) * plan.planned_reps
    guests: dict[str, dict[str, Any]] = {}  # kernel -> the VM's provenance, for the run

    def stored(records: list[TrialRecord]) -> None:
        store.record_trials(run_id, records)
        for record in records:
            outcome.counts[record.status] = outcome.counts.get(record.status, 0) + 1
            if on_done:
                on_done(record.seq, total, record)

    try:
        for rep in range(1, plan.planned_reps + 1):
            done = store.get_trials(run_id)
            active = _cells_to_run(plan, cells, rep, done)
            have = {t.seq for t in done}
            # One guest per kernel per round: a round's cells under kernel A, then under B.
            batches: dict[str | None, list[Any]] = {}
            for i, cell in enumerate(cells):
                seq = slot_seq(rep, i, len(cells))
                if cell.key in active and seq not in have:
                    kernel = cell.knobs.get(knobs.KERNEL, default_kernel)
                    batches.setdefault(kernel, []).append(vm.VmCell.of(seq, rep, cell))
            for kernel, in_guest in batches.items():
                # A boot is a whole guest of its own, run from here; the rest share one.
                boots = [vc for vc in in_guest if workloads.get(vc.workload).vm_only]
                batch = [vc for vc in in_guest if vc not in boots]
                for vc in boots:
                    if on_start:
                        on_start(vc.seq, total, rep, vc.cell())
                    records = run_boot_cell(vc, spec_for(kernel))
                    stored(records)
                    booted = records[0].provenance.get("vm")
                    if booted and (kernel or "default") not in guests:
                        guests[kernel or "default"] = booted
                        store.set_target(run_id, _vm_target(guests))
                if not batch:
                    continue
                if on_start:
                    on_start(batch[0].seq, total, rep, batch[0].cell())
                job = vm.VmJob(
                    batch,
                    str(plan.scale),
                    plan.timeout,
                    plan.model_dump(mode="json", by_alias=True),
                )
                result = vm.run_in_vm(job, spec_for(kernel), on_cell=stored)
                guests[kernel or "default"] = result.provenance
                store.set_target(run_id, _vm_target(guests))
                missing = vm.import_records(result, only_missing=True)
                if missing:
                    stored(missing)
                if not result.ok and not result.records:
                    raise FsbenchError(
                        f"the VM did not run: {result.error.splitlines()[0]}"
                        if result.error
                        else "the VM did not run"
                    )
        if plan.reps == "auto":
            store.set_convergence(run_id, convergence(plan, cells, store.get_trials(run_id)))
    except KeyboardInterrupt:
        outcome.interrupted = True
        store.finish_run(run_id, "interrupted")
        raise
    except BaseException:
        store.finish_run(run_id, "failed")
        raise
    store.finish_run(run_id, "finished")
    return outcome


def _vm_target(guests: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The run's target: the last guest's provenance, and every kernel's when several."""
    last = list(guests.values())[-1]
    out: dict[str, Any] = {"kind": "vm", **last}
    if len(guests) > 1:
        out["kernels"] = {k: g.get("kernel_version") for k, g in guests.items()}
    return out


def execute(
    plan: Plan,
    cells: list[Cell],
    store: Store,
    target: Target,
    workdir: Path,
    *,
    argv: list[str],
    overrides: dict[str, list[str]],
    on_start: OnStart | None = None,
    on_done: OnDone | None = None,
    resume_run: int | None = None,
) -> Outcome:
    """Run the matrix on an opened target (the caller owns open and close): rounds of
    interleaved repetitions, each trial stored as it ends. With `resume_run`, the slots
    that run already stored are skipped."""
    if resume_run is None:
        run_id = _new_run(plan, store, cells, argv, overrides, target.kind)
    else:
        run_id = resume_run
        store.reopen_run(run_id)
    outcome = Outcome(run_id)
    try:
        store.set_target(run_id, target.describe())
        mnt = mount_root(workdir)
        runner = Runner(target, mnt, plan.scale, cache_root(workdir), plan.timeout)
        total = len(cells) * plan.planned_reps
        try:
            for rep in range(1, plan.planned_reps + 1):
                done = store.get_trials(run_id)
                active = _cells_to_run(plan, cells, rep, done)
                stored = {t.seq for t in done}
                for index, cell in enumerate(cells):
                    seq = slot_seq(rep, index, len(cells))
                    if cell.key not in active or seq in stored:
                        continue
                    if on_start:
                        on_start(seq, total, rep, cell)
                    records = runner.run_cell(seq, rep, cell)
                    store.record_trials(run_id, records)
                    for record in records:
                        outcome.counts[record.status] = outcome.counts.get(record.status, 0) + 1
                        if on_done:
                            on_done(seq, total, record)
            if plan.reps == "auto":
                store.set_convergence(run_id, convergence(plan, cells, store.get_trials(run_id)))
        finally:
            sourcetree.unpin_all()  # the archives kept warm between trials
            if mnt.exists() and not os.path.ismount(mnt):
                mnt.rmdir()
    except KeyboardInterrupt:
        outcome.interrupted = True
        store.finish_run(run_id, "interrupted")
        raise
    except BaseException:
        store.finish_run(run_id, "failed")
        raise
    store.finish_run(run_id, "finished")
    return outcome


def _headline_values(cell: Cell, trials: list[TrialRecord]) -> dict[str, list[float]]:
    """Per step, the values of its first headline metric (what convergence is judged on)."""
    out: dict[str, list[float]] = {}
    for name, _ in cell.steps:
        headline = workloads.get(name).headline
        metric = headline[0] if headline else "seconds"
        out[f"{name}:{metric}"] = [
            m.value
            for t in trials
            if t.cell_key == cell.key and t.workload == name and t.status == "ok"
            for m in t.metrics
            if m.name == metric
        ]
    return out


def _half_width_pct(values: list[float]) -> float | None:
    s = summarize(values)
    if s.half_width is None or not s.mean:
        return None
    return 100.0 * s.half_width / abs(s.mean)


def _cells_to_run(plan: Plan, cells: list[Cell], rep: int, trials: list[TrialRecord]) -> set[str]:
    """Cells that get repetition `rep`: all of them with fixed reps (and the first
    MIN_AUTO_REPS of auto), then only those whose CI is still too wide. A cell the kernel
    refused once is not asked again."""
    refused = {t.cell_key for t in trials if t.status == "unsupported"}
    keys = {c.key for c in cells} - refused
    if plan.reps != "auto" or rep <= MIN_AUTO_REPS:
        return keys
    active = set()
    for cell in cells:
        if cell.key not in keys:
            continue
        for values in _headline_values(cell, trials).values():
            width = _half_width_pct(values)
            if width is not None and width > 100 * plan.ci_target:
                active.add(cell.key)
    return active


def convergence(plan: Plan, cells: list[Cell], trials: list[TrialRecord]) -> dict[str, Any]:
    """Per cell: repetitions made and whether every step's CI reached the target."""
    out: dict[str, Any] = {}
    for cell in cells:
        widths = {
            key: _half_width_pct(values) for key, values in _headline_values(cell, trials).items()
        }
        if not any(v is not None for v in widths.values()):
            continue
        reps = max((t.rep for t in trials if t.cell_key == cell.key), default=0)
        ok = all(w is not None and w <= 100 * plan.ci_target for w in widths.values())
        out[cell.key] = {
            "reps": reps,
            "converged": ok,
            "half_width_pct": {k: None if v is None else round(v, 2) for k, v in widths.items()},
            "target_pct": 100 * plan.ci_target,
        }
    return out
