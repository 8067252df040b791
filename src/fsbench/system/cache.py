"""Cache control and memory: flush a filesystem, drop the page cache, the machine's memory."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

_libc = ctypes.CDLL(None, use_errno=True)


def syncfs(path: Path) -> None:
    """Flush one filesystem (syncfs(2)) rather than every filesystem of the host."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if _libc.syncfs(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"syncfs {path}: {os.strerror(err)}")
    finally:
        os.close(fd)


def drop_caches() -> None:
    """sync, then drop page cache, dentries and inodes (needs root)."""
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def kib_field(path: Path, key: str) -> int:
    """A `Key:  N kB` line of /proc/meminfo or /proc/<pid>/status, in bytes (0: none)."""
    with open(path) as f:
        for line in f:
            if line.startswith(f"{key}:"):
                return int(line.split()[1]) * 1024
    return 0


def mem_total(meminfo: Path = Path("/proc/meminfo")) -> int:
    """The machine's memory (MemTotal), in bytes."""
    return kib_field(meminfo, "MemTotal")
