"""The FIEMAP ioctl: does it map a freshly written file's extents?"""

from __future__ import annotations

import os

from fsbench.execute.features.base import Evidence, MiB, Probe, Scratch, Setup, os_error
from fsbench.store.features import Feature, Result
from fsbench.system import fiemap

FIEMAP = Feature("FIEMAP", "Does the FIEMAP ioctl report a file's extents?")


def run(s: Scratch) -> dict[str, Result]:
    ev = Evidence()
    path = s.workdir("fiemap") / "f"
    with open(path, "wb") as f:
        f.write(os.urandom(MiB))
        f.flush()
        os.fsync(f.fileno())
    try:
        exts = fiemap.extents(path, sync=True)
    except OSError as exc:
        ev.say(f"ioctl(FS_IOC_FIEMAP) = {os_error(exc)}")
        return {FIEMAP.name: ev.result("no", note=os_error(exc))}
    mapped = sum(e.length for e in exts)
    ev.say(f"ioctl(FS_IOC_FIEMAP) on a 1 MiB file: {len(exts)} extent(s), {mapped} bytes mapped")
    if mapped >= MiB:
        return {FIEMAP.name: ev.result("yes", f"{len(exts)} extent(s)")}
    return {FIEMAP.name: ev.result("no", note=f"only {mapped} of {MiB} bytes mapped")}


PROBE = Probe(name="fiemap", features=(FIEMAP,), run=run, setup=Setup())
