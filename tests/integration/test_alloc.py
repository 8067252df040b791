"""fiemap against e2fsprogs `filefrag` on real files, and the alloc workload on every
available filesystem. Real loop devices and filesystems: nothing mocked."""

from __future__ import annotations

import errno
import mmap
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import MountFactory, available_fs
from fsbench.system import fiemap
from fsbench.workloads import get
from fsbench.workloads.alloc import FILENAME, METHODS, Alloc, AllocParams
from fsbench.workloads.base import Scale, fsync_path
from tests.runcell import Bench, flags, loop_bench, metrics

FS = available_fs()
K = 4096
M = 1 << 20
# ext2/ext3 (no extents, mounted by the ext4 driver): fallocate(2) is EOPNOTSUPP.
NO_FALLOCATE = {"ext2", "ext3"}

needs_filefrag = pytest.mark.skipif(shutil.which("filefrag") is None, reason="no filefrag")


def filefrag_count(path: Path) -> int:
    out = subprocess.run(
        ["filefrag", str(path)], check=True, capture_output=True, text=True
    ).stdout.strip()
    m = re.search(r": (\d+) extents? found", out)
    assert m, f"unexpected filefrag output: {out!r}"
    return int(m.group(1))


def write_file(path: Path, pieces: list[tuple[int, int]], size: int | None = None) -> None:
    """Write (offset, length) pieces of random data, then set the size (holes stay holes)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for off, length in pieces:
            os.pwrite(fd, os.urandom(length), off)
        if size is not None:
            os.ftruncate(fd, size)
    finally:
        os.close(fd)


def write_direct(path: Path, length: int) -> None:
    """One O_DIRECT write: the filesystem allocates the whole range in that call, so no
    background writeback (another test's vm.dirty_ratio=1, say) can split it."""
    buf = mmap.mmap(-1, length)  # page-aligned, as O_DIRECT asks
    try:
        buf.write(os.urandom(length))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o644)
        try:
            assert os.pwrite(fd, buf, 0) == length
        finally:
            os.close(fd)
    finally:
        buf.close()


def interleaved(a: Path, b: Path, chunks: int) -> None:
    """Two files growing 4 KiB at a time, each chunk forced to disk: the allocator hands out
    neighbouring blocks to both, so each file ends up in many pieces."""
    data = os.urandom(K)
    fds = [os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644) for p in (a, b)]
    try:
        for _ in range(chunks):
            for fd in fds:
                os.write(fd, data)
                os.fsync(fd)
    finally:
        for fd in fds:
            os.close(fd)


# -- fiemap vs filefrag ----------------------------------------------------------------


@pytest.mark.integration
@needs_filefrag
@pytest.mark.parametrize("fs_name", FS)
def test_fragments_match_filefrag(make_fs: MountFactory, fs_name: str) -> None:
    mnt = make_fs(fs_name)
    files: dict[str, Path] = {
        n: mnt / n
        for n in (
            "contiguous",
            "empty",
            "tiny",
            "sparse",
            "leading-hole",
            "holes-filled",
            "frag-a",
            "frag-b",
        )
    }
    write_direct(files["contiguous"], 8 * M)
    write_file(files["empty"], [])
    write_file(files["tiny"], [(0, 100)])
    write_file(files["sparse"], [(0, 64 * 1024), (M, 64 * 1024), (5 * M, 64 * 1024)], 16 * M)
    write_file(files["leading-hole"], [(3 * M, 128 * 1024)], 8 * M)
    # Every other 64 KiB first, the gaps later: allocated at two moments.
    hf = files["holes-filled"]
    write_file(hf, [(i * 65536, 65536) for i in range(0, 64, 2)])
    fsync_path(hf)
    fd = os.open(hf, os.O_WRONLY)
    try:
        for i in range(1, 64, 2):
            os.pwrite(fd, os.urandom(65536), i * 65536)
    finally:
        os.close(fd)
    interleaved(files["frag-a"], files["frag-b"], 128)
    if fs_name not in NO_FALLOCATE:
        # Unwritten extents, and a fallocated file written in its middle: mixed flags.
        for name, written in (("prealloc", None), ("prealloc-part", (2 * M, M))):
            p = files[name] = mnt / name
            fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                os.posix_fallocate(fd, 0, 8 * M)
                if written:
                    os.pwrite(fd, os.urandom(written[1]), written[0])
            finally:
                os.close(fd)
    # filefrag does not ask FIEMAP to sync: make delayed allocation happen first.
    os.sync()

    for name, path in files.items():
        exts = fiemap.extents(path)
        lay = fiemap.layout(exts)
        assert lay.fragments == filefrag_count(path), (fs_name, name, exts)
        assert lay.extents == len(exts) >= lay.fragments
        # Batching: one record per ioctl call gives the same mapping. (Not always the same
        # records: ext2/3 block maps are reported from a cache that a drop_caches elsewhere
        # on the machine rebuilds with other record boundaries.)
        assert _mapping(fiemap.extents(path, batch=1)) == _mapping(exts), (fs_name, name)

    assert fiemap.summary(files["empty"]).fragments == 0
    contiguous = fiemap.summary(files["contiguous"]).fragments
    if fs_name in NO_FALLOCATE:
        # Block-mapped files: the indirect blocks sit between data runs (filefrag agrees).
        assert 1 <= contiguous <= 8
    else:
        # One direct write of 8 MiB: one fragment; two at most where the allocator had to
        # split it (a buffered write gave btrfs 6 in CI beside the other worker's writeback).
        # The point is filefrag's count above.
        assert 1 <= contiguous <= 2
    assert fiemap.summary(files["contiguous"]).bytes_mapped == 8 * M
    for name in ("frag-a", "frag-b"):
        lay = fiemap.summary(files[name])
        assert lay.fragments > 1, (fs_name, name, lay)
        assert lay.extents >= lay.fragments
    if fs_name not in NO_FALLOCATE:
        pre = fiemap.summary(files["prealloc"])
        assert pre.unwritten == pre.extents >= 1
        part = fiemap.extents(files["prealloc-part"])
        assert any(e.unwritten for e in part) and not all(e.unwritten for e in part)


@pytest.mark.integration
def test_extents_unsupported_raises_oserror(tmp_path: Path) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no /dev/shm")
    path = shm / f"fsbench-fiemap-{os.getpid()}"
    path.write_bytes(b"x")
    try:
        with pytest.raises(OSError) as info:
            fiemap.extents(path)
        assert info.value.errno in (errno.EOPNOTSUPP, errno.ENOTTY)
        assert info.value.filename == str(path)
    finally:
        path.unlink()


# -- the alloc workload ----------------------------------------------------------------


def test_registry_and_params() -> None:
    assert get("alloc") is Alloc
    for scale, size in ((Scale.TINY, 64 * M), (Scale.QUICK, 1 << 30), (Scale.FULL, 4 << 30)):
        d = Alloc.defaults(scale)
        assert d["method"] == list(METHODS)
        p = AllocParams(size=d["size"], method="mmap")
        assert p.size == size
        assert p.size < Alloc().required_bytes(p) <= p.size + max(p.size // 10, 16 * M)
    assert Alloc.has_inspect()
    with pytest.raises(ValueError):
        AllocParams(size=0, method="mmap")
    with pytest.raises(ValueError):
        AllocParams(size="1M", method="write-16k")


@pytest.fixture(scope="module")
def bench() -> Iterator[Bench]:
    yield from loop_bench(1 << 30)


@pytest.mark.integration
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("fs_name", FS)
def test_alloc_run_and_inspect(bench: Bench, fs_name: str, method: str) -> None:
    """Through the runner: the timed write, sync + umount, then FIEMAP after a remount."""
    (record,) = bench.trial(fs_name, "alloc", size="16M", method=method)
    if method == "fallocate" and fs_name in NO_FALLOCATE:
        assert record.status == "unsupported", record.message
        assert fs_name in record.message
        assert os.strerror(errno.EOPNOTSUPP) in record.message
        return
    assert record.status == "ok", f"{record.message}\n{record.detail}"
    m = metrics(record)
    written = m.get("bytes_written")
    if method in ("mmap", "write-4k", "write-8k"):
        assert written is not None and written.value == 16 * M
    else:
        assert written is None
    timing = m["write_seconds"]
    assert (timing.unit, timing.better) == ("s", "lower") and timing.value > 0
    # The runner's seconds: the write plus the sync and umount that put it on disk.
    assert m["seconds"].value >= timing.value and m["flush_seconds"].value > 0

    fragments, extents, unwritten = m["fragments"], m["extents"], m["unwritten_extents"]
    assert (fragments.unit, fragments.better, fragments.resolution) == ("count", "lower", 1)
    assert extents.unit == "count"
    assert fragments.value >= 1
    assert extents.value >= fragments.value
    with bench.mounted(fs_name) as mnt:
        path = mnt / FILENAME
        st = path.stat()
        assert st.st_size == 16 * M
        assert st.st_blocks * 512 >= 16 * M  # every block allocated, no holes
        if shutil.which("filefrag"):
            assert fragments.value == filefrag_count(path)

    real_fallocate = method == "fallocate" or (
        method == "posix_fallocate" and fs_name not in NO_FALLOCATE
    )
    if real_fallocate:
        # Allocated, never written: every extent is unwritten.
        assert unwritten.value == extents.value
    else:
        # Written data (posix_fallocate on ext2/ext3 is glibc writing a byte per block).
        assert unwritten.value == 0
    assert flags(record) == {}


@pytest.mark.integration
@pytest.mark.parametrize("method", ["write-8k", "mmap", "fallocate"])
def test_alloc_enospc_is_a_failed_trial_in_the_kernels_words(bench: Bench, method: str) -> None:
    """A file larger than the filesystem: the trial fails with ENOSPC named by the method
    and the filesystem, whichever way the method allocates."""
    if "btrfs" not in FS:
        pytest.skip("btrfs unavailable (used for its size option: a 128 MiB filesystem)")
    (record,) = bench.trial("btrfs", "alloc", mkfs=("-b", "128M"), size="256M", method=method)
    assert record.status == "failed", record.message
    assert os.strerror(errno.ENOSPC) in record.message, record.message
    assert f"alloc {method}" in record.message and "btrfs" in record.message


def _mapping(exts: list[fiemap.Extent]) -> list[tuple[int, int, int]]:
    """Records merged where both logical and physical ranges continue: the file's mapping,
    independent of how the kernel splits it into records."""
    runs: list[list[int]] = []
    for e in exts:
        if (
            runs
            and runs[-1][0] + runs[-1][2] == e.logical
            and runs[-1][1] + runs[-1][2] == (e.physical)
        ):
            runs[-1][2] += e.length
        else:
            runs.append([e.logical, e.physical, e.length])
    return [(a, b, c) for a, b, c in runs]


@pytest.mark.parametrize("fs_name", [f for f in available_fs() if f in ("ext2", "ext4", "xfs")])
def test_fibmap_fallback_gives_the_fiemap_mapping(make_fs: MountFactory, fs_name: str) -> None:
    """jfs and reiserfs have no FIEMAP: FIBMAP must describe the same layout."""
    mnt = make_fs(fs_name)
    path = mnt / "f"
    path.write_bytes(os.urandom(12 << 20))
    os.sync()
    fd = os.open(path, os.O_RDONLY)
    try:
        from_fiemap = fiemap.extents_fd(fd)
        from_fibmap = fiemap.extents_fibmap(fd)
    finally:
        os.close(fd)
    assert _mapping(from_fibmap) == _mapping(from_fiemap)
    assert fiemap.fragments(from_fibmap) == fiemap.fragments(from_fiemap)
