"""fio's parameters and the built-in profiles: the fio runs (options as data) that each
profile makes, timed and untimed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from fsbench.system.units import Bytes
from fsbench.workloads.base import Params
from fsbench.workloads.fio.tool import Where

SEQ_WRITE = "seq-write"
SEQ_WRITE_DIRECT = "seq-write-direct"
SEQ_READ = "seq-read"
RAND_RW = "rand-rw-16k-direct"
THREADED = "threaded-io"
PROFILES: tuple[str, ...] = (SEQ_WRITE, SEQ_WRITE_DIRECT, SEQ_READ, RAND_RW, THREADED)
JOB_PREFIX = "job="
# Block size of each profile (job files: their own).
BLOCK_SIZE = {
    SEQ_WRITE: "1M",
    SEQ_WRITE_DIRECT: "1M",
    SEQ_READ: "1M",
    RAND_RW: "16k",
    THREADED: "4k",
}
# Profiles whose phases run for `runtime` seconds (all or some of them).
TIME_BASED = frozenset({RAND_RW, THREADED})

MIB = 1 << 20
# Each thread of a per-thread-file profile gets at least this much to work on.
MIN_PER_THREAD = MIB
# Generous bounds so that a hung fio becomes a failed trial, not a hung run.
_SLOWEST_BYTES_PER_S = 4 * MIB
_TIMEOUT_SLACK = 600.0

# Options every built-in profile shares.
_COMMON: tuple[tuple[str, str], ...] = (
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


class FioParams(Params):
    profile: str = Field(
        default=SEQ_WRITE,
        description=f"a built-in profile ({', '.join(PROFILES)}) or job=/path/to/file.fio",
    )
    size: Annotated[
        Bytes,
        Field(
            gt=0,
            description="the data set: the file of seq-write/seq-read/rand-rw, shared out "
            "among the threads' files of seq-* and threaded-io (job files: their own)",
        ),
    ]
    runtime: Annotated[
        int,
        Field(
            ge=1,
            le=86400,
            description="seconds of each time-based phase (rand-rw, threaded-io's random phases)",
        ),
    ]
    threads: Annotated[
        int, Field(ge=1, le=1024, description="fio jobs (threads) running at once")
    ] = 1
    scale_to_mem: float | None = Field(
        default=None,
        gt=0,
        le=1024,
        description="the data set as a multiple of the memory the workload may use (the mem "
        "knob's cap, else the machine's RAM), in place of size: 0.5 fits in the page cache, "
        "2 and 4 do not",
    )

    @field_validator("profile")
    @classmethod
    def _known_profile(cls, value: str) -> str:
        if value in PROFILES:
            return value
        if value.startswith(JOB_PREFIX) and value[len(JOB_PREFIX) :].strip():
            return value
        raise ValueError(
            f"unknown fio profile {value!r}: one of {', '.join(PROFILES)}, or job=/path/file.fio"
        )

    @model_validator(mode="after")
    def _enough_per_thread(self) -> FioParams:
        if self.scale_to_mem is not None and self.job_file is not None:
            raise ValueError(
                "scale_to_mem sizes a built-in profile's data set: a job file sizes its own"
            )
        if self.profile in (SEQ_WRITE, SEQ_WRITE_DIRECT, SEQ_READ, THREADED):
            if self.size // self.threads < MIN_PER_THREAD:
                raise ValueError(
                    f"size {self.size} shared by {self.threads} threads leaves under 1 MiB each"
                )
        return self

    def for_memory(self, mem_bytes: int) -> FioParams:
        """`size` as scale_to_mem x mem_bytes (whole MiB) when scale_to_mem is set."""
        if self.scale_to_mem is None:
            return self
        size = max(MIB, int(self.scale_to_mem * mem_bytes) // MIB * MIB)
        return type(self).model_validate({**self.model_dump(), "size": size})

    @property
    def job_file(self) -> Path | None:
        if self.profile.startswith(JOB_PREFIX):
            return Path(self.profile[len(JOB_PREFIX) :].strip())
        return None


@dataclass(frozen=True)
class Phase:
    prefix: str  # metric-name prefix: "" for one-phase profiles
    options: tuple[tuple[str, str], ...]
    timeout: float
    drop_caches_before: bool = False


def _per_thread(params: FioParams, bs: int) -> int:
    return (params.size // params.threads) // bs * bs


def _placement(where: Where, *, per_thread: int | None) -> list[tuple[str, str]]:
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


def _o_direct(where: Where) -> list[tuple[str, str]]:
    """O_DIRECT on a filesystem's file (the device gets it with its name: `_placement`)."""
    return [] if where.raw else [("direct", "1")]


def _sized_timeout(nbytes: int) -> float:
    return _TIMEOUT_SLACK + nbytes / _SLOWEST_BYTES_PER_S


def run_phases(profile: str, params: FioParams, where: Where) -> list[Phase]:
    """The timed fio runs of a built-in profile, in order."""
    size, threads, runtime = params.size, params.threads, params.runtime
    timed = (("time_based", "1"), ("runtime", f"{runtime}s"))
    if profile in (SEQ_WRITE, SEQ_WRITE_DIRECT, SEQ_READ):
        per = _per_thread(params, MIB)
        rw = "read" if profile == SEQ_READ else "write"
        opts = [
            ("name", profile),
            *_COMMON,
            *_placement(where, per_thread=per),
            ("rw", rw),
            ("bs", BLOCK_SIZE[profile]),
            ("size", str(per)),
            ("numjobs", str(threads)),
            # seq-write-direct: the filesystem's allocator and I/O path, no page cache.
            *(_o_direct(where) if profile == SEQ_WRITE_DIRECT else []),
        ]
        if rw == "write":
            opts.append(("end_fsync", "1"))  # inside fio's runtime: data on disk, as IOzone -e
        return [Phase("", tuple(opts), _sized_timeout(size))]
    if profile == RAND_RW:
        opts = [
            ("name", profile),
            *_COMMON,
            *_placement(where, per_thread=None),
            ("rw", "randrw"),
            ("rwmixread", "50"),
            ("bs", BLOCK_SIZE[profile]),
            *_o_direct(where),
            ("size", str(size)),
            ("numjobs", str(threads)),
            *timed,
        ]
        return [Phase("", tuple(opts), runtime + _TIMEOUT_SLACK)]
    if profile == THREADED:
        per = _per_thread(params, 4096)
        base = [
            *_COMMON,
            *_placement(where, per_thread=per),
            ("bs", BLOCK_SIZE[profile]),
            ("size", str(per)),
            ("numjobs", str(threads)),
        ]
        seq_t, rand_t = _sized_timeout(size), runtime + _sized_timeout(size)
        return [
            Phase(
                "seq_", (("name", "seq-write"), *base, ("rw", "write"), ("end_fsync", "1")), seq_t
            ),
            Phase("seq_", (("name", "seq-read"), *base, ("rw", "read")), seq_t, True),
            Phase(
                "rand_", (("name", "rand-read"), *base, ("rw", "randread"), *timed), rand_t, True
            ),
            Phase(
                "rand_",
                (("name", "rand-write"), *base, ("rw", "randwrite"), *timed, ("end_fsync", "1")),
                rand_t,
                True,
            ),
        ]
    raise ValueError(f"not a built-in fio profile: {profile!r}")


def layout_phase(profile: str, params: FioParams, where: Where) -> Phase | None:
    """The untimed run that writes the data a profile reads (or overwrites): the same
    files, written sequentially in 1 MiB blocks and fsynced. None if it needs nothing."""
    if profile == SEQ_READ:
        per, threads = _per_thread(params, MIB), params.threads
    elif profile == RAND_RW:
        per, threads = params.size, 1
    else:
        # seq-write(-direct) allocates its file from nothing; threaded-io's first phase writes the
        # files the later phases use.
        return None
    shared = profile == RAND_RW
    opts = [
        ("name", "layout"),
        *_COMMON,
        *_placement(where, per_thread=None if shared else per),
        ("rw", "write"),
        ("bs", "1M"),
        ("size", str(per)),
        ("numjobs", str(threads)),
        ("end_fsync", "1"),
    ]
    return Phase("", tuple(opts), _sized_timeout(params.size))
