"""The fio profile contract: a profile is a record (`Profile`) of the fio runs it makes,
as options (data), timed and untimed, and what the fio workload and the runner need to
know of it. The options every built-in profile shares, and where its files go, are here
too (builtin.py makes the shipped profiles of them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fsbench.workloads.fio.tool import Where

MIB = 1 << 20
# Generous bounds so that a hung fio becomes a failed trial, not a hung run.
_SLOWEST_BYTES_PER_S = 4 * MIB
TIMEOUT_SLACK = 600.0

# Options every built-in profile shares.
COMMON: tuple[tuple[str, str], ...] = (
    ("ioengine", "psync"),
    # Threads, not processes: a timeout that kills fio leaves no writer behind on the mount.
    ("thread", "1"),
    ("group_reporting", "1"),
    # fio preallocates its files by default (fallocate=native): a write test would then
    # measure writes into already-allocated space, not the filesystem's allocator. Files
    # are written as applications write them, allocated block by block.
    ("fallocate", "none"),
)
_FILE_FORMAT = "fsbench-fio.$jobnum"  # one file per thread, same names in every phase
_SHARED_FILE = "fsbench-fio.shared"


@dataclass(frozen=True)
class Sizes:
    """What a profile's runs are sized by: fio's parameters as they run (profiles.FioParams,
    which names the profiles, so it is not imported here; scale_to_mem already applied)."""

    size: int  # bytes: the data set
    threads: int  # fio jobs at once
    runtime: int  # seconds of each time-based phase


@dataclass(frozen=True)
class Phase:
    prefix: str  # metric-name prefix: "" for one-phase profiles
    options: tuple[tuple[str, str], ...]
    timeout: float
    drop_caches_before: bool = False


Phases = Callable[[Sizes, Where], list[Phase]]


@dataclass(frozen=True)
class Profile:
    """A profile: its name, the block size of its timed runs, the timed runs it makes
    (`runs`) and the untimed one that lays out what they read or overwrite (`layout`)."""

    name: str
    block_size: str  # one MiB blocks make IOPS the same number as MiB/s: not a headline
    runs: Phases
    layout: Callable[[Sizes, Where], Phase | None] = lambda sizes, where: None
    # Its runs last `runtime` seconds (all or some of them): `seconds` says nothing then.
    time_based: bool = False
    # Each thread has its own file, at least MIN_PER_THREAD of `size`.
    per_thread_files: bool = False
    # Its timed run reads the whole laid-out data set cold (the runner's cold-read check).
    reads_cold: bool = False


def per_thread(sizes: Sizes, bs: int) -> int:
    return (sizes.size // sizes.threads) // bs * bs


def placement(where: Where, *, per_thread: int | None) -> list[tuple[str, str]]:
    """Files per thread (per_thread set) or one file shared by every thread."""
    if where.device is not None:
        # O_DIRECT on the bare device: the page cache of a block device is not the
        # device's speed. Per-thread regions side by side, like per-thread files.
        opts = [("filename", where.device), ("direct", "1")]
        if per_thread is not None:
            opts.append(("offset_increment", str(per_thread)))
        return opts
    assert where.directory is not None
    name = (
        ("filename_format", _FILE_FORMAT) if per_thread is not None else ("filename", _SHARED_FILE)
    )
    return [("directory", str(where.directory)), name]


def o_direct(where: Where) -> list[tuple[str, str]]:
    """O_DIRECT on a filesystem's file (the device gets it with its name: `placement`)."""
    return [] if where.raw else [("direct", "1")]


def sized_timeout(nbytes: int) -> float:
    return TIMEOUT_SLACK + nbytes / _SLOWEST_BYTES_PER_S


def timed(runtime: int) -> tuple[tuple[str, str], ...]:
    return (("time_based", "1"), ("runtime", f"{runtime}s"))
