"""What this machine can test, and what is missing: facts for `fsbench doctor`."""

from __future__ import annotations

import os
import shutil
from dataclasses import asdict
from pathlib import Path

from pydantic import BaseModel

from fsbench import workloads
from fsbench.execute import explain
from fsbench.execute.targets import stale
from fsbench.plan import targets
from fsbench.plan.targets import DEFAULT_IMAGE_SIZE, TargetStatus
from fsbench.store.results import Store
from fsbench.system import filesystems, knobs, memcap, monitors, numbers, proc, stepgroup
from fsbench.system.monitors import bpftrace
from fsbench.workloads import aging


class Check(BaseModel):
    name: str
    ok: bool
    detail: str


class FsStatus(BaseModel):
    name: str
    available: bool
    reason: str
    kernel: bool
    version: str | None
    package: str

    @classmethod
    def of(cls, fs: filesystems.FsType, found: filesystems.Availability) -> FsStatus:
        """A filesystem type's row: its name and package, and what availability() found."""
        return cls(name=fs.name, package=fs.package, **asdict(found))


class WorkloadStatus(BaseModel):
    name: str
    available: bool
    reason: str
    tools: list[str]


class DoctorReport(BaseModel):
    checks: list[Check]
    filesystems: list[FsStatus]
    workloads: list[WorkloadStatus]
    released: list[str]
    # Per target kind that has something to say (the VM's QEMU, accelerator, images).
    targets: dict[str, TargetStatus] = {}

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)


def _existing_parent(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def examine(workdir: Path, db: str | None, released: list[str]) -> DoctorReport:
    checks = [
        Check(
            name="root",
            ok=os.geteuid() == 0,
            detail="running as root" if os.geteuid() == 0 else "mkfs, mount and losetup need root",
        )
    ]
    loop_ok = Path("/dev/loop-control").exists() and proc.which("losetup") is not None
    free = proc.run(["losetup", "--find"], timeout=10) if loop_ok else None
    checks.append(
        Check(
            name="loop devices",
            ok=bool(free and free.ok),
            detail=(
                f"free: {free.stdout.strip()}"
                if free and free.ok
                else "no /dev/loop-control or no free loop device (modprobe loop)"
            ),
        )
    )
    where = _existing_parent(workdir)
    usage = shutil.disk_usage(where)
    checks.append(
        Check(
            name="image space",
            ok=usage.free >= DEFAULT_IMAGE_SIZE,
            detail=f"{numbers.size(usage.free)} free at {where} (default image "
            f"{numbers.size(DEFAULT_IMAGE_SIZE)}, sparse; workloads write into it)",
        )
    )
    checks.append(_knob_check(workdir, released))
    h = memcap.hierarchy()
    checks.append(
        Check(
            name="memory cgroup",
            ok=h is not None,
            detail=(
                f"cgroup v{h.version} at {h.mount}: the mem knob caps a workload's memory"
                if h is not None
                else "none: the mem knob is unsupported here"
            ),
        )
    )
    checks.append(_explain_check())
    recipes = {name: r().missing() for name, r in aging.recipes().items()}
    checks.append(
        Check(
            name="aging recipes",
            ok=not any(recipes.values()),
            detail="; ".join(f"{n}: {why or 'ok'}" for n, why in recipes.items()),
        )
    )
    try:
        store = Store(db)
        integrity = store.integrity()
        checks.append(
            Check(
                name="result store",
                ok=integrity == "ok",
                detail=f"{store.url} (integrity: {integrity})",
            )
        )
        store.close()
    except Exception as exc:  # doctor reports, never crashes
        checks.append(Check(name="result store", ok=False, detail=str(exc)))

    kernel = filesystems.kernel_filesystems()
    fs_status = [
        FsStatus.of(fs, filesystems.availability(fs, kernel))
        for fs in filesystems.catalogue().values()
    ]
    wl_status = []
    for name, wl in workloads.all_workloads().items():
        missing = wl.missing()
        wl_status.append(
            WorkloadStatus(
                name=name,
                available=missing is None,
                reason=missing or "ok",
                tools=[t.command for t in wl.tools],
            )
        )
    return DoctorReport(
        checks=checks,
        filesystems=fs_status,
        workloads=wl_status,
        released=released,
        targets=_target_statuses(),
    )


def _knob_check(workdir: Path, released: list[str]) -> Check:
    """System knobs left changed: by dead runs (restored just now by the stale release,
    or not restorable) and by runs still going (theirs to restore)."""
    restored = [ln for ln in released if ln.startswith("restored ")]
    failed = [ln for ln in released if ln.startswith("could not restore ")]
    running = []
    if workdir.is_dir():
        for path in sorted(workdir.iterdir()):
            m = knobs.JOURNAL_RE.match(path.name)
            if m and stale.pid_alive(int(m.group(1))):
                changed = ", ".join(e.name for e in knobs.load(path))
                running.append(f"{changed} changed by fsbench pid {m.group(1)} (running)")
    if failed:
        detail = "; ".join(failed)
    elif restored:
        detail = f"restored what dead runs left changed: {'; '.join(restored)}"
    else:
        detail = "none left changed by a dead run"
    return Check(name="system knobs", ok=not failed, detail="; ".join([detail, *running]))


def _target_statuses() -> dict[str, TargetStatus]:
    """What each kind of target says of itself (`TargetSpec.doctor`); a kind that fails
    to say is reported so, never a crash."""
    out: dict[str, TargetStatus] = {}
    for kind, spec in targets.kinds().items():
        try:
            found = spec.doctor()
        except Exception as exc:  # doctor reports, never crashes
            found = TargetStatus(
                title=f"{kind} target", usable=False, reason=f"cannot inspect: {exc}"
            )
        if found is not None:
            out[kind] = found
    return out


def _explain_check() -> Check:
    """Whether `fsbench explain` can attach its tracers here: one line either way."""
    why = monitors.missing(explain.TRACERS)
    if why is None and stepgroup.v2_root() is None:
        why = "no cgroup v2 hierarchy (the tracers filter on the workload's own group)"
    if why is not None:
        return Check(name="explain", ok=False, detail=f"unavailable: {why}")
    tool = f"bpftrace {bpftrace.version()}".strip()
    return Check(name="explain", ok=True, detail=f"{tool}: {', '.join(explain.TRACERS)}")
