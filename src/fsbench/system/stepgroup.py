"""The workload's own cgroup (v2) for a traced step: what the tracers of an instrumented
pass filter on (bpftrace's `cgroup`, the group's `cpu.stat` and `io.pressure`), so that
thread-level facts are the workload's only.

fsbench moves itself into `fsbench-<pid>-trace`, under the root of the cgroup v2
hierarchy (a host with the v1 controllers and v2 beside them at /sys/fs/cgroup/unified
has one too), for each step of an instrumented trial, prepare to inspect, as the `mem`
knob does (memcap.py): whatever the step starts is in it. No controller is enabled: the
group only names the workload's tasks. fsbench moves back and removes the group on every
path out; a killed run's group is removed by the next run or doctor (targets/stale.py).
A tracing tool, or the busy load beside the workload, leaves it before it execs (`leave`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fsbench.system import memcap
from fsbench.system.errors import Unsupported

MOUNTS = Path("/proc/self/mounts")
GROUP_RE = re.compile(r"^fsbench-(\d+)-trace$")
# While a step is traced: the group fsbench came from (what `leave` moves a child back to).
_home: Path | None = None


def v2_root(mounts: Path = MOUNTS) -> Path | None:
    """Where the cgroup v2 hierarchy is mounted, or None."""
    try:
        text = mounts.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[2] == "cgroup2":
            return Path(fields[1])
    return None


def own_group(root: Path, proc_cgroup: str | None = None) -> Path:
    """The v2 group this process is in (the `0::` line of /proc/self/cgroup)."""
    text = proc_cgroup if proc_cgroup is not None else Path("/proc/self/cgroup").read_text()
    for line in text.splitlines():
        if line.startswith("0::"):
            return root / line[3:].lstrip("/")
    return root


@contextmanager
def traced() -> Iterator[Path]:
    """This process and whatever it starts in a v2 group of their own; yields its path."""
    root = v2_root()
    if root is None:
        raise Unsupported("explain: unavailable: this kernel has no cgroup v2 hierarchy mounted")
    home = own_group(root)
    group = root / f"fsbench-{os.getpid()}-trace"
    group.mkdir(exist_ok=True)
    global _home
    try:
        memcap.move(group, os.getpid())
        _home = home
        yield group
    finally:
        _home = None
        try:
            memcap.move(home, os.getpid())
        finally:
            memcap.remove(group)


def leave() -> None:
    """In a child about to exec something that is not the workload (a tracer, the
    contention load): back to fsbench's own group, outside the traced one."""
    if _home is not None:
        memcap.move(_home, os.getpid())


def stale_groups() -> list[tuple[Path, int]]:
    """Traced groups whose process is gone: (path, pid)."""
    root = v2_root()
    if root is None:
        return []
    found = []
    try:
        entries = list(root.iterdir())
    except OSError:
        return []
    for entry in entries:
        m = GROUP_RE.match(entry.name)
        if m and entry.is_dir() and not Path(f"/proc/{m.group(1)}").exists():
            found.append((entry, int(m.group(1))))
    return found
