"""The `mem` knob: the memory a workload may use, page cache included, capped by a memory
cgroup, so that a working set larger than it no longer fits in the cache (Tarasov et al.,
HotOS'11: results move by orders of magnitude as the working set crosses the cache).

fsbench moves itself into `fsbench-<pid>` (cgroup v2: under the root; v1: under its own
memory cgroup) for each step of a trial, prepare to inspect, so that everything the step
runs (tools, servers, fsbench's own I/O) is charged there; the limit is the knob's value
plus what fsbench itself holds when it moves in, so that the workload gets what the knob
says. It moves back and removes the group on every path out; a killed run's group is
removed by the next run or doctor (targets/stale.py).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsbench.system import cache as system
from fsbench.system.errors import Unsupported

ROOT = Path("/sys/fs/cgroup")
GROUP_RE = re.compile(r"^fsbench-(\d+)$")
# While a cap is in force: the group fsbench came from (what `leave` moves a child back to).
_home: Path | None = None


@dataclass(frozen=True)
class Hierarchy:
    version: int  # 1 or 2
    mount: Path  # where the memory controller's hierarchy is mounted
    limit_file: str  # memory.max | memory.limit_in_bytes
    usage_file: str  # memory.current | memory.usage_in_bytes


def hierarchy(root: Path = ROOT) -> Hierarchy | None:
    """The memory controller this machine offers, or None."""
    if (root / "cgroup.controllers").exists():
        if "memory" in (root / "cgroup.controllers").read_text().split():
            return Hierarchy(2, root, "memory.max", "memory.current")
        return None
    v1 = root / "memory"
    if (v1 / "memory.limit_in_bytes").exists():
        return Hierarchy(1, v1, "memory.limit_in_bytes", "memory.usage_in_bytes")
    return None


def own_group(h: Hierarchy, proc_cgroup: str | None = None) -> Path:
    """The cgroup this process is in, in the hierarchy's mount."""
    text = proc_cgroup if proc_cgroup is not None else Path("/proc/self/cgroup").read_text()
    for line in text.splitlines():
        _, controllers, path = line.split(":", 2)
        if (h.version == 2 and controllers == "") or (
            h.version == 1 and "memory" in controllers.split(",")
        ):
            return h.mount / path.lstrip("/")
    return h.mount


def parent_for(h: Hierarchy) -> Path:
    """Where fsbench's groups go: v2, under the root (a cgroup with processes cannot give
    its children a controller); v1, under fsbench's own group."""
    return h.mount if h.version == 2 else own_group(h)


def _rss() -> int:
    return system.kib_field(Path("/proc/self/status"), "VmRSS")


def move(group: Path, pid: int) -> None:
    """Move a process (all its threads) into a group."""
    (group / "cgroup.procs").write_text(f"{pid}\n")


def remove(group: Path) -> None:
    """rmdir once its last process has left (a child may take a moment to exit)."""
    for _ in range(50):
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)


@contextmanager
def capped(limit: int) -> Iterator[dict[str, Any]]:
    """This process and whatever it starts, capped at `limit` bytes (page cache included)
    on top of what fsbench holds now; yields what is in force."""
    h = hierarchy()
    if h is None:
        raise Unsupported("knob mem: this kernel offers no memory cgroup")
    home = own_group(h)
    parent = parent_for(h)
    if h.version == 2 and "memory" not in (parent / "cgroup.subtree_control").read_text():
        (parent / "cgroup.subtree_control").write_text("+memory\n")
    group = parent / f"fsbench-{os.getpid()}"
    group.mkdir(exist_ok=True)
    own = _rss()
    global _home
    try:
        (group / h.limit_file).write_text(f"{limit + own}\n")
        move(group, os.getpid())
        _home = home
        yield {
            "mem": limit,
            "fsbench_rss": own,
            "limit": limit + own,
            "cgroup": f"v{h.version}:{group}",
        }
    finally:
        _home = None
        try:
            move(home, os.getpid())
        finally:
            remove(group)


def leave() -> None:
    """In a child about to exec something that is not the workload (the contention load):
    back to fsbench's own group, outside the cap."""
    if _home is not None:
        move(_home, os.getpid())


def stale_groups() -> list[tuple[Path, int]]:
    """fsbench's groups whose process is gone: (path, pid)."""
    h = hierarchy()
    if h is None:
        return []
    found = []
    for parent in {h.mount, parent_for(h)}:
        try:
            entries = list(parent.iterdir())
        except OSError:
            continue
        for entry in entries:
            m = GROUP_RE.match(entry.name)
            if m and entry.is_dir() and not Path(f"/proc/{m.group(1)}").exists():
                found.append((entry, int(m.group(1))))
    return found
