"""fallocate(2) modes, called through libc with each FALLOC_FL_* flag and checked by their
effect (allocated blocks, size, zeros). EOPNOTSUPP is a "no" in the kernel's own words."""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fsbench.execute.features.base import Evidence, MiB, Probe, Scratch, Setup, os_error
from fsbench.store.features import Feature, Result

# <linux/falloc.h>
FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02
FALLOC_FL_COLLAPSE_RANGE = 0x08
FALLOC_FL_ZERO_RANGE = 0x10
FALLOC_FL_INSERT_RANGE = 0x20

_FLAG_NAMES = {
    FALLOC_FL_KEEP_SIZE: "FALLOC_FL_KEEP_SIZE",
    FALLOC_FL_PUNCH_HOLE: "FALLOC_FL_PUNCH_HOLE",
    FALLOC_FL_COLLAPSE_RANGE: "FALLOC_FL_COLLAPSE_RANGE",
    FALLOC_FL_ZERO_RANGE: "FALLOC_FL_ZERO_RANGE",
    FALLOC_FL_INSERT_RANGE: "FALLOC_FL_INSERT_RANGE",
}


def flag_names(mode: int) -> str:
    if mode == 0:
        return "0"
    return "|".join(name for bit, name in _FLAG_NAMES.items() if mode & bit)


_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_fallocate = _libc.fallocate64 if hasattr(_libc, "fallocate64") else _libc.fallocate
_fallocate.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
_fallocate.restype = ctypes.c_int


def fallocate(fd: int, mode: int, offset: int, length: int) -> None:
    """fallocate(2) with any mode; OSError on failure (os.posix_fallocate has no modes)."""
    if _fallocate(fd, mode, offset, length) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


@dataclass(frozen=True)
class Mode:
    feature: Feature
    mode: int
    data: bool  # start from a file of 4 MiB of written data (else an empty file)
    check: Callable[[os.stat_result, os.stat_result, bytes], str | None]  # None: effect seen


SIZE = 4 * MiB
OFF = MiB
LEN = MiB


def _allocated(b: os.stat_result, a: os.stat_result, _: bytes) -> str | None:
    return None if a.st_blocks * 512 >= SIZE else f"only {a.st_blocks * 512} bytes allocated"


def _punched(b: os.stat_result, a: os.stat_result, mid: bytes) -> str | None:
    if a.st_size != b.st_size:
        return "size changed"
    if a.st_blocks >= b.st_blocks:
        return f"allocated blocks {b.st_blocks} → {a.st_blocks}: nothing freed"
    return None if mid == bytes(len(mid)) else "the range does not read as zeros"


def _collapsed(b: os.stat_result, a: os.stat_result, _: bytes) -> str | None:
    return None if a.st_size == b.st_size - LEN else f"size {b.st_size} → {a.st_size}"


def _zeroed(b: os.stat_result, a: os.stat_result, mid: bytes) -> str | None:
    return None if mid == bytes(len(mid)) else "the range does not read as zeros"


def _inserted(b: os.stat_result, a: os.stat_result, _: bytes) -> str | None:
    return None if a.st_size == b.st_size + LEN else f"size {b.st_size} → {a.st_size}"


MODES = (
    Mode(
        Feature("fallocate: allocate", "Does fallocate(2) preallocate blocks (mode 0)?"),
        0,
        False,
        _allocated,
    ),
    Mode(
        Feature("fallocate: punch hole", "Does FALLOC_FL_PUNCH_HOLE free a range of a file?"),
        FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
        True,
        _punched,
    ),
    Mode(
        Feature(
            "fallocate: collapse range",
            "Does FALLOC_FL_COLLAPSE_RANGE remove a range and close the gap?",
        ),
        FALLOC_FL_COLLAPSE_RANGE,
        True,
        _collapsed,
    ),
    Mode(
        Feature("fallocate: zero range", "Does FALLOC_FL_ZERO_RANGE zero a range in place?"),
        FALLOC_FL_ZERO_RANGE,
        True,
        _zeroed,
    ),
    Mode(
        Feature(
            "fallocate: insert range",
            "Does FALLOC_FL_INSERT_RANGE insert a hole, shifting the rest?",
        ),
        FALLOC_FL_INSERT_RANGE,
        True,
        _inserted,
    ),
)


def probe_mode(path: Path, m: Mode) -> Result:
    ev = Evidence()
    with open(path, "wb") as f:
        if m.data:
            f.write(os.urandom(SIZE))
            f.flush()
            os.fsync(f.fileno())
    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    try:
        before = os.fstat(fd)
        offset, length = (0, SIZE) if m.mode == 0 else (OFF, LEN)
        call = f"fallocate(fd, {flag_names(m.mode)}, {offset}, {length})"
        try:
            fallocate(fd, m.mode, offset, length)
        except OSError as exc:
            ev.say(f"{call} = -1 {os_error(exc)}")
            if exc.errno in (errno.EOPNOTSUPP, errno.ENOTSUP):
                return ev.result("no", note=os_error(exc))
            return ev.result("no", note=f"refused: {os_error(exc)}")
        os.fsync(fd)
        after = os.fstat(fd)
        mid = os.pread(fd, LEN, OFF)
        ev.say(
            f"{call} = 0; size {before.st_size} → {after.st_size}, "
            f"allocated {before.st_blocks * 512} → {after.st_blocks * 512} bytes"
        )
        problem = m.check(before, after, mid)
        if problem is None:
            return ev.result("yes")
        return ev.result("error", note=f"returned 0, but {problem}")
    finally:
        os.close(fd)
        path.unlink()


def run(s: Scratch) -> dict[str, Result]:
    d = s.workdir("fallocate")
    out: dict[str, Result] = {}
    for m in MODES:
        s.check()
        out[m.feature.name] = probe_mode(d / "f", m)
    return out


PROBE = Probe(
    name="fallocate",
    features=tuple(m.feature for m in MODES),
    run=run,
    setup=Setup(),
)
