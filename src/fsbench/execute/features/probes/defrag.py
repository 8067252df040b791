"""Online defragmentation: a file is fragmented on purpose (64 KiB O_DIRECT writes
interleaved with another file's, each fsynced), then the family's defragmenter runs on it
while mounted; fragments are counted with FIEMAP (as filefrag does) before and after."""

from __future__ import annotations

import mmap
import os
from pathlib import Path

from fsbench.execute.features.base import (
    Evidence,
    NotApplicable,
    Probe,
    Scratch,
    Setup,
    complaint,
    known_for,
)
from fsbench.store.features import Feature, Result
from fsbench.system import fiemap, proc

DEFRAG = Feature(
    "online defragmentation",
    "Does the filesystem's defragmenter reduce a mounted file's fragments?",
)

TOOLS: dict[str, tuple[str, ...]] = {
    "ext": ("e4defrag", "-v", "{file}"),
    "xfs": ("xfs_fsr", "-v", "{file}"),
    "btrfs": ("btrfs", "filesystem", "defragment", "-f", "{file}"),
}
CHUNK = 64 * 1024
CHUNKS = 64


def fragment(path: Path, other: Path) -> None:
    """Write `path` in CHUNKS pieces alternating with `other`, O_DIRECT and fsync each."""
    flags = os.O_CREAT | os.O_WRONLY | os.O_DIRECT | os.O_CLOEXEC
    buf = mmap.mmap(-1, CHUNK)
    buf.write(os.urandom(CHUNK))
    a = os.open(path, flags, 0o644)
    b = os.open(other, flags, 0o644)
    try:
        for i in range(CHUNKS):
            for fd in (a, b):
                os.pwrite(fd, buf, i * CHUNK)
                os.fsync(fd)
    finally:
        os.close(a)
        os.close(b)
        buf.close()


def run(s: Scratch) -> dict[str, Result]:
    template = known_for(TOOLS, s, "online defragmenter")
    if proc.which(template[0]) is None:
        raise NotApplicable(f"{template[0]} not installed (apt-get install {s.fs.package})")
    ev = Evidence()
    d = s.workdir("defrag")
    path = d / "fragmented"
    fragment(path, d / "spacer")
    (d / "spacer").unlink()
    before = fiemap.fragments(fiemap.extents(path, sync=True))
    ev.say(
        f"{CHUNKS} × {CHUNK // 1024} KiB O_DIRECT writes interleaved with another file: "
        f"{before} fragments"
    )
    if before < 2:
        return {DEFRAG.name: ev.result("n/a", note="could not fragment a file here")}
    res = s.run(s.expand(template, file=str(path)), ev, timeout=120)
    after = fiemap.fragments(fiemap.extents(path, sync=True))
    ev.say(f"fragments after: {after}")
    if not res.ok:
        return {DEFRAG.name: ev.result("no", note=complaint(res))}
    if after < before:
        return {DEFRAG.name: ev.result("yes", f"{before} → {after} fragments")}
    return {DEFRAG.name: ev.result("no", note=f"{template[0]} ran; fragments {before} → {after}")}


PROBE = Probe(name="defrag", features=(DEFRAG,), run=run, setup=Setup())
