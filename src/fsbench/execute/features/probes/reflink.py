"""Copies that share extents with their source (`cp --reflink=always`)."""

from __future__ import annotations

import os

from fsbench.execute.features.base import Evidence, MiB, Probe, Scratch, Setup, complaint
from fsbench.store.features import Feature, Result
from fsbench.system import fiemap

REFLINK = Feature(
    "reflink copy",
    "Does `cp --reflink=always` make a copy that shares the source's extents?",
)


def run(s: Scratch) -> dict[str, Result]:
    ev = Evidence()
    d = s.workdir("reflink")
    src, dst = d / "src", d / "copy"
    with open(src, "wb") as f:
        f.write(os.urandom(4 * MiB))
        f.flush()
        os.fsync(f.fileno())
    res = s.run(["cp", "--reflink=always", str(src), str(dst)], ev, timeout=60)
    if not res.ok:
        return {REFLINK.name: ev.result("no", note=complaint(res))}
    exts = fiemap.extents(dst, sync=True)
    shared = sum(1 for e in exts if e.flags & fiemap.FIEMAP_EXTENT_SHARED)
    ev.say(f"FIEMAP of the copy: {len(exts)} extent(s), {shared} flagged SHARED")
    if shared:
        return {REFLINK.name: ev.result("yes", f"{shared} shared extent(s)")}
    return {REFLINK.name: ev.result("no", note="cp succeeded but no extent is shared")}


PROBE = Probe(name="reflink", features=(REFLINK,), run=run, setup=Setup())
