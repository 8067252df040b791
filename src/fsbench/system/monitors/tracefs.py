"""The kernel's tracing filesystem, mounted while a tracer needs it and left as found.

bpftrace reads the tracepoints' formats from tracefs; a machine that has it but does not
mount it by default (this one) gets it mounted by the first tracer of a trial and
unmounted by the last one to let go, when fsbench was the one that mounted it. `using`
counts the tracers that hold it within this process. What the kernel offers is read
from there: whether an event exists (`has_event`), and a device's number as the block
tracepoints give it (`dev_t`).
"""

from __future__ import annotations

import os
from pathlib import Path

from fsbench.system import mounts, proc
from fsbench.system.errors import Unsupported
from fsbench.system.monitors.base import TRACEFS

_users = 0
_mounted_here = False


def is_mounted(where: Path = TRACEFS) -> bool:
    return any(
        e.fstype == "tracefs" and Path(e.mountpoint) == where
        for e in mounts.parse(mounts.MOUNTINFO.read_text())
    )


def acquire(where: Path = TRACEFS) -> None:
    """tracefs mounted at `where` (mounted now if it was not); `release` lets it go."""
    global _users, _mounted_here
    if _users == 0 and not is_mounted(where):
        res = proc.run(["mount", "-t", "tracefs", "nodev", str(where)], timeout=30)
        if not res.ok:
            raise Unsupported(f"explain: unavailable: cannot mount tracefs: {res.output}")
        _mounted_here = True
    _users += 1


def release(where: Path = TRACEFS) -> None:
    """One tracer less; the last one unmounts tracefs if fsbench mounted it."""
    global _users, _mounted_here
    _users = max(0, _users - 1)
    if _users == 0 and _mounted_here:
        _mounted_here = False
        # Lazily: a tool still closing its files does not keep it mounted.
        proc.run(["umount", "-l", str(where)], timeout=30)


def has_event(group: str, name: str, where: Path = TRACEFS) -> bool:
    """Whether the kernel has the tracepoint group:name (tracefs mounted)."""
    return (where / "events" / group / name).is_dir()


def dev_t(device: str) -> int:
    """The device's number as the kernel's tracepoints carry it (MKDEV: major << 20 |
    minor), not the userspace encoding of stat(2)."""
    rdev = os.stat(device).st_rdev
    return (os.major(rdev) << 20) | os.minor(rdev)
