"""The largest extended attribute value: `user.fsbench` set with growing sizes (doubling up
to the VFS limit of 64 KiB), then a binary search between the last size that worked and
the first refused."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from fsbench.execute.features.base import Evidence, Probe, Scratch, Setup, os_error
from fsbench.execute.features.search import largest_accepted
from fsbench.store.features import Feature, Result

XATTR = Feature(
    "largest xattr value",
    "How large can one user.* extended attribute value be (setxattr)?",
    quantity=True,
)
NAME = "user.fsbench"
VFS_MAX = 65536  # XATTR_SIZE_MAX
LIMITS = (errno.E2BIG, errno.ENOSPC, errno.ERANGE, errno.EFBIG)


def _sets(path: Path, n: int) -> OSError | None:
    try:
        os.setxattr(path, NAME, b"v" * n)
    except OSError as exc:
        if exc.errno in LIMITS:
            return exc
        raise
    finally:
        try:
            os.removexattr(path, NAME)
        except OSError:
            pass
    return None


def run(s: Scratch) -> dict[str, Result]:
    ev = Evidence()
    path = s.workdir("xattr") / "f"
    path.touch()
    try:
        os.setxattr(path, NAME, b"1")
    except OSError as exc:
        ev.say(f"setxattr({NAME}, 1 byte) = {os_error(exc)}")
        return {XATTR.name: ev.result("no", note=os_error(exc))}
    good, bad = 1, None
    n = 16
    while n <= VFS_MAX + 1:
        err = _sets(path, n)
        if err is not None:
            ev.say(f"setxattr({NAME}, {n} bytes) = {os_error(err)}")
            bad = n
            break
        good = n
        n = n * 2 if n < VFS_MAX else VFS_MAX + 1
    if bad is not None:
        good = largest_accepted(good, bad, lambda n: _sets(path, n) is None)
        ev.say(f"binary search: {good} bytes set, {good + 1} refused")
    return {XATTR.name: ev.result("yes", good, "B", note=f"{good:,} bytes")}


PROBE = Probe(name="xattr", features=(XATTR,), run=run, setup=Setup())
