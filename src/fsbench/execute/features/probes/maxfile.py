"""The largest file: one byte written at growing offsets (file size 2^k) until the kernel
says EFBIG or EINVAL, then a binary search between the last size that worked and the
first that did not. The file stays sparse: one block at a time, truncated away."""

from __future__ import annotations

import errno
import os

from fsbench.execute.features.base import Evidence, Probe, Scratch, Setup, os_error
from fsbench.execute.features.search import first_refused, largest_accepted
from fsbench.store.features import Feature, Result
from fsbench.system import numbers

MAXFILE = Feature(
    "largest file",
    "What is the largest file size a 1-byte write at the end can make (EFBIG beyond)?",
    quantity=True,
)

LIMITS = (errno.EFBIG, errno.EINVAL, errno.EOVERFLOW)
MAX_OFF = (1 << 63) - 1  # loff_t


def _fits(fd: int, size: int) -> OSError | None:
    """Can the file be `size` bytes by writing its last byte? None if so."""
    try:
        os.pwrite(fd, b"x", size - 1)
    except OSError as exc:
        if exc.errno in LIMITS:
            return exc
        raise
    finally:
        os.ftruncate(fd, 0)
    return None


def largest(fd: int, ev: Evidence) -> int:
    sizes = (min(1 << k, MAX_OFF + 1) for k in range(20, 64))
    last, refused = first_refused(sizes, lambda n: _fits(fd, n))
    good = last or 1
    if refused is None:
        ev.say(f"every size up to {numbers.exact_size(good)} worked")
        return good
    bad, err = refused
    ev.say(f"pwrite(1 byte at {bad} − 1) = {os_error(err)}")
    ev.say(f"pwrite(1 byte at {good} − 1) ok")
    good = largest_accepted(good, bad, lambda n: _fits(fd, n) is None)  # to the byte
    ev.say(f"binary search: {good} bytes fit, {good + 1} do not")
    return good


def run(s: Scratch) -> dict[str, Result]:
    ev = Evidence()
    path = s.workdir("maxfile") / "sparse"
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o644)
    try:
        size = largest(fd, ev)
    finally:
        os.close(fd)
        path.unlink()
    return {MAXFILE.name: ev.result("yes", size, "B", note=f"{size:,} bytes")}


PROBE = Probe(name="maxfile", features=(MAXFILE,), run=run, setup=Setup())
