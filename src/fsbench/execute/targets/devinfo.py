"""Read-only facts about block devices, mounts and loop devices, from /proc and /sys.

Nothing here writes to a device, except `unmount`, which detaches a mount point.
Kernel names ("vda", "loop0", "sda2") are what /sys/class/block and /proc/diskstats use.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from fsbench.system import mounts

SYS_BLOCK = Path("/sys/class/block")
SYS_DEV_BLOCK = Path("/sys/dev/block")
MOUNTINFO = mounts.MOUNTINFO


MountEntry = mounts.MountEntry


@dataclass(frozen=True)
class DiskInfo:
    """What holds a device or a file: the device, the whole disk under it, its model."""

    device: str  # /dev/<kname> of the device holding the filesystem, e.g. /dev/vda or /dev/sda2
    disk: str  # kernel name of the physical disk under it (partitions, dm, md, loop followed)
    model: str | None
    rotational: bool | None


unescape = mounts.unescape
parse_mountinfo = mounts.parse


def read_mountinfo(path: Path = MOUNTINFO) -> list[MountEntry]:
    return mounts.read(path)


def devnum_str(dev: int) -> str:
    return f"{os.major(dev)}:{os.minor(dev)}"


def _is_under(path: str, top: str) -> bool:
    return path == top or top == "/" or path.startswith(top.rstrip("/") + "/")


def mount_of(path: str | Path, mounts: list[MountEntry] | None = None) -> MountEntry | None:
    """The mount that holds `path` (the innermost; of stacked mounts, the last one)."""
    real = os.path.realpath(path)
    best: MountEntry | None = None
    for entry in read_mountinfo() if mounts is None else mounts:
        if _is_under(real, entry.mountpoint) and (
            best is None or len(entry.mountpoint) >= len(best.mountpoint)
        ):
            best = entry
    return best


def mounts_under(top: str | Path, mounts: list[MountEntry] | None = None) -> list[MountEntry]:
    """Mounts at or below `top`, deepest first (the order to unmount them in)."""
    real = os.path.realpath(top)
    found = [
        m
        for m in (read_mountinfo() if mounts is None else mounts)
        if m.mountpoint == real or m.mountpoint.startswith(real.rstrip("/") + "/")
    ]
    return sorted(found, key=lambda m: (m.mountpoint.count("/"), m.mount_id), reverse=True)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return None


def kname_of_devnum(devnum: str) -> str | None:
    """Kernel name ("sda2") of a block device number "8:2", or None if there is none."""
    link = SYS_DEV_BLOCK / devnum
    if not link.exists():
        return None
    return Path(os.path.realpath(link)).name


def kname_of_device(dev: str) -> str | None:
    """Kernel name of a block device node (symlinks followed), or None if not a block device."""
    try:
        st = os.stat(dev)
    except OSError:
        return None
    if not stat.S_ISBLK(st.st_mode):
        return None
    return kname_of_devnum(devnum_str(st.st_rdev))


def devnum_of_kname(kname: str) -> str | None:
    return _read(SYS_BLOCK / kname / "dev")


def is_partition(kname: str) -> bool:
    return (SYS_BLOCK / kname / "partition").exists()


def whole_disk(kname: str) -> str:
    """The disk a partition belongs to ("sda2" -> "sda"); a disk is its own."""
    if is_partition(kname):
        return Path(os.path.realpath(SYS_BLOCK / kname)).parent.name
    return kname


def partitions(kname: str) -> list[str]:
    base = SYS_BLOCK / kname
    try:
        return sorted(p.name for p in base.iterdir() if (p / "partition").exists())
    except OSError:
        return []


def holders(kname: str) -> list[str]:
    """Devices stacked on this one (dm, md, bcache...)."""
    try:
        return sorted(p.name for p in (SYS_BLOCK / kname / "holders").iterdir())
    except OSError:
        return []


def slaves(kname: str) -> list[str]:
    try:
        return sorted(p.name for p in (SYS_BLOCK / kname / "slaves").iterdir())
    except OSError:
        return []


def loop_backing_file(kname: str) -> str | None:
    """The back-file of an attached loop device, as the kernel reports it (may end in
    ' (deleted)'), or None if `kname` is not an attached loop device."""
    return _read(SYS_BLOCK / kname / "loop" / "backing_file")


def attached_loops() -> list[tuple[str, str]]:
    """(/dev/loopN, back-file as the kernel reports it) of every attached loop device,
    from sysfs, in name order."""
    try:
        names = sorted(p.name for p in SYS_BLOCK.iterdir() if p.name.startswith("loop"))
    except OSError:
        return []
    return [(f"/dev/{n}", back) for n in names if (back := loop_backing_file(n)) is not None]


def loop_direct_io(kname: str) -> bool | None:
    value = _read(SYS_BLOCK / kname / "loop" / "dio")
    return None if value is None else value == "1"


def device_model(kname: str) -> str | None:
    disk = whole_disk(kname)
    model = _read(SYS_BLOCK / disk / "device" / "model")
    return model or None


def rotational(kname: str) -> bool | None:
    value = _read(SYS_BLOCK / whole_disk(kname) / "queue" / "rotational")
    return None if value is None else value == "1"


def diskstats_path(kname: str) -> Path:
    """The counters file of a disk or a partition (/sys/class/block works for both;
    /sys/block/<name>/stat only exists for whole disks)."""
    return SYS_BLOCK / kname / "stat"


def _physical_disk(kname: str, depth: int = 0) -> str:
    """Follow partitions, dm/md slaves and loop back-files down to a physical disk."""
    disk = whole_disk(kname)
    if depth > 8:
        return disk
    under = slaves(disk)
    if under:
        return _physical_disk(under[0], depth + 1)
    backing = loop_backing_file(disk)
    if backing:
        info = _file_device_kname(backing.removesuffix(" (deleted)"))
        if info:
            return _physical_disk(info, depth + 1)
    return disk


def _file_device_kname(path: str) -> str | None:
    try:
        st_dev = os.stat(path).st_dev
    except OSError:
        return None
    kname = kname_of_devnum(devnum_str(st_dev))
    if kname is not None:
        return kname
    # btrfs and other filesystems report an anonymous device number: use the mount source.
    entry = mount_of(path)
    if entry is not None and entry.source.startswith("/dev/"):
        return kname_of_device(entry.source)
    return None


def disk_info_of_device(kname: str) -> DiskInfo:
    disk = _physical_disk(kname)
    return DiskInfo(
        device=f"/dev/{kname}",
        disk=disk,
        model=device_model(disk),
        rotational=rotational(disk),
    )


def disk_info_of_path(path: str | Path) -> DiskInfo | None:
    """The block device holding a file or directory, or None (tmpfs, ramfs, network...)."""
    kname = _file_device_kname(str(path))
    return None if kname is None else disk_info_of_device(kname)


def fs_type_of(path: str | Path) -> str | None:
    entry = mount_of(path)
    return None if entry is None else entry.fstype


def unmount(mountpoint: str) -> str | None:
    """umount, then `umount -l` if it is busy. None on success, else the error line."""
    return mounts.umount(mountpoint, attempts=1).error


def who_holds(kname: str) -> list[str]:
    """What keeps a device busy, for an error message: mounts of it in any mount namespace
    (one another process made still holds the filesystem after our umount), processes that
    have it open, and kernel holders (dm, md). Best effort: a process gone meanwhile is
    skipped."""
    devnum = devnum_of_kname(kname)
    said: list[str] = [f"holder {h}" for h in holders(kname)]
    seen_ns: set[str] = set()
    own_ns = _read_link(Path("/proc/self/ns/mnt"))
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        ns = _read_link(proc / "ns" / "mnt")
        if ns is not None and ns not in seen_ns:
            seen_ns.add(ns)
            try:
                entries = read_mountinfo(proc / "mountinfo")
            except OSError:
                entries = []
            where = (
                ""
                if ns == own_ns
                else f" in the mount namespace of pid {proc.name} ({_comm(proc)})"
            )
            said += [f"mounted at {e.mountpoint}{where}" for e in entries if e.devnum == devnum]
        try:
            fds = list((proc / "fd").iterdir())
        except OSError:
            continue
        if any(_read_link(fd) == f"/dev/{kname}" for fd in fds):
            said.append(f"open by pid {proc.name} ({_comm(proc)})")
    return said


def _read_link(path: Path) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def _comm(proc: Path) -> str:
    return (_read(proc / "comm") or "?").strip()
