"""The longest file name: names of n ASCII bytes, from 255 up (256, then doubling) until
ENAMETOOLONG, then a binary search."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from fsbench.execute.features.base import Evidence, Probe, Scratch, Setup, os_error
from fsbench.execute.features.search import first_refused, largest_accepted
from fsbench.store.features import Feature, Result

NAMES = Feature(
    "longest file name",
    "How many bytes long can one file name be (ENAMETOOLONG beyond)?",
    quantity=True,
)
LIMIT = 4096  # PATH_MAX: nothing longer could be named anyway


def _creates(d: Path, n: int) -> OSError | None:
    path = d / ("n" * n)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return exc
        raise
    os.close(fd)
    path.unlink()
    return None


def run(s: Scratch) -> dict[str, Result]:
    ev = Evidence()
    d = s.workdir("names")
    # 255 (NAME_MAX), then doubling from 256 to LIMIT.
    sizes = [255, *(256 << k for k in range((LIMIT // 256).bit_length()))]
    last, refused = first_refused(
        sizes,
        lambda n: _creates(d, n),
        lambda n, err: ev.say(
            f"create a {n}-byte name: " + ("ok" if err is None else os_error(err))
        ),
    )
    good = last or 0
    bad = 255 if last is None else refused[0] if refused else None  # 255 refused: below it
    if bad is not None:
        good = largest_accepted(good, bad, lambda n: _creates(d, n) is None)
    if good == 0:
        return {NAMES.name: ev.result("no", note="no name could be created")}
    return {NAMES.name: ev.result("yes", good, "bytes")}


PROBE = Probe(name="names", features=(NAMES,), run=run, setup=Setup())
