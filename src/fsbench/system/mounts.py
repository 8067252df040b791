"""The mount table (/proc/self/mountinfo) and unmounting: one parser, one umount, used by
the runner, the targets and the stale-resource cleanup alike."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from fsbench.system import proc

MOUNTINFO = Path("/proc/self/mountinfo")
_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")


@dataclass(frozen=True)
class MountEntry:
    """One line of /proc/self/mountinfo (see proc(5))."""

    mount_id: int
    parent_id: int
    devnum: str  # "MAJ:MIN" of the filesystem (0:N for tmpfs, btrfs, overlay...)
    root: str
    mountpoint: str
    fstype: str
    source: str
    mount_options: tuple[str, ...] = ()  # per-mount flags: rw, noatime, relatime...
    super_options: tuple[str, ...] = ()  # the filesystem's own: data=writeback, nodelalloc...

    @property
    def options(self) -> list[str]:
        """Effective options: per-mount flags then superblock options, without duplicates."""
        return list(dict.fromkeys((*self.mount_options, *self.super_options)))


def unescape(field: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as \\ooo."""
    return _OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


def _split(options: str) -> tuple[str, ...]:
    return tuple(o for o in options.split(",") if o)


def parse(text: str) -> list[MountEntry]:
    entries: list[MountEntry] = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 9 or "-" not in parts[6:]:
            continue
        sep = parts.index("-", 6)
        if len(parts) < sep + 3:
            continue
        entries.append(
            MountEntry(
                mount_id=int(parts[0]),
                parent_id=int(parts[1]),
                devnum=parts[2],
                root=unescape(parts[3]),
                mountpoint=unescape(parts[4]),
                fstype=parts[sep + 1],
                source=unescape(parts[sep + 2]),
                mount_options=_split(parts[5]),
                super_options=_split(parts[sep + 3]) if len(parts) > sep + 3 else (),
            )
        )
    return entries


def read(path: Path = MOUNTINFO) -> list[MountEntry]:
    try:
        return parse(path.read_text(errors="replace"))
    except OSError:
        return []


def entry_at(mountpoint: Path | str) -> MountEntry | None:
    """The mount on top at exactly this path, or None."""
    target = str(Path(mountpoint).resolve())
    found = None
    for e in read():
        if e.mountpoint == target:
            found = e  # later lines are mounted on top of earlier ones
    return found


def is_mounted(mountpoint: Path | str) -> bool:
    return entry_at(mountpoint) is not None


@dataclass(frozen=True)
class Unmounted:
    lazy: bool  # the target was busy and was detached with `umount -l`
    error: str | None  # why it is still mounted, if it is
    busy: str = ""  # what umount said while busy


def umount(mountpoint: Path | str, attempts: int = 5) -> Unmounted:
    """umount; while busy retry with backoff, then `umount -l`."""
    last = ""
    for i in range(attempts):
        res = proc.run(["umount", str(mountpoint)], timeout=600)
        if res.ok or not is_mounted(mountpoint):
            return Unmounted(lazy=False, error=None)
        last = res.output
        if i + 1 < attempts:
            time.sleep(0.2 * (i + 1))
    lazy = proc.run(["umount", "-l", str(mountpoint)], timeout=60)
    if lazy.ok or not is_mounted(mountpoint):
        return Unmounted(lazy=True, error=None, busy=last.strip())
    first = (lazy.output or last or f"exit {lazy.returncode}").splitlines()[0]
    return Unmounted(lazy=True, error=first, busy=last.strip())
