"""Source trees for the kernel-tree workloads: the real Linux source from Debian's
`linux-source` package, decompressed once into a cache outside the target (so xz's CPU
time is not charged to the filesystem), or a deterministic synthetic tree with
kernel-like counts of directories, files and sizes where no tarball exists."""

from __future__ import annotations

import ctypes
import fcntl
import json
import math
import mmap
import os
import random
import re
import tarfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from fsbench.system import cache as system
from fsbench.system import proc
from fsbench.system.errors import TrialFailed, Unsupported

KERNEL_TARBALLS = Path("/usr/src")
SYNTHETIC_SEED = 2009  # the year of the classic kernel-tree comparisons
# Linux 6.1: ~80k files in ~5.3k directories, ~1.2 GB; median file ~5 KB.
KERNEL_LIKE_FILES = 75_000
FILES_PER_DIR = 15
SIZE_MEDIAN = 5000
SIZE_SIGMA = 1.3
SIZE_MAX = 4 << 20
FIXED_MTIME = 1_262_304_000  # 2010-01-01: deterministic archives


@dataclass(frozen=True)
class SourceTree:
    kind: str  # "linux-source" | "synthetic"
    name: str  # "linux-source-6.1" | "synthetic-2009-3000"
    tar: str  # uncompressed tar in the cache
    compressed: str | None  # the original .tar.xz (for decompress = "inline")
    top: str  # top-level directory inside the archive
    files: int
    dirs: int
    bytes: int  # regular file data

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _version_key(path: Path) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", path.name)]


def find_kernel_tarball(root: Path = KERNEL_TARBALLS) -> Path | None:
    found = sorted(root.glob("linux-source-*.tar.xz"), key=_version_key)
    return found[-1] if found else None


@contextmanager
def _locked(cache_dir: Path) -> Iterator[None]:
    """One builder at a time per cache (two runs may share /var/tmp/fsbench)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    with (cache_dir / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _manifest_path(tar: Path) -> Path:
    return tar.with_suffix(".json")


def _load_manifest(tar: Path, key: dict[str, object]) -> SourceTree | None:
    path = _manifest_path(tar)
    if not tar.exists() or not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if data.get("key") != key or data.get("tar_size") != tar.stat().st_size:
        return None
    tree: dict[str, object] = data["tree"]
    return SourceTree(**tree)  # type: ignore[arg-type]


def _save_manifest(tree: SourceTree, key: dict[str, object]) -> None:
    tar = Path(tree.tar)
    tmp = _manifest_path(tar).with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"key": key, "tar_size": tar.stat().st_size, "tree": tree.as_dict()}))
    tmp.rename(_manifest_path(tar))


def _count(tar: Path) -> tuple[str, int, int, int]:
    """Top directory, files, dirs, data bytes of an uncompressed tar."""
    files = dirs = size = 0
    tops: set[str] = set()
    with tarfile.open(tar, "r:") as archive:
        for member in archive:
            tops.add(member.name.split("/", 1)[0])
            if member.isfile():
                files += 1
                size += member.size
            elif member.isdir():
                dirs += 1
    top = sorted(tops)[0] if len(tops) == 1 else ""
    return top, files, dirs, size


def kernel_source(cache_dir: Path, log: Callable[[str], None] | None = None) -> SourceTree:
    """Debian's Linux source as an uncompressed tar in `cache_dir`, decompressed once (and
    again only when the tarball changes or the tar is not the size it was made at); `log`
    hears when it is decompressed."""
    tarball = find_kernel_tarball()
    if tarball is None:
        raise Unsupported(
            "no /usr/src/linux-source-*.tar.xz: apt-get install linux-source "
            "(or set source=synthetic)"
        )
    st = tarball.stat()
    key: dict[str, object] = {"source": str(tarball), "size": st.st_size, "mtime": st.st_mtime}
    tar = cache_dir / (tarball.name.removesuffix(".xz"))
    with _locked(cache_dir):
        cached = _load_manifest(tar, key)
        if cached:
            return cached
        if log is not None:
            log(f"xz -dc {tarball} -> {tar}")
        part = tar.with_suffix(".tar.part")
        with part.open("wb") as out:
            res = proc.run_to_file(["xz", "-dc", str(tarball)], out, timeout=1800)
        if not res.ok:
            part.unlink(missing_ok=True)
            raise TrialFailed(f"xz -dc {tarball} failed: {res.output}")
        part.rename(tar)
        top, files, dirs, size = _count(tar)
        tree = SourceTree(
            "linux-source",
            tarball.name.removesuffix(".tar.xz"),
            str(tar),
            str(tarball),
            top,
            files,
            dirs,
            size,
        )
        _save_manifest(tree, key)
        return tree


def synthetic_source(cache_dir: Path, files: int, seed: int = SYNTHETIC_SEED) -> SourceTree:
    """A deterministic kernel-like tree: the same seed and count give the same archive."""
    name = f"synthetic-{seed}-{files}"
    key: dict[str, object] = {"generator": 1, "seed": seed, "files": files}
    tar = cache_dir / f"{name}.tar"
    with _locked(cache_dir):
        cached = _load_manifest(tar, key)
        if cached:
            return cached
        part = tar.with_suffix(".tar.part")
        dirs, size = _write_synthetic(part, name, files, seed)
        part.rename(tar)
        tree = SourceTree("synthetic", name, str(tar), None, name, files, dirs, size)
        _save_manifest(tree, key)
        return tree


def synthetic_layout(files: int, seed: int) -> tuple[list[str], list[tuple[str, int]]]:
    """Directories (parents first) and (file path, size): a tree ~6 levels deep with
    ~15 files per directory and log-normal sizes, like a kernel source tree."""
    rng = random.Random(seed)
    n_dirs = max(1, math.ceil(files / FILES_PER_DIR))
    dirs = [""]
    depth = {"": 0}
    for i in range(1, n_dirs):
        parent = rng.choice(dirs[-64:] if rng.random() < 0.7 else dirs)
        if depth[parent] >= 6:
            parent = ""
        path = f"{parent}/d{i:05d}" if parent else f"d{i:05d}"
        dirs.append(path)
        depth[path] = depth[parent] + 1
    out: list[tuple[str, int]] = []
    for j in range(files):
        d = rng.choice(dirs)
        suffix = ".c" if rng.random() < 0.55 else ".h" if rng.random() < 0.7 else ".txt"
        size = min(SIZE_MAX, int(rng.lognormvariate(math.log(SIZE_MEDIAN), SIZE_SIGMA)))
        out.append((f"{d}/f{j:06d}{suffix}" if d else f"f{j:06d}{suffix}", size))
    return dirs[1:], out


def _write_synthetic(path: Path, top: str, files: int, seed: int) -> tuple[int, int]:
    dirs, entries = synthetic_layout(files, seed)
    data_rng = random.Random(seed + 1)
    total = 0
    with tarfile.open(path, "w:", format=tarfile.GNU_FORMAT) as archive:
        for d in ["", *dirs]:
            info = tarfile.TarInfo(f"{top}/{d}".rstrip("/"))
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, FIXED_MTIME
            archive.addfile(info)
        for name, size in entries:
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mode, info.mtime = size, 0o644, FIXED_MTIME
            archive.addfile(info, _Bytes(data_rng.randbytes(size)))
            total += size
    return len(dirs) + 1, total


class _Bytes:
    """A minimal file object over bytes for tarfile.addfile (no copy into BytesIO)."""

    def __init__(self, data: bytes) -> None:
        self._view = memoryview(data)
        self._pos = 0

    def read(self, n: int = -1) -> bytes:
        end = len(self._view) if n < 0 else min(len(self._view), self._pos + n)
        chunk = self._view[self._pos : end].tobytes()
        self._pos = end
        return chunk


def get_source(cache_dir: Path, source: str, files: int) -> SourceTree:
    """`auto`: the kernel tarball if installed, else synthetic; or exactly what is asked."""
    if source == "synthetic":
        return synthetic_source(cache_dir, files)
    if source == "linux-source" or find_kernel_tarball() is not None:
        return kernel_source(cache_dir)
    return synthetic_source(cache_dir, files)


def warm(path: Path | str) -> None:
    """Read a file into the page cache (the source of an untar is not what is measured),
    and keep it there for this process when memory is plentiful: every cold step drops
    the caches, and re-reading a 1.3 GB archive for each trial cost ~4 s of a run's time."""
    with open(path, "rb", buffering=0) as f:
        buf = bytearray(1 << 20)
        while f.readinto(buf):
            pass
    _pin(Path(path))


# Pinned archives: path -> (address, length). Mapped pages survive drop_caches (the kernel
# skips mapped pages) and locked ones survive memory pressure; the process's exit releases them.
_pinned: dict[Path, tuple[int, int]] = {}
PIN_MAX_FRACTION = 0.25  # of MemAvailable: never squeeze the filesystem under test


def _pin(path: Path) -> bool:
    if path in _pinned:
        return True
    size = path.stat().st_size
    if size == 0 or size > PIN_MAX_FRACTION * _mem_available():
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    ]
    libc.mlock.argtypes = libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED | mmap.MAP_POPULATE, fd, 0)
    finally:
        os.close(fd)  # the mapping keeps the file
    if addr in (None, ctypes.c_void_p(-1).value):
        return False
    if libc.mlock(ctypes.c_void_p(addr), size) != 0:  # no CAP_IPC_LOCK: just re-read it
        libc.munmap(ctypes.c_void_p(addr), size)
        return False
    _pinned[path] = (addr, size)
    return True


def unpin_all() -> None:
    """Let the pinned archives go (the end of a run; tests)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    for addr, size in _pinned.values():
        libc.munmap(ctypes.c_void_p(addr), size)
    _pinned.clear()


def pinned() -> list[Path]:
    return list(_pinned)


def _mem_available() -> int:
    return system.kib_field(Path("/proc/meminfo"), "MemAvailable")
