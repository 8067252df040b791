"""The largest extended attribute value: `user.fsbench` set with growing sizes (doubling up
to the VFS limit of 64 KiB), then a binary search between the last size that worked and
the first refused."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from fsbench.execute.features.base import Evidence, Probe, Scratch, Setup, os_error
from fsbench.execute.features.search import first_refused, largest_accepted
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
    # Doubling from 16 bytes to the VFS limit, then one byte past it.
    sizes = [*(16 << k for k in range((VFS_MAX // 16).bit_length())), VFS_MAX + 1]
    last, refused = first_refused(sizes, lambda n: _sets(path, n))
    good = last or 1
    if refused is not None:
        bad, err = refused
        ev.say(f"setxattr({NAME}, {bad} bytes) = {os_error(err)}")
        good = largest_accepted(good, bad, lambda n: _sets(path, n) is None)
        ev.say(f"binary search: {good} bytes set, {good + 1} refused")
    return {XATTR.name: ev.result("yes", good, "B", note=f"{good:,} bytes")}


PROBE = Probe(name="xattr", features=(XATTR,), run=run, setup=Setup())
