"""A file's physical layout through the FIEMAP ioctl, and its fragment count as
e2fsprogs' `filefrag` reports it ("N extents found").

FIEMAP records are what the filesystem's extent tree holds: ext4 caps an extent at
32768 blocks (32767 when unwritten), so a perfectly contiguous 1 GiB file is 8 records.
`fragments()` merges physically contiguous records the way filefrag does, which is the
number people quote as "extents" when they compare filesystems.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# _IOWR('f', 11, struct fiemap) from <linux/fs.h>.
FS_IOC_FIEMAP = 0xC020660B

# Request flags (fm_flags in).
FIEMAP_FLAG_SYNC = 0x0001  # write back dirty data first (resolves delayed allocation)
FIEMAP_FLAG_XATTR = 0x0002

# Extent flags (fe_flags out), from <linux/fiemap.h>.
FIEMAP_EXTENT_LAST = 0x0001
FIEMAP_EXTENT_UNKNOWN = 0x0002
FIEMAP_EXTENT_DELALLOC = 0x0004
FIEMAP_EXTENT_ENCODED = 0x0008
FIEMAP_EXTENT_DATA_ENCRYPTED = 0x0080
FIEMAP_EXTENT_NOT_ALIGNED = 0x0100
FIEMAP_EXTENT_DATA_INLINE = 0x0200
FIEMAP_EXTENT_DATA_TAIL = 0x0400
FIEMAP_EXTENT_UNWRITTEN = 0x0800
FIEMAP_EXTENT_MERGED = 0x1000
FIEMAP_EXTENT_SHARED = 0x2000

# struct fiemap: fm_start, fm_length, fm_flags, fm_mapped_extents, fm_extent_count, reserved.
_HEADER = struct.Struct("=QQIIII")
# struct fiemap_extent: logical, physical, length, reserved64[2], flags, reserved[3].
_EXTENT = struct.Struct("=QQQ2QI3I")
assert _HEADER.size == 32 and _EXTENT.size == 56  # the kernel ABI; catches a packing slip

BATCH = 512  # extents per ioctl call: 28 KiB buffer, few calls even for badly fragmented files
_WHOLE_FILE = 0xFFFF_FFFF_FFFF_FFFF  # fm_length ~0: "to the end", as filefrag asks


@dataclass(frozen=True)
class Extent:
    logical: int  # byte offset in the file
    physical: int  # byte offset on the device (0 when UNKNOWN/DELALLOC)
    length: int  # bytes
    flags: int

    @property
    def unwritten(self) -> bool:
        return bool(self.flags & FIEMAP_EXTENT_UNWRITTEN)

    @property
    def last(self) -> bool:
        return bool(self.flags & FIEMAP_EXTENT_LAST)


@dataclass(frozen=True)
class FileLayout:
    extents: int  # raw FIEMAP records
    fragments: int  # physically contiguous runs, as filefrag counts them
    bytes_mapped: int  # sum of the records' lengths
    unwritten: int  # records flagged UNWRITTEN (fallocated, never written)
    shared: int  # records flagged SHARED (reflinks, snapshots)
    inline: int  # records flagged DATA_INLINE (data inside the inode/metadata)
    delalloc: int  # records flagged DELALLOC (not yet allocated: the file was not synced)


def extents_fd(fd: int, *, sync: bool = False, batch: int = BATCH) -> list[Extent]:
    """All FIEMAP records of an open file. OSError (ENOTTY/EOPNOTSUPP) when the
    filesystem has no FIEMAP."""
    if batch < 1:
        raise ValueError(f"batch must be >= 1, not {batch}")
    buf = bytearray(_HEADER.size + batch * _EXTENT.size)
    flags = FIEMAP_FLAG_SYNC if sync else 0
    out: list[Extent] = []
    start = 0
    while True:
        _HEADER.pack_into(buf, 0, start, _WHOLE_FILE - start, flags, 0, batch, 0)
        # A mutable buffer is passed by address and filled in place (any size is fine).
        fcntl.ioctl(fd, FS_IOC_FIEMAP, buf, True)
        mapped = _HEADER.unpack_from(buf, 0)[3]
        for i in range(mapped):
            logical, physical, length, _r0, _r1, eflags, *_ = _EXTENT.unpack_from(
                buf, _HEADER.size + i * _EXTENT.size
            )
            out.append(Extent(logical, physical, length, eflags))
        # Stop at the LAST flag (filefrag's rule), on an empty answer, and on a short
        # batch: the range asked runs to the end, so fewer than asked means no more.
        if mapped == 0 or out[-1].last or mapped < batch:
            return out
        nxt = out[-1].logical + out[-1].length
        if nxt <= start:  # a zero-length record would loop forever
            return out
        start = nxt


FIBMAP = 1  # _IO(0x00, 1): logical block -> physical block, one at a time (root only)
FIGETBSZ = 2  # _IO(0x00, 2): the filesystem's block size
_NO_FIEMAP = (errno.EOPNOTSUPP, errno.ENOTTY, errno.EINVAL)


def extents_fibmap(fd: int) -> list[Extent]:
    """The file's mapping from FIBMAP, for filesystems without FIEMAP (jfs, reiserfs):
    consecutive blocks merged into records, holes (block 0) skipped, no flags known."""
    bsz = struct.unpack("i", fcntl.ioctl(fd, FIGETBSZ, struct.pack("i", 0)))[0]
    size = os.fstat(fd).st_size
    out: list[Extent] = []
    for block in range((size + bsz - 1) // bsz):
        phys = struct.unpack("i", fcntl.ioctl(fd, FIBMAP, struct.pack("i", block)))[0]
        if phys == 0:
            continue  # a hole
        logical, physical = block * bsz, phys * bsz
        last = out[-1] if out else None
        if (
            last
            and last.logical + last.length == logical
            and last.physical + last.length == (physical)
        ):
            out[-1] = Extent(last.logical, last.physical, last.length + bsz, 0)
        else:
            out.append(Extent(logical, physical, bsz, 0))
    if out:
        out[-1] = Extent(out[-1].logical, out[-1].physical, out[-1].length, FIEMAP_EXTENT_LAST)
    return out


def extents(path: Path | str, *, sync: bool = False, batch: int = BATCH) -> list[Extent]:
    """All FIEMAP records of a file, in logical order; from FIBMAP where the filesystem has
    no FIEMAP (jfs, reiserfs). OSError if neither works."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    try:
        try:
            return extents_fd(fd, sync=sync, batch=batch)
        except OSError as exc:
            if exc.errno not in _NO_FIEMAP:
                raise
            if sync:
                os.fsync(fd)
            try:
                return extents_fibmap(fd)
            except OSError:
                raise exc from None  # neither: FIEMAP's own error says more (tmpfs)
    except OSError as exc:
        if exc.filename is None:
            raise OSError(exc.errno, f"FIEMAP: {exc.strerror}", str(path)) from exc
        raise
    finally:
        os.close(fd)


def fragments(exts: Sequence[Extent]) -> int:
    """Fragments exactly as e2fsprogs 1.47 `filefrag` counts "N extents found".

    filefrag (misc/filefrag.c, filefrag_fiemap) starts a new fragment at a record unless
    - its logical offset is 0, or
    - it starts where the previous record ended physically (`expected_dense`): merged even
      across a hole, and whatever the flags (unwritten next to written merges), or
    - it sits where the previous one would have put it had the file been laid out
      contiguously (`expected` = prev.physical + (logical - prev.logical)): a hole that
      skips the same distance on disk does not count as a break.
    The first record is always one fragment; a file with no records has 0.
    """
    count = 0
    prev_logical = prev_physical = prev_length = 0  # filefrag starts from a zeroed record
    for e in exts:
        expected_dense = prev_physical + prev_length
        expected = prev_physical + e.logical - prev_logical
        if e.logical != 0 and e.physical not in (expected, expected_dense):
            count += 1
        elif count == 0:
            count = 1
        prev_logical, prev_physical, prev_length = e.logical, e.physical, e.length
    return count


def layout(exts: Sequence[Extent]) -> FileLayout:
    def flagged(flag: int) -> int:
        return sum(1 for e in exts if e.flags & flag)

    return FileLayout(
        extents=len(exts),
        fragments=fragments(exts),
        bytes_mapped=sum(e.length for e in exts),
        unwritten=flagged(FIEMAP_EXTENT_UNWRITTEN),
        shared=flagged(FIEMAP_EXTENT_SHARED),
        inline=flagged(FIEMAP_EXTENT_DATA_INLINE),
        delalloc=flagged(FIEMAP_EXTENT_DELALLOC),
    )


def summary(path: Path | str, *, sync: bool = False) -> FileLayout:
    """Layout of one file. For a tree, call it per regular file and average the fields."""
    return layout(extents(path, sync=sync))


def gaps(exts: Sequence[Extent]) -> list[int]:
    """Physical distances (bytes) jumped between the fragments of a file: where a record
    breaks the run by filefrag's rule, |its start - where the previous record ended|."""
    out: list[int] = []
    prev: Extent | None = None
    for e in exts:
        if prev is not None and e.logical != 0:
            dense = prev.physical + prev.length
            expected = prev.physical + e.logical - prev.logical
            if e.physical not in (dense, expected):
                out.append(abs(e.physical - dense))
        prev = e
    return out


@dataclass(frozen=True)
class TreeLayout:
    """Fragmentation of every regular file under a directory."""

    files: int
    mean_fragments: float  # per file with data
    mean_extents: float  # FIEMAP records per file with data
    pct_fragmented: float  # % of files with data in more than one fragment
    mean_gap_bytes: float  # mean jump between fragments, over multi-fragment files


def regular_files_by_inode(root: Path | str) -> list[str]:
    """Every regular file under root (symlinks not followed), in inode-number order: on a
    cold cache the inode tables are then read in order, ~20% faster than directory order
    over a kernel tree (3.4 s vs 4.3 s here)."""
    found: list[tuple[int, str]] = []
    stack = [os.fspath(root)]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    found.append((entry.inode(), entry.path))
    found.sort()
    return [path for _ino, path in found]


def tree_layout(root: Path | str) -> TreeLayout:
    """FIEMAP over a tree (files without data blocks, e.g. empty, are not counted)."""
    files = frags = exts_total = fragmented = 0
    all_gaps: list[int] = []
    for path in regular_files_by_inode(root):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue  # gone or unreadable: nothing to map
        try:
            exts = extents_fd(fd)
        finally:
            os.close(fd)
        if not exts:
            continue
        files += 1
        n = fragments(exts)
        frags += n
        exts_total += len(exts)
        if n > 1:
            fragmented += 1
            all_gaps += gaps(exts)
    if files == 0:
        return TreeLayout(0, 0.0, 0.0, 0.0, 0.0)
    return TreeLayout(
        files=files,
        mean_fragments=frags / files,
        mean_extents=exts_total / files,
        pct_fragmented=100.0 * fragmented / files,
        mean_gap_bytes=(sum(all_gaps) / len(all_gaps)) if all_gaps else 0.0,
    )
