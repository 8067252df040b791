"""The largest allocation unit mkfs accepts and the kernel mounts.

Each family has ladders of growing sizes (ext: block size, then bigalloc cluster size;
xfs: block size; btrfs: sector size, and node size for metadata). A ladder stops at the
first size mkfs refuses once one was accepted (or after three refusals in a row before
that). Every accepted size is mounted: a filesystem mkfs makes but this kernel cannot
mount (ext4 blocks larger than the page size) does not count.
"""

from __future__ import annotations

from dataclasses import dataclass

from fsbench.execute.features.base import Evidence, Probe, Scratch, Setup, first_line, known_for
from fsbench.store.features import Feature, Result
from fsbench.system import numbers
from fsbench.system.errors import Unsupported

UNIT = Feature(
    "largest allocation unit",
    "What is the largest block/cluster size mkfs accepts that this kernel also mounts?",
    quantity=True,
)


@dataclass(frozen=True)
class Ladder:
    label: str
    options: tuple[str, ...]  # {n}: the size in bytes
    sizes: tuple[int, ...]
    data: bool = True  # an allocation unit of file data (btrfs node size is metadata)


def _pow2(lo: int, hi: int) -> tuple[int, ...]:
    out = []
    n = lo
    while n <= hi:
        out.append(n)
        n *= 2
    return tuple(out)


# ext formats are quick with lazy init here: nothing runs on these filesystems.
_EXT_FAST = ("-E", "lazy_itable_init=1,lazy_journal_init=1")

LADDERS: dict[str, tuple[Ladder, ...]] = {
    "ext": (
        Ladder("block", ("-b", "{n}", *_EXT_FAST), _pow2(1024, 65536)),
        Ladder(
            "bigalloc cluster", ("-O", "bigalloc", "-C", "{n}", *_EXT_FAST), _pow2(8192, 1 << 29)
        ),
    ),
    "xfs": (Ladder("block", ("-b", "size={n}"), _pow2(512, 1 << 17)),),
    "btrfs": (
        Ladder("sector", ("--sectorsize", "{n}"), _pow2(4096, 1 << 17)),
        Ladder("node (metadata)", ("--nodesize", "{n}"), _pow2(4096, 1 << 17), data=False),
    ),
}


@dataclass
class Climb:
    mountable: int | None = None  # largest size made and mounted
    accepted: int | None = None  # largest size mkfs accepted
    mount_refused: str = ""  # the first size mkfs made and the kernel would not mount
    mkfs_refused: str = ""  # what stopped the ladder

    def describe(self, label: str) -> str:
        if self.mountable is None:
            return f"{label}: none ({self.mount_refused or self.mkfs_refused})"
        parts = [f"{label} up to {numbers.exact_size(self.mountable)}"]
        if self.mount_refused:
            parts.append(self.mount_refused)
        if self.accepted is not None and self.accepted > self.mountable:
            parts.append(f"mkfs accepts up to {numbers.exact_size(self.accepted)}")
        if self.mkfs_refused:
            parts.append(self.mkfs_refused)
        return "; ".join(parts)


def climb(s: Scratch, ladder: Ladder, ev: Evidence) -> Climb:
    c = Climb()
    refusals = 0
    for n in ladder.sizes:
        opts = [o.format(n=n) for o in ladder.options]
        try:
            s.mkfs(opts)
        except Unsupported as exc:
            said = first_line(exc.message.removeprefix("mkfs refused: "), exc.message)
            ev.say(f"{ladder.label} {numbers.exact_size(n)}: mkfs refused: {said}")
            refusals += 1
            if c.accepted is not None or refusals >= 3:
                c.mkfs_refused = f"{numbers.exact_size(n)}: mkfs refused: {said}"
                return c
            continue
        refusals = 0
        c.accepted = n
        try:
            s.mount("")
        except Unsupported as exc:
            ev.say(f"{ladder.label} {numbers.exact_size(n)}: mkfs ok, {exc.message}")
            if not c.mount_refused:
                c.mount_refused = f"{numbers.exact_size(n)}: {exc.message}"
            continue
        s.umount()
        ev.say(f"{ladder.label} {numbers.exact_size(n)}: mkfs ok, mounted")
        c.mountable = n
    return c


def run(s: Scratch) -> dict[str, Result]:
    ladders = known_for(LADDERS, s, "size options")
    ev = Evidence()
    notes = []
    best: tuple[int, str] | None = None
    for ladder in ladders:
        c = climb(s, ladder, ev)
        notes.append(c.describe(ladder.label))
        if c.mountable is None:
            continue
        if ladder.data and (best is None or c.mountable > best[0]):
            best = (c.mountable, ladder.label)
    argv = " ".join(s.fs.mkfs)
    ev.lines.insert(0, f"mkfs: {argv} <options> on a {s.image_size >> 20} MiB image, then mount")
    if best is None:
        return {UNIT.name: ev.result("no", note=" | ".join(notes))}
    return {UNIT.name: ev.result("yes", best[0], "B", f"{best[1]} — " + " | ".join(notes))}


PROBE = Probe(
    name="cluster",
    features=(UNIT,),
    run=run,
    setup=Setup(key="cluster", managed=True),
)
