"""The matrix executor: preflight checks, then every scheduled trial in order, each
stored as soon as it ends. Unsupported cells are measured once, not once per rep."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fsbench import __version__, filesystems, proc, provenance, workloads
from fsbench.errors import FsbenchError
from fsbench.plan import Cell, Plan, schedule
from fsbench.runner import Runner, cache_root, mount_root
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
    warnings = []
    kernel = filesystems.kernel_filesystems()
    for config in plan.fs:
        avail = filesystems.availability(filesystems.get(config.type), kernel)
        if not avail.available:
            warnings.append(f"{config.display}: {avail.reason}; its cells will be unsupported")
    for spec in plan.workloads:
        if spec.scales and plan.scale not in spec.scales:
            continue
        for tool in (t for step in spec.steps for t in workloads.get(step).tools):
            if proc.which(tool.command) is None:
                raise FsbenchError(
                    f"workload {spec.name} needs {tool.command}: apt-get install {tool.package}"
                )
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
) -> Outcome:
    """Run every scheduled trial on an opened target; the caller owns open and close."""
    order = schedule(cells, plan.reps)
    run_id = store.create_run(
        name=plan.name,
        fsbench_version=__version__,
        argv=argv,
        plan=plan.model_dump(mode="json", by_alias=True),
        overrides=overrides,
        schedule=[(rep, cell.key) for rep, cell in order],
        host=provenance.host(
            sorted({c.type for c in plan.fs}), sorted({s for w in plan.workloads for s in w.steps})
        ),
        target={"kind": target.kind},
    )
    outcome = Outcome(run_id)
    unsupported: dict[str, str] = {}
    try:
        store.set_target(run_id, target.describe())
        mnt = mount_root(workdir)
        runner = Runner(target, mnt, plan.scale, cache_root(workdir))
        try:
            for index, (rep, cell) in enumerate(order):
                if cell.key in unsupported:
                    continue  # the kernel said no once; asking again measures nothing
                if on_start:
                    on_start(index, len(order), rep, cell)
                records = runner.run_cell(index, rep, cell)
                store.record_trials(run_id, records)
                for record in records:
                    outcome.counts[record.status] = outcome.counts.get(record.status, 0) + 1
                    if on_done:
                        on_done(index, len(order), record)
                if records[0].status == "unsupported":
                    unsupported[cell.key] = records[0].message
        finally:
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
