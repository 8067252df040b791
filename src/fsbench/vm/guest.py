"""Inside the guest: `python -m fsbench.vm.guest /share/job.json`.

Runs the job's cells with fsbench's own Runner on the scratch disk (/dev/vdb, blank, so
it passes BlockDevice's safety checks), appends each cell's records to the share as one
JSON line, then writes DONE (or FAILED with the traceback). The systemd unit powers the
guest off when this returns.

Before anything, it refuses (one line, exit 3) unless it runs in a guest fsbench booted
and the scratch disk is one fsbench gave it (guestcheck.py): run on a host by mistake, it
would format that host's second virtio disk.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
import traceback
from dataclasses import asdict
from pathlib import Path
from typing import Any

from fsbench.system import filesystems, proc
from fsbench.system.errors import FsbenchError
from fsbench.vm import guestcheck
from fsbench.vm.protocol import DONE, FAILED, RECORDS, STARTED, VmJob

SCRATCH = "/dev/vdb"
SCRATCH_TWIN = "/dev/vdc"  # when the job has clean copies to make (the aging workload)
MOUNT_ROOT = Path("/run/fsbench/mnt")
CACHE_DIR = Path("/var/tmp/fsbench/cache")


def _say(text: str) -> None:
    """To the serial console (the unit sends stdout there), with the guest's uptime."""
    try:
        up = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError):
        up = 0.0
    print(f"fsbench-guest [{up:7.2f}] {text}", flush=True)


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _meminfo_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def guest_facts() -> dict[str, Any]:
    """What the guest is: its kernel (uname -r), CPUs, memory, the filesystems it can mount."""
    for fs in filesystems.catalogue().values():
        if fs.module:  # modules-load.d loaded the VM's ones; the rest on demand
            proc.run(["modprobe", "-q", fs.module], timeout=30)
    kernel_fs = filesystems.kernel_filesystems()
    avail = {
        name: filesystems.availability(fs, kernel_fs).reason
        for name, fs in filesystems.catalogue().items()
        if not fs.pseudo
    }
    return {
        "kernel": platform.release(),
        "kernel_version": platform.version(),
        "cpus": os.cpu_count(),
        "mem_total_kib": _meminfo_kib("MemTotal"),
        "python": platform.python_version(),
        "filesystems": avail,
        "uptime_s": float(Path("/proc/uptime").read_text().split()[0]),
    }


def run_job(job: VmJob, share: Path) -> None:
    """The job's slots through the same SlotRunner as on the host: a cell the kernel
    refused is not asked again, each record says where it ran in its round and what ran
    just before it in this guest."""
    from fsbench.execute.executors.local import SlotRunner
    from fsbench.execute.runner import Runner
    from fsbench.execute.schedule import Slot
    from fsbench.execute.targets.blockdev import BlockDevice
    from fsbench.system import monitors
    from fsbench.workloads.base import Scale

    _say("modules imported")
    place_inputs(job, share)
    facts = guest_facts()
    _say(f"kernel {facts['kernel']}")
    twin = SCRATCH_TWIN if Path(SCRATCH_TWIN).exists() else None
    guestcheck.require(SCRATCH, *([twin] if twin else []))
    target = BlockDevice(SCRATCH, destroy_data=True, twin_path=twin)
    with target:
        facts["target"] = target.describe()
        _write(share / STARTED, json.dumps(facts, indent=1, default=str))
        MOUNT_ROOT.mkdir(parents=True, exist_ok=True)
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        plan = job.plan or {}
        steady_rule = str(plan.get("steady") or "both")
        # The plan's monitors, as on the host (a plan that names none runs the default).
        watch = plan.get("monitors", monitors.DEFAULT)
        runner = Runner(
            target,
            MOUNT_ROOT,
            Scale(job.scale),
            CACHE_DIR,
            job.trial_timeout,
            steady_rule,
            watch,
            bool(plan.get("instrumented")),  # an explain run's: tracers beside its trials
        )
        slots = [Slot(vc.seq, vc.rep, vc.position, 0, vc.cell()) for vc in job.cells]
        with open(share / RECORDS, "a") as out:

            def started(slot: Slot) -> None:
                _say(f"seq {slot.seq} rep {slot.rep}: {slot.cell.describe()}")

            def finished(slot: Slot, records: list[Any]) -> None:
                out.write(json.dumps([asdict(r) for r in records], default=str) + "\n")
                out.flush()
                os.fsync(out.fileno())
                for r in records:
                    _say(f"  {r.workload}: {r.status} {r.message}")

            try:
                SlotRunner(runner).run(slots, set(job.refused), started, finished)
            finally:
                runner.close()


def place_inputs(job: VmJob, share: Path) -> None:
    """What the host carried, where the steps look for it: each input file under the name
    its plan gives, from the host's working directory (made in this guest's root, a
    throwaway overlay), as a link to its copy in the share; the engine named for
    system/engine.py. A name that is a file of the guest's own is not replaced."""
    if job.engine:
        os.environ["FSBENCH_ENGINE"] = str(share / job.engine)
    if not job.inputs:
        return
    cwd = Path(job.cwd)
    cwd.mkdir(parents=True, exist_ok=True)
    os.chdir(cwd)
    for name, copy in job.inputs.items():
        where = cwd / name
        if where.exists() or where.is_symlink():
            raise FsbenchError(f"input {name}: the guest has a file of its own at {where}")
        where.parent.mkdir(parents=True, exist_ok=True)
        where.symlink_to(share / copy)
        _say(f"input {name}: {share / copy}")


NEW_ROOT = Path("/run/fsbench/newroot")


def make_root(config_data: dict[str, Any], share: Path) -> None:
    """The scratch disk becomes this guest's root on another filesystem (a boot root for
    a filesystem the host kernel cannot write): mkfs, copy /, the boot files."""
    from fsbench.plan.model import FsConfig
    from fsbench.system import fsops
    from fsbench.vm import bootroot

    guestcheck.require(SCRATCH)
    config = FsConfig.model_validate(config_data)
    fs = filesystems.get(config.type)
    facts = guest_facts()
    _write(share / STARTED, json.dumps(facts, indent=1, default=str))
    made = fsops.mkfs(fs, list(config.mkfs), SCRATCH)  # Unsupported: the message says why
    _say(f"mkfs {config.display} on {SCRATCH}: {made.seconds:.1f} s")
    fsops.mount(fs, SCRATCH, NEW_ROOT, config.mount)
    try:
        bootroot.copy_root(Path("/"), NEW_ROOT)
        bootroot.install_boot_files(NEW_ROOT, fs.mount_type or fs.name, config.mount)
        _say("root copied")
    finally:
        fsops.umount(NEW_ROOT)
    with open(share / RECORDS, "a") as out:
        out.write(json.dumps([{"make_root": config.display, "mkfs": made.argv}]) + "\n")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m fsbench.vm.guest /share/job.json", file=sys.stderr)
        return 2
    guestcheck.refuse_unless_guest(SCRATCH)  # before the job is even read
    job_path = Path(argv[0])
    share = job_path.parent
    t0 = time.monotonic()
    _say("job start")
    try:
        job = VmJob.from_json(job_path.read_text())
        if job.make_root is not None:
            make_root(job.make_root, share)
        elif job.crash is not None:
            from fsbench.vm.crash.guest import crash_boot

            _write(share / STARTED, json.dumps(guest_facts(), indent=1, default=str))
            crash_boot(job.crash, SCRATCH, share)
        else:
            run_job(job, share)
    except BaseException:
        text = traceback.format_exc()
        print(text, file=sys.stderr, flush=True)
        try:
            _write(share / FAILED, text)
        except OSError:
            pass
        return 1
    _write(share / DONE, json.dumps({"cells": len(job.cells), "seconds": time.monotonic() - t0}))
    os.sync()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
