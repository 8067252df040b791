"""Block device counters from /sys/class/block/<dev>/stat (see the kernel's
Documentation/block/stat.rst): what the device really read and wrote."""

from __future__ import annotations

import os
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Self

SECTOR = 512


class Counters:
    """Cumulative counters (a dataclass of numbers) read twice: what happened between
    the two readings is their difference, field by field."""

    def __sub__(self, other: Self) -> Self:
        pairs = zip(astuple(self), astuple(other), strict=True)  # type: ignore[call-overload]
        return type(self)(*(a - b for a, b in pairs))


@dataclass(frozen=True)
class DiskStat(Counters):
    reads: int
    read_bytes: int
    writes: int
    write_bytes: int
    busy_ms: int
    discards: int
    discard_bytes: int
    flushes: int


def device_name(device: str) -> str:
    return os.path.basename(os.path.realpath(device))


def parse(text: str) -> DiskStat:
    f = [int(x) for x in text.split()]
    f += [0] * (17 - len(f))  # older kernels have fewer fields (no discard/flush)
    return DiskStat(
        reads=f[0],
        read_bytes=f[2] * SECTOR,
        writes=f[4],
        write_bytes=f[6] * SECTOR,
        busy_ms=f[9],
        discards=f[11],
        discard_bytes=f[13] * SECTOR,
        flushes=f[15],
    )


def read(device: str) -> DiskStat | None:
    path = Path("/sys/class/block") / device_name(device) / "stat"
    try:
        return parse(path.read_text())
    except OSError:
        return None
