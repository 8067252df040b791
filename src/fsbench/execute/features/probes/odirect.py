"""O_DIRECT: a file opened with O_DIRECT takes an aligned write and reads it back; the
smallest alignment (512 B .. 4 KiB, buffer, offset and length alike) that works is the
value."""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import struct

from fsbench.execute.features.base import Evidence, Probe, Scratch, Setup, os_error
from fsbench.store.features import Feature, Result

ODIRECT = Feature(
    "O_DIRECT",
    "Does an O_DIRECT write and read work, and what is the smallest alignment it accepts?",
)
ALIGNMENTS = (512, 1024, 2048, 4096)
PAGE = mmap.PAGESIZE


# statx(2) with STATX_DIOALIGN (Linux 6.1): the alignment the filesystem asks of O_DIRECT.
STATX_DIOALIGN = 0x2000
AT_FDCWD = -100
_STATX_SIZE = 256
_DIO_OFFSET = 152  # stx_dio_mem_align, stx_dio_offset_align: two u32 at this offset
_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def dio_alignment(path: str) -> tuple[int, int] | None:
    """(memory, offset) alignment for O_DIRECT as statx reports it; None if not reported."""
    statx = getattr(_libc, "statx", None)
    if statx is None:
        return None
    buf = ctypes.create_string_buffer(_STATX_SIZE)
    rc = statx(AT_FDCWD, path.encode(), 0, STATX_DIOALIGN, buf)
    if rc != 0:
        return None
    mask = struct.unpack_from("=I", buf.raw, 0)[0]
    if not mask & STATX_DIOALIGN:
        return None
    mem, off = struct.unpack_from("=II", buf.raw, _DIO_OFFSET)
    return int(mem), int(off)


def _aligned_io(fd: int, n: int, buf: mmap.mmap) -> OSError | None:
    """Write and read back n bytes at offset n from an n-aligned (not page-aligned)
    address of `buf`."""
    view = memoryview(buf)
    start = n if n < PAGE else 0  # an address aligned to n but not to anything larger
    try:
        data = view[start : start + n]
        if os.pwrite(fd, data, n) != n:
            return OSError(0, "short write")
        back = memoryview(buf)[2 * PAGE + start : 2 * PAGE + start + n]
        if os.preadv(fd, [back], n) != n:
            return OSError(0, "short read")
        if bytes(back) != bytes(data):
            return OSError(0, "read back different data")
        return None
    except OSError as exc:
        return exc
    finally:
        view.release()


def run(s: Scratch) -> dict[str, Result]:
    ev = Evidence()
    path = s.workdir("odirect") / "f"
    try:
        fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_DIRECT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        ev.say(f"open(O_DIRECT) = {os_error(exc)}")
        return {ODIRECT.name: ev.result("no", note=os_error(exc))}
    told = dio_alignment(str(path))
    if told is None:
        ev.say("statx(STATX_DIOALIGN): not reported by this filesystem")
        note = "smallest alignment accepted (statx reports none)"
    else:
        ev.say(f"statx(STATX_DIOALIGN): dio_mem_align={told[0]} dio_offset_align={told[1]}")
        note = f"smallest alignment accepted (statx: memory {told[0]}, offset {told[1]})"
    buf = mmap.mmap(-1, 4 * PAGE)  # page-aligned
    buf.write(os.urandom(2 * PAGE))
    try:
        for n in ALIGNMENTS:
            err = _aligned_io(fd, n, buf)
            ev.say(
                f"O_DIRECT write+read of {n} bytes at offset {n}, {n}-aligned buffer: "
                + ("ok" if err is None else os_error(err))
            )
            if err is None:
                return {ODIRECT.name: ev.result("yes", n, "B", note=note)}
    finally:
        buf.close()
        os.close(fd)
        path.unlink()
    return {ODIRECT.name: ev.result("no", note="no aligned O_DIRECT write worked")}


PROBE = Probe(name="odirect", features=(ODIRECT,), run=run, setup=Setup())
