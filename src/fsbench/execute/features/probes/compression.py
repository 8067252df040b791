"""Transparent compression: a filesystem mounted with its compression option (where it has
one) gets 8 MiB of very compressible text; FIEMAP's ENCODED flag says whether it was stored
compressed, and `compsize` (btrfs-compsize) says how much, where it is installed. Where no
mount option is known, `chattr +c` (the per-file compression attribute) is tried instead.
"""

from __future__ import annotations

import os
import re

from fsbench.execute.features.base import Evidence, Probe, Scratch, Setup, complaint
from fsbench.store.features import Feature, Result
from fsbench.system import fiemap, proc

COMPRESSION = Feature(
    "transparent compression",
    "Is file data stored compressed (mount option or chattr +c), as FIEMAP reports it?",
)

MOUNT_OPTIONS = {"btrfs": "compress=zstd"}
TEXT = b"fsbench: a very compressible line of text, repeated 0123456789\n" * 131072  # 8 MiB


def run(s: Scratch) -> dict[str, Result]:
    ev = Evidence()
    d = s.workdir("compress")
    path = d / "text"
    option = MOUNT_OPTIONS.get(s.family)
    how = f"mount -o {option}" if option else "chattr +c"
    if option is None:
        path.touch()
        res = s.run(["chattr", "+c", str(path)], ev, timeout=30)
        if not res.ok:
            return {COMPRESSION.name: ev.result("no", note=f"chattr +c refused: {complaint(res)}")}
    else:
        ev.say(f"mounted with -o {option}")
    with open(path, "wb") as f:
        f.write(TEXT)
        f.flush()
        os.fsync(f.fileno())
    exts = fiemap.extents(path, sync=True)
    encoded = sum(1 for e in exts if e.flags & fiemap.FIEMAP_EXTENT_ENCODED)
    ev.say(f"FIEMAP: {len(exts)} extent(s), {encoded} flagged ENCODED")
    value = f"{encoded} encoded extent(s)"
    if encoded and proc.which("compsize"):
        res = s.run(["compsize", str(path)], ev, timeout=30)
        m = re.search(r"^TOTAL\s+(\d+%)\s+(\S+)\s+(\S+)", res.stdout, re.MULTILINE)
        if m:
            value = f"{m.group(3)} → {m.group(2)} ({m.group(1)})"
    if encoded:
        return {COMPRESSION.name: ev.result("yes", value, note=how)}
    return {COMPRESSION.name: ev.result("no", note=f"{how}: data stored as written")}


PROBE = Probe(
    name="compression",
    features=(COMPRESSION,),
    run=run,
    setup=Setup(key="compression", mount=MOUNT_OPTIONS),
)
