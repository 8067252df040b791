"""fiemap.fragments() on hand-made extent lists: the merge rules of e2fsprogs `filefrag`."""

from __future__ import annotations

import pytest

from fsbench.system import fiemap
from fsbench.system.fiemap import (
    FIEMAP_EXTENT_DATA_INLINE,
    FIEMAP_EXTENT_DELALLOC,
    FIEMAP_EXTENT_LAST,
    FIEMAP_EXTENT_SHARED,
    FIEMAP_EXTENT_UNKNOWN,
    FIEMAP_EXTENT_UNWRITTEN,
    Extent,
)

K = 4096
M = 1 << 20


def ext(logical: int, physical: int, length: int, flags: int = 0) -> Extent:
    return Extent(logical, physical, length, flags)


def chain(*runs: tuple[int, int, int], last: bool = True) -> list[Extent]:
    """Extents from (logical, physical, length) triples; the final one flagged LAST."""
    out = [ext(*r) for r in runs]
    if last and out:
        e = out[-1]
        out[-1] = ext(e.logical, e.physical, e.length, e.flags | FIEMAP_EXTENT_LAST)
    return out


def test_abi_sizes() -> None:
    # struct fiemap is 32 bytes, struct fiemap_extent 56: the ioctl number encodes 32.
    assert fiemap._HEADER.size == 32
    assert fiemap._EXTENT.size == 56
    assert (fiemap.FS_IOC_FIEMAP >> 16) & 0x3FFF == 32


def test_no_extents_is_zero_fragments() -> None:
    assert fiemap.fragments([]) == 0


def test_single_extent() -> None:
    assert fiemap.fragments(chain((0, 100 * M, 8 * M))) == 1


def test_single_extent_after_a_hole() -> None:
    # First record not at offset 0 (a file that starts with a hole): still one fragment.
    assert fiemap.fragments(chain((5 * M, 100 * M, M))) == 1


def test_adjacent_records_merge() -> None:
    # ext4 splits a contiguous file into 128 MiB records: filefrag sees one run.
    runs = [(i * 128 * M, 1000 * M + i * 128 * M, 128 * M) for i in range(8)]
    exts = chain(*runs)
    assert fiemap.fragments(exts) == 1
    assert fiemap.layout(exts).extents == 8


def test_physical_gap_breaks() -> None:
    assert fiemap.fragments(chain((0, 100 * M, M), (M, 200 * M, M))) == 2


def test_physical_backwards_breaks() -> None:
    # Logically adjacent but placed before the previous record on disk.
    assert fiemap.fragments(chain((0, 100 * M, M), (M, 99 * M, M))) == 2


def test_each_break_counts() -> None:
    exts = chain((0, 10 * M, K), (K, 20 * M, K), (2 * K, 20 * M + K, K), (3 * K, 30 * M, K))
    assert fiemap.fragments(exts) == 3


def test_hole_with_physically_adjacent_data_merges() -> None:
    # filefrag's `expected_dense`: next record starts where the previous ended on disk,
    # even though a 1 MiB hole separates them in the file.
    exts = chain((0, 100 * M, 64 * K), (M + 64 * K, 100 * M + 64 * K, 64 * K))
    assert fiemap.fragments(exts) == 1


def test_hole_skipped_on_disk_too_merges() -> None:
    # filefrag's `expected`: the hole is mirrored on disk, the layout is "as if contiguous".
    exts = chain((0, 100 * M, 64 * K), (M, 101 * M, 64 * K))
    assert fiemap.fragments(exts) == 1


def test_hole_elsewhere_on_disk_breaks() -> None:
    exts = chain((0, 100 * M, 64 * K), (M, 300 * M, 64 * K))
    assert fiemap.fragments(exts) == 2


def test_sparse_file_mixed() -> None:
    exts = chain(
        (M, 50 * M, 64 * K),  # 1
        (5 * M, 50 * M + 64 * K, 64 * K),  # dense across the hole: merged
        (9 * M, 54 * M + 64 * K, 64 * K),  # 4 MiB on from the last start, on disk too: merged
        (10 * M, 7 * M, 64 * K),  # elsewhere: 2
    )
    assert fiemap.fragments(exts) == 2


def test_flags_do_not_split() -> None:
    # An unwritten record contiguous with a written one is the same run for filefrag.
    exts = [
        ext(0, 100 * M, M),
        ext(M, 101 * M, M, FIEMAP_EXTENT_UNWRITTEN),
        ext(2 * M, 102 * M, M, FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_LAST),
    ]
    assert fiemap.fragments(exts) == 1


def test_last_flag_is_not_needed_for_counting() -> None:
    runs = ((0, 100 * M, M), (M, 300 * M, M))
    assert fiemap.fragments(chain(*runs, last=False)) == fiemap.fragments(chain(*runs)) == 2


def test_delalloc_records_without_physical_address() -> None:
    # Unsynced ext4 data: physical 0. Two delalloc records with a hole between are two
    # fragments for filefrag, one record is one.
    flags = FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_UNKNOWN
    assert fiemap.fragments([ext(0, 0, M, flags | FIEMAP_EXTENT_LAST)]) == 1
    two = [ext(0, 0, M, flags), ext(4 * M, 0, M, flags | FIEMAP_EXTENT_LAST)]
    assert fiemap.fragments(two) == 2


def test_record_at_offset_zero_never_breaks() -> None:
    # filefrag only counts a break at a non-zero logical offset.
    assert fiemap.fragments(chain((0, 700 * M, M))) == 1


@pytest.mark.parametrize("n", [1, 2, 511, 512, 513, 2000])
def test_alternating_layout_counts_every_record(n: int) -> None:
    # Every record 1 MiB away from the previous one's end: nothing merges.
    exts = chain(*[(i * K, 10 * M + i * (M + K), K) for i in range(n)])
    assert fiemap.fragments(exts) == n


def test_layout_counts_flags() -> None:
    exts = [
        ext(0, 100 * M, M),
        ext(M, 101 * M, M, FIEMAP_EXTENT_UNWRITTEN),
        ext(2 * M, 300 * M, M, FIEMAP_EXTENT_SHARED),
        ext(3 * M, 0, 100, FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_LAST),
    ]
    lay = fiemap.layout(exts)
    assert lay == fiemap.FileLayout(
        extents=4,
        fragments=3,
        bytes_mapped=3 * M + 100,
        unwritten=1,
        shared=1,
        inline=1,
        delalloc=0,
    )
    assert exts[1].unwritten and not exts[0].unwritten
    assert exts[-1].last and not exts[0].last
