"""Leftovers of crashed runs: found by name, released only when their owner is gone.

A run owned by process <pid> makes `WORKDIR/fsbench-<pid>[-<n>].img` (attached to a
loop device), mounts under `WORKDIR/mnt-<pid>*`, and writes down the system knobs it
changes in `WORKDIR/knobs-<pid>.json` (knobs.py), the stress-ng process group it runs in
`WORKDIR/contention-<pid>.json` (contention.py) and the database servers it starts in
`WORKDIR/server-<pid>.json` (servers.py). When <pid> is no longer alive (or is a zombie),
those are stale: `release_stale` restores the knobs, stops the load and the servers,
unmounts, detaches, deletes. Nothing else in WORKDIR, and nothing outside it except mounts
of a stale loop device, the sysctls and schedulers a journal names, the stress-ng group a
load file names (checked by its start time), the server a note names, memory cgroups
named `fsbench-<pid>` (memcap.py) and traced steps' cgroups named `fsbench-<pid>-trace`
(stepgroup.py), is ever touched.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fsbench.execute.targets import devinfo
from fsbench.execute.targets.loop import IMAGE_RE, MOUNT_DIR_RE, detach_loop
from fsbench.system import contained, contention, knobs, memcap, proc, servers, stepgroup

# The files, named by their owner's pid, in which a run writes down what to undo, and how
# to undo it; in this order, before any mount is released (a server holds its mount).
NOTES: dict[str, tuple[re.Pattern[str], Callable[[Path, str], list[str]]]] = {
    "knobs": (knobs.JOURNAL_RE, knobs.restore_journal),
    "load": (contention.LOAD_RE, contention.stop_load),
    "server": (servers.NOTE_RE, servers.stop_noted),
}


@dataclass(frozen=True)
class StaleResource:
    # "loop" (attached image), "image" (not attached), "mountdir", "knobs", "load"
    kind: str
    path: Path  # the image file, the mount point directory, the knob journal, the load file
    pid: int  # the dead owner
    loop_device: str | None = None
    mounts: tuple[str, ...] = ()  # mount points to release first, deepest first

    def describe(self) -> str:
        if self.kind == "loop":
            return f"{self.loop_device} on {self.path} (pid {self.pid} gone)"
        if self.kind == "knobs":
            changed = ", ".join(f"{e.name} (was {e.original})" for e in knobs.load(self.path))
            return f"{changed or 'no knob'} changed (pid {self.pid} gone, {self.path})"
        if self.kind == "load":
            return f"stress-ng load of pid {self.pid} (gone), {self.path}"
        return f"{self.path} (pid {self.pid} gone)"


def pid_alive(pid: int) -> bool:
    """True if process `pid` exists and is not a zombie."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc entry to look at: trust kill(0)
    state = stat.rpartition(")")[2].split()[:1]
    return state != ["Z"] and state != ["X"]


def _loop_table() -> list[tuple[str, str]]:
    """(device, back-file) of every attached loop device."""
    res = proc.run(["losetup", "-J", "--list"], timeout=30)
    table: list[tuple[str, str]] = []
    if res.ok and res.stdout.strip():
        try:
            data = json.loads(res.stdout)
        except json.JSONDecodeError:
            data = {}
        for dev in data.get("loopdevices") or []:
            name, back = dev.get("name"), dev.get("back-file")
            if name and back:
                table.append((str(name), str(back)))
        return table
    # Older losetup or no JSON: read sysfs directly.
    return [(dev, back) for dev, back in devinfo.attached_loops() if back]


def _device_devnums(device: str) -> set[str]:
    kname = Path(device).name
    nums = {devinfo.devnum_of_kname(kname)}
    nums.update(devinfo.devnum_of_kname(p) for p in devinfo.partitions(kname))
    return {n for n in nums if n}


def find_stale(workdir: str | Path) -> list[StaleResource]:
    """Resources in `workdir` that belong to processes that no longer exist."""
    top = Path(os.path.realpath(workdir))
    if not top.is_dir():
        return []
    mounts = devinfo.read_mountinfo()
    found: list[StaleResource] = []
    attached: set[str] = set()
    for device, back in _loop_table():
        backing = Path(back.removesuffix(" (deleted)"))
        m = IMAGE_RE.match(backing.name)
        if backing.parent != top or m is None:
            continue
        attached.add(backing.name)
        pid = int(m.group(1))
        if pid_alive(pid):
            continue
        devnums = _device_devnums(device)
        parts = {f"/dev/{p}" for p in devinfo.partitions(Path(device).name)}
        on_it = [
            e.mountpoint
            for e in devinfo.mounts_under("/", mounts)
            if e.devnum in devnums or e.source == device or e.source in parts
        ]
        found.append(StaleResource("loop", backing, pid, device, tuple(on_it)))
    for entry in sorted(top.iterdir()):
        # What a run wrote down to undo: its knobs' original values, its load's group.
        noted = next(((k, m) for k, (rx, _) in NOTES.items() if (m := rx.match(entry.name))), None)
        if noted is not None:
            kind, m = noted
            pid = int(m.group(1))
            if entry.is_file() and not entry.is_symlink() and not pid_alive(pid):
                found.append(StaleResource(kind, entry, pid))
            continue
        m = IMAGE_RE.match(entry.name)
        if m and entry.name not in attached and not entry.is_symlink() and entry.is_file():
            pid = int(m.group(1))
            if not pid_alive(pid):
                found.append(StaleResource("image", entry, pid))
            continue
        m = MOUNT_DIR_RE.match(entry.name)
        if m and not entry.is_symlink() and entry.is_dir():
            pid = int(m.group(1))
            if not pid_alive(pid):
                below = tuple(e.mountpoint for e in devinfo.mounts_under(entry, mounts))
                found.append(StaleResource("mountdir", entry, pid, None, below))
    return found


def _unmount_all(mountpoints: tuple[str, ...], why: str, lines: list[str]) -> bool:
    ok = True
    for mp in mountpoints:
        err = devinfo.unmount(mp)
        if err is None:
            lines.append(f"unmounted {mp} ({why})")
        else:
            ok = False
            lines.append(f"could not unmount {mp} ({why}): {err}")
    return ok


def _delete(
    path: Path,
    lines: list[str],
    remove: Callable[[Path], None] = Path.unlink,
    verb: str = "delete",
    done: str = "deleted",
) -> None:
    """Remove one thing a dead run left, saying what happened (nothing when it is gone)."""
    try:
        remove(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        lines.append(f"could not {verb} {path}: {exc.strerror}")
        return
    lines.append(f"{done} {path}")


def release_stale(workdir: str | Path) -> list[str]:
    """Release what `find_stale` finds; returns one human-readable line per action
    (failures start with 'could not'). Safe to call at any time, from any process."""
    lines: list[str] = []
    stale = find_stale(workdir)
    # Knobs first: a scheduler belongs to a loop device that is still there.
    for kind, (_, undo) in NOTES.items():
        for res in (r for r in stale if r.kind == kind):
            lines += undo(res.path, f"pid {res.pid} gone")
    # A dead run's scratch directory (sockets, tools' logs), once its servers are stopped.
    for entry in sorted(Path(os.path.realpath(workdir)).glob("scratch-*")):
        m = servers.SCRATCH_RE.match(entry.name)
        if m and entry.is_dir() and not entry.is_symlink() and not pid_alive(int(m.group(1))):
            shutil.rmtree(entry, ignore_errors=True)
            lines.append(f"removed {entry} (pid {m.group(1)} gone)")
    groups = [("memory", g) for g in memcap.stale_groups()]
    groups += [("traced", g) for g in stepgroup.stale_groups()]
    for what, (group, pid) in groups:  # empty once its processes are gone
        try:
            group.rmdir()
            lines.append(f"removed {what} cgroup {group} (pid {pid} gone)")
        except OSError as exc:
            lines.append(f"could not remove {what} cgroup {group}: {exc.strerror}")
    for group, pid in contained.stale_groups():  # a command's: what it left, killed
        try:
            contained.release(group)
            lines.append(f"removed command cgroup {group} (pid {pid} gone)")
        except OSError as exc:
            lines.append(f"could not remove command cgroup {group}: {exc.strerror}")
    for res in (r for r in stale if r.kind == "loop"):
        device = res.loop_device
        if device is None:
            continue
        _unmount_all(res.mounts, f"{device}, pid {res.pid} gone", lines)
        # Re-check right before detaching: the device must still serve this image.
        back = devinfo.loop_backing_file(Path(device).name)
        if back is not None and back.removesuffix(" (deleted)") == str(res.path):
            err = detach_loop(device)
            if err is None:
                lines.append(f"detached {device} ({res.path}, pid {res.pid} gone)")
            else:
                lines.append(f"could not detach {device}: {err}")
        _delete(res.path, lines)
    for res in (r for r in stale if r.kind == "image"):
        _delete(res.path, lines)
    for res in (r for r in stale if r.kind == "mountdir"):
        # Mounts may have gone with a detached loop device: look again.
        still = tuple(e.mountpoint for e in devinfo.mounts_under(res.path))
        if not _unmount_all(still, f"pid {res.pid} gone", lines):
            continue
        # rmdir: only if empty, never a file.
        _delete(res.path, lines, Path.rmdir, "remove", "removed empty mount point")
    return lines
