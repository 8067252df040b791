"""alloc: make one big file by one allocation method, time it to disk, count its fragments.

The classic allocation comparison: the same size written by fallocate(2), by
posix_fallocate(3), by mmap + memset, and by 4 KiB and 8 KiB write() calls. The runner
times `run` plus the sync and umount that put the data on disk; `inspect` reads the
file's layout (FIEMAP) after a fresh mount.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import mmap
import os
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from fsbench.system import fiemap
from fsbench.system.errors import TrialFailed, Unsupported
from fsbench.system.units import Bytes
from fsbench.workloads.base import CacheState, Flush, Params, Scale, TrialContext, Workload
from fsbench.workloads.metric import Better, Metric

Method = Literal["fallocate", "posix_fallocate", "mmap", "write-4k", "write-8k"]
METHODS: tuple[Method, ...] = ("fallocate", "posix_fallocate", "mmap", "write-4k", "write-8k")
# Methods that allocate without writing the data (posix_fallocate writes it on
# filesystems without fallocate(2): ext2, ext3).
ALLOCATE_ONLY = frozenset({"fallocate", "posix_fallocate"})

FILENAME = "alloc.dat"
_BUFFER = 1 << 20  # 1 MiB of random bytes, reused: data no compressing fs can shortcut
_MARGIN_MIN = 16 << 20  # fixed metadata/journal overhead that matters on small filesystems


class AllocParams(Params):
    size: Annotated[Bytes, Field(gt=0, description="size of the one file made")]
    method: Method = Field(
        description="how it is allocated: fallocate(2), posix_fallocate(3), mmap + memset, "
        "or write() in 4 KiB or 8 KiB chunks"
    )


def _libc_fallocate() -> Callable[[int, int, int, int], int]:
    # The raw syscall wrapper: unlike posix_fallocate, glibc's fallocate() never emulates,
    # so EOPNOTSUPP reaches us. fallocate64 takes a 64-bit off_t on every ABI.
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    func = getattr(libc, "fallocate64", None) or libc.fallocate
    func.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    func.restype = ctypes.c_int
    return func


_fallocate: Callable[[int, int, int, int], int] | None = None


def fallocate(fd: int, offset: int, length: int, mode: int = 0) -> None:
    """fallocate(2); OSError with the kernel's errno on failure."""
    global _fallocate
    if _fallocate is None:
        _fallocate = _libc_fallocate()
    while _fallocate(fd, mode, offset, length) != 0:
        err = ctypes.get_errno()
        if err != errno.EINTR:  # a signal may interrupt a long allocation: just retry
            raise OSError(err, os.strerror(err))


def _write_all(fd: int, data: memoryview) -> None:
    # os.write may write less than asked (signals, nearly full fs): finish the chunk.
    while data:
        n = os.write(fd, data)
        data = data[n:]


def _by_write(fd: int, size: int, chunk: int, buf: memoryview) -> None:
    done = 0
    while done < size:
        pos = done % len(buf)
        n = min(chunk, size - done, len(buf) - pos)
        _write_all(fd, buf[pos : pos + n])  # a memoryview slice: no copy
        done += n


def _by_mmap(fd: int, size: int, buf: memoryview) -> None:
    # A store into a mapping that the filesystem cannot back kills the process with
    # SIGBUS: refuse up front, as an ENOSPC error, when the space is plainly not there.
    vfs = os.fstatvfs(fd)
    if vfs.f_bavail * vfs.f_frsize < size:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC) + " (checked before mmap)")
    os.ftruncate(fd, size)
    with mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE) as mm:
        view = memoryview(mm)
        try:
            for pos in range(0, size, len(buf)):
                n = min(len(buf), size - pos)
                view[pos : pos + n] = buf[:n]  # memset-like: pages dirtied through the mapping
        finally:
            view.release()  # mmap.close() refuses while a view is exported
    # No msync: the runner's sync + umount writes the dirty pages, inside the timing.


class Alloc(Workload[AllocParams]):
    name = "alloc"
    summary = (
        "one big file by fallocate, posix_fallocate, mmap+memset, 4k or 8k writes: "
        "seconds to disk and fragments"
    )
    scale_defaults = {
        Scale.TINY: {"size": "64M", "method": list(METHODS)},
        Scale.QUICK: {"size": "1G", "method": list(METHODS)},
        Scale.FULL: {"size": "4G", "method": list(METHODS)},
    }
    cache = CacheState.COLD
    flush = Flush.SYNC_UMOUNT
    headline = ("seconds", "fragments", "extents")

    @classmethod
    def headline_for(cls, params: AllocParams, reported: Collection[str]) -> tuple[str, ...]:
        # An allocation that writes nothing takes milliseconds at any size (a timing of
        # the sync and umount around it, too short to compare): its layout is the result.
        headline = super().headline_for(params, reported)
        if params.method in ALLOCATE_ONLY:
            return tuple(name for name in headline if name != "seconds")
        return headline

    def required_bytes(self, params: AllocParams) -> int:
        return params.size + max(params.size // 10, _MARGIN_MIN)

    def run(self, ctx: TrialContext, params: AllocParams) -> list[Metric]:
        path = ctx.mountpoint / FILENAME
        # Random data made before the clock starts; it is not the filesystem's work.
        buf = memoryview(os.urandom(_BUFFER))
        t0 = time.monotonic()
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            self._fill(ctx, fd, path, params, buf)
        finally:
            os.close(fd)
        seconds = time.monotonic() - t0
        metrics = [Metric("write_seconds", seconds, "s", Better.LOWER)]
        if params.method not in ALLOCATE_ONLY:
            # What the application wrote: the runner turns it into write amplification.
            metrics.append(Metric("bytes_written", params.size, "B", Better.HIGHER))
        return metrics

    def _fill(
        self, ctx: TrialContext, fd: int, path: Path, params: AllocParams, buf: memoryview
    ) -> None:
        size, method = params.size, params.method
        try:
            if method == "fallocate":
                fallocate(fd, 0, size)
            elif method == "posix_fallocate":
                os.posix_fallocate(fd, 0, size)
            elif method == "mmap":
                _by_mmap(fd, size, buf)
            else:
                _by_write(fd, size, 4096 if method == "write-4k" else 8192, buf)
        except OSError as exc:
            text = exc.strerror or os.strerror(exc.errno or 0)
            if method == "fallocate" and exc.errno == errno.EOPNOTSUPP:
                raise Unsupported(
                    f"fallocate(2): {text} on {ctx.fs_type}",
                    detail=f"fallocate({path}, mode=0, offset=0, len={size}) -> "
                    f"{errno.errorcode.get(exc.errno, exc.errno)}",
                ) from exc
            done = os.fstat(fd).st_size
            raise OSError(
                exc.errno,
                f"alloc {method}: {text} after {done} of {size} bytes on {ctx.fs_type}",
                str(path),
            ) from exc

    def inspect(self, ctx: TrialContext, params: AllocParams) -> list[Metric]:
        path = ctx.mountpoint / FILENAME
        st = path.stat()
        if st.st_size != params.size:
            raise TrialFailed(f"{path} is {st.st_size} bytes after remount, not {params.size}")
        layout = fiemap.summary(path)
        return [
            Metric("fragments", layout.fragments, "count", Better.LOWER, resolution=1),
            Metric("extents", layout.extents, "count", Better.LOWER, resolution=1),
            # Informational: fallocate leaves unwritten extents, the write methods none.
            Metric("unwritten_extents", layout.unwritten, "count", Better.LOWER, resolution=1),
        ]
