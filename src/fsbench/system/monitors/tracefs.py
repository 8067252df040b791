"""The kernel's tracing filesystem, mounted while a tracer needs it and left as found.

bpftrace reads the tracepoints' formats from tracefs; a machine that has it but does not
mount it by default (this one) gets it mounted by the first tracer of a trial and
unmounted by the last one to let go, when fsbench was the one that mounted it. The last
one is counted over every fsbench process of the machine, not one: two runs on two
devices at once each trace, and the first to finish unmounting it under the other
made the other's bpftrace fail to start ("Could not read symbols from
/sys/kernel/tracing/available_events"). Each process holds a shared flock on a lock file
of the mountpoint while its tracers use it (`using` counts them within the process); the
mount and unmount happen under the exclusive lock, and a marker file says fsbench mounted
it, whichever process did. What the kernel offers is read from there: whether an event
exists (`has_event`), and a device's number as the block tracepoints give it (`dev_t`).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO

from fsbench.system import mounts, proc
from fsbench.system.errors import Unsupported
from fsbench.system.monitors.base import TRACEFS

LOCKS = Path("/run/fsbench/tracefs")  # a lock file and a marker per mountpoint

_users: dict[Path, int] = {}
_held: dict[Path, IO[str]] = {}


def is_mounted(where: Path = TRACEFS) -> bool:
    return any(
        e.fstype == "tracefs" and Path(e.mountpoint) == where
        for e in mounts.parse(mounts.MOUNTINFO.read_text())
    )


def files_of(where: Path) -> tuple[Path, Path]:
    """The mountpoint's lock file and its marker (present: fsbench mounted it)."""
    name = str(where.resolve()).strip("/").replace("/", "%") or "%"
    return LOCKS / f"{name}.lock", LOCKS / f"{name}.mounted"


def acquire(where: Path = TRACEFS) -> None:
    """tracefs mounted at `where` (mounted now if it was not); `release` lets it go."""
    if _users.get(where, 0) == 0:
        lock, marker = files_of(where)
        LOCKS.mkdir(parents=True, exist_ok=True)
        held = lock.open("a")
        try:
            # Shared: mounted now, it stays mounted while this process holds the lock.
            fcntl.flock(held, fcntl.LOCK_SH)
            if not is_mounted(where):
                # No process uses it: mount it under the exclusive lock, then share it.
                fcntl.flock(held, fcntl.LOCK_EX)
                if not is_mounted(where):
                    res = proc.run(["mount", "-t", "tracefs", "nodev", str(where)], timeout=30)
                    if not res.ok:
                        raise Unsupported(
                            f"explain: unavailable: cannot mount tracefs: {res.output}"
                        )
                    marker.touch()
                fcntl.flock(held, fcntl.LOCK_SH)
        except BaseException:
            held.close()
            raise
        _held[where] = held
    _users[where] = _users.get(where, 0) + 1


def release(where: Path = TRACEFS) -> None:
    """One tracer less; the machine's last one unmounts tracefs if fsbench mounted it."""
    users = max(0, _users.get(where, 0) - 1)
    _users[where] = users
    held = _held.pop(where, None) if users == 0 else None
    if held is None:
        return
    lock, marker = files_of(where)
    try:
        # Exclusive at once only when no other process holds it: the last user.
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        held.close()
        return
    try:
        if marker.exists():
            # Lazily: a tool still closing its files does not keep it mounted.
            proc.run(["umount", "-l", str(where)], timeout=30)
            marker.unlink()
    finally:
        held.close()


def has_event(group: str, name: str, where: Path = TRACEFS) -> bool:
    """Whether the kernel has the tracepoint group:name (tracefs mounted)."""
    return (where / "events" / group / name).is_dir()


def dev_t(device: str) -> int:
    """The device's number as the kernel's tracepoints carry it (MKDEV: major << 20 |
    minor), not the userspace encoding of stat(2)."""
    rdev = os.stat(device).st_rdev
    return (os.major(rdev) << 20) | os.minor(rdev)
