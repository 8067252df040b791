"""How old a filesystem is, measured: Conway's layout score of a tree, the share of its
files in more than one piece, and the fragmentation of the free space where the
filesystem's tools report it.

The layout score (Conway et al., FAST'17) follows a recursive reader: over every file of
the tree in the order `grep -r` or `tar` visit them (each directory's entries as the
directory lists them, depth first), the blocks in logical order, it is the fraction of
blocks that lie physically right after the block read before them. 1.0 is a perfectly
sequential tree; data stored inside metadata (inline) or not placed yet has no block and
is left out.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from fsbench.system import fiemap, filesystems, proc

_NO_BLOCK = (
    fiemap.FIEMAP_EXTENT_DATA_INLINE | fiemap.FIEMAP_EXTENT_UNKNOWN | fiemap.FIEMAP_EXTENT_DELALLOC
)


@dataclass(frozen=True)
class Layout:
    score: float | None  # None: no block to score
    blocks: int
    files: int
    fragmented: int  # files with data in more than one fragment (as filefrag counts)

    @property
    def fragmented_pct(self) -> float:
        return 100.0 * self.fragmented / self.files if self.files else 0.0


def reader_order(root: Path) -> Iterator[Path]:
    """Regular files under `root` in the order a recursive reader visits them; symbolic
    links are not followed."""
    with os.scandir(root) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                yield from reader_order(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                yield Path(entry.path)


def layout(root: Path, block: int) -> Layout:
    adjacent = blocks = files = fragmented = 0
    next_physical: int | None = None  # where the block after the last one read would be
    for path in reader_order(root):
        exts = fiemap.extents(path)
        files += 1
        if fiemap.fragments(exts) > 1:
            fragmented += 1
        for e in exts:
            if e.flags & _NO_BLOCK or e.length == 0:
                continue
            n = -(-e.length // block)
            adjacent += n - 1 + (1 if e.physical == next_physical else 0)
            blocks += n
            next_physical = e.physical + n * block
    return Layout(adjacent / blocks if blocks else None, blocks, files, fragmented)


@dataclass(frozen=True)
class FreeSpace:
    extents: int  # free extents
    free_bytes: int

    @property
    def mean_extent_bytes(self) -> float:
        return self.free_bytes / self.extents if self.extents else 0.0


def _e2freefrag(text: str, block: int) -> FreeSpace | None:
    free = re.search(r"^Free blocks:\s*(\d+)", text, re.M)
    count = re.search(r"^Num\. free extent:\s*(\d+)", text, re.M)
    if not free or not count:
        return None
    return FreeSpace(int(count.group(1)), int(free.group(1)) * block)


def _xfs_db(text: str, block: int) -> FreeSpace | None:
    count = re.search(r"total free extents\s+(\d+)", text)
    free = re.search(r"total free blocks\s+(\d+)", text)
    if not free or not count:
        return None
    return FreeSpace(int(count.group(1)), int(free.group(1)) * block)


PARSERS = {"e2freefrag": _e2freefrag, "xfs_db": _xfs_db}


def free_space(fs: filesystems.FsType, device: str, block: int) -> FreeSpace | None:
    """The free space's fragmentation by the filesystem's own tool; None where it has
    none (btrfs) or the tool failed."""
    if not fs.freefrag:
        return None
    res = proc.run([*fs.freefrag, device], timeout=600)
    return PARSERS[fs.freefrag_format](res.stdout, block) if res.ok else None
