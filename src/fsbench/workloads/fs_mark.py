"""fs_mark: create many small files, with the fsync/sync policy of `-S`, and report the
rate.

The ext4-vs-xfs comparison's metadata test: one million 4 KiB files, each fsync'd before
close (`-S1`). fs_mark's own Files/sec is per loop and excludes its bookkeeping; a
`-S0` run of 10k files ends in 0.1 s with nothing on disk. So the headline `files_per_s`
is the files created over the runner's `seconds`, which include the syncfs that puts
them on disk; fs_mark's figure is kept as `tool_files_per_s`, and its per-syscall mean
latencies (`-v`, µs) as `<syscall>_avg_us` for the calls the run made.

The files are kept (`-k`). fs_mark runs in the mountpoint with relative `-d`
directories: it refuses a `-d` path of 40 bytes or more (`directory pathname too long`).
Its log goes to a temporary directory outside the target (by default it writes
`fs_log.txt`, and one `fs_log.txt.<pid>` per thread, in the current directory).

Sync modes (`sync`, fs_mark's `-S`): 0 none; 1 fsync before close; 2 sync() then one
fsync; 3 fsync of every file after all are written, in reverse order; 4 sync() + 3;
5 fsync after all are written, in order; 6 sync() + 5. Modes 2, 4 and 6 call sync(2),
which flushes every filesystem of the machine, not only the one under test.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from pydantic import Field, model_validator

from fsbench.system.units import Bytes
from fsbench.workloads import _tools
from fsbench.workloads.base import CacheState, Flush, Params, Scale, Tool, TrialContext, Workload
from fsbench.workloads.metric import FILES_PER_S, Better, Metric

DIRNAME = "fs_mark"
BLOCK = 4096
# Space per file: its data in whole blocks plus inode and directory entry; and at least
# 16 KiB, ext4's default bytes-per-inode (a 8 GiB ext4 has 524288 inodes: 1M files need
# a 16 GiB filesystem).
_PER_FILE_MIN = 16384
_PER_FILE_META = 1024
_MARGIN = 64 << 20
# Generous: a hung fs_mark becomes a failed trial. 1M fsync'd files on a slow disk take hours.
_TIMEOUT_BASE = 600.0
_TIMEOUT_PER_FILE = 0.05


class FsMarkParams(Params):
    files: Annotated[int, Field(gt=0, description="files per thread per loop (-n)")]
    size: Annotated[Bytes, Field(ge=0, description="bytes per file (-s)")]
    threads: Annotated[
        int, Field(gt=0, description="threads in all, shared among the dirs (-t)")
    ] = 1
    dirs: Annotated[int, Field(gt=0, description="directories, one -d each")] = 1
    subdirs: Annotated[
        int, Field(ge=0, description="subdirectories of each directory (-D); 0: none")
    ] = 0
    # 0 = fs_mark's default, a time based hash (180 s per subdirectory: a short run puts
    # every file in one subdirectory).
    subdir_files: Annotated[
        int,
        Field(ge=0, description="files per subdirectory, round robin (-N); 0: fs_mark's hash"),
    ] = 0
    sync: Annotated[
        int,
        Field(
            ge=0,
            le=6,
            description="fsync/sync policy (-S): 0 none, 1 fsync before close, 2 sync + one "
            "fsync, 3 fsync all at the end in reverse, 4 sync + 3, 5 fsync all at the end in "
            "order, 6 sync + 5",
        ),
    ]
    loops: Annotated[int, Field(gt=0, description="loops of the test (-L)")] = 1

    @model_validator(mode="after")
    def _consistent(self) -> FsMarkParams:
        if self.threads % self.dirs:
            # fs_mark runs at least one thread per -d directory and deals threads out
            # among them: a multiple keeps every directory's share the same.
            raise ValueError(f"threads ({self.threads}) must be a multiple of dirs ({self.dirs})")
        if self.subdir_files and not self.subdirs:
            raise ValueError("subdir_files needs subdirs > 0")
        return self

    @property
    def total_files(self) -> int:
        return self.files * self.threads * self.loops


@dataclass
class LoopRow:
    """One line of fs_mark's table: one loop (iteration) of the test."""

    count: int  # files created so far, all threads, cumulative over loops
    size: int
    files_per_s: float
    app_overhead_us: int
    # syscall (lower case) -> (min, avg, max) in µs; only with -v
    latencies: dict[str, tuple[float, float, float]] = field(default_factory=dict)


_SYSCALL_HEADER = re.compile(r"([A-Z]+) \(Min/Avg/Max\)")


def parse_output(text: str) -> list[LoopRow]:
    """fs_mark's table: the `FSUse% Count Size Files/sec App Overhead` header, then one
    row per loop; with -v, three more columns (min, avg, max µs) per syscall named in the
    header (`CREAT (Min/Avg/Max)`...)."""
    rows: list[LoopRow] = []
    syscalls: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("FSUse%"):
            syscalls = [s.lower() for s in _SYSCALL_HEADER.findall(line)]
            continue
        if syscalls is None:
            continue
        fields = line.split()
        if len(fields) != 5 + 3 * len(syscalls):
            continue
        try:
            values = [float(f) for f in fields]
        except ValueError:
            continue
        lat = {
            name: (values[5 + 3 * i], values[6 + 3 * i], values[7 + 3 * i])
            for i, name in enumerate(syscalls)
        }
        rows.append(LoopRow(int(values[1]), int(values[2]), values[3], int(values[4]), lat))
    return rows


def summarize(rows: list[LoopRow], size: int) -> list[Metric]:
    """Totals over the loops: files, fs_mark's own rate (files over the sum of its loop
    times) and each syscall's mean latency weighted by the loop's files. A syscall whose
    min, avg and max are 0 in every loop was not made (FSYNC under -S0, UNLINK with -k);
    with size 0 fs_mark makes no write() but prints nonsense in its WRITE column."""
    if not rows:
        return []
    per_loop: list[int] = []
    prev = 0
    for row in rows:
        per_loop.append(row.count - prev)
        prev = row.count
    files = rows[-1].count
    metrics = [Metric("files", files, "count", Better.HIGHER, resolution=1)]
    if size:  # what the application wrote: the runner turns it into write amplification
        metrics.append(Metric("bytes_written", files * size, "B", Better.HIGHER))
    tool_seconds = sum(
        n / r.files_per_s for n, r in zip(per_loop, rows, strict=True) if r.files_per_s
    )
    if tool_seconds > 0:
        # fs_mark prints its rate with one decimal.
        own = files / tool_seconds
        metrics.append(Metric("tool_files_per_s", own, "files/s", Better.HIGHER, 0.1))
    for name in rows[0].latencies:
        if name == "write" and size == 0:
            continue
        triples = [r.latencies[name] for r in rows if name in r.latencies]
        if all(v == 0 for t in triples for v in t):
            continue
        weighted = sum(
            n * r.latencies[name][1]
            for n, r in zip(per_loop, rows, strict=True)
            if name in r.latencies
        )
        # Whole microseconds as printed.
        mean = weighted / max(files, 1)
        metrics.append(Metric(f"{name}_avg_us", mean, "us", Better.LOWER, resolution=1))
    return metrics


def dirs(params: FsMarkParams) -> list[Path]:
    """The -d directories, relative to the mountpoint."""
    return [Path(DIRNAME) / f"d{i}" for i in range(params.dirs)]


def argv(params: FsMarkParams, directories: list[Path], log: Path) -> list[str]:
    args = ["fs_mark"]
    for d in directories:
        args += ["-d", str(d)]
    args += [
        "-n", str(params.files),
        "-s", str(params.size),
        "-t", str(params.threads),
        "-S", str(params.sync),
        "-L", str(params.loops),
        "-k",  # keep the files: the test creates, it does not delete
        "-v",  # per-syscall latencies
        "-l", str(log),
    ]  # fmt: skip
    if params.subdirs:
        args += ["-D", str(params.subdirs)]
    if params.subdir_files:
        args += ["-N", str(params.subdir_files)]
    return args


class FsMark(Workload[FsMarkParams]):
    name = "fs_mark"
    summary = (
        "fs_mark: create many small files with an explicit fsync/sync policy (-S): files/s "
        "to disk, per-syscall latencies"
    )
    scale_defaults = {
        # ext4 here: 400-900 fsync'd files/s (-S1), noisy.
        Scale.TINY: {"files": 1000, "size": "4K", "threads": 1, "dirs": 1, "sync": 1},
        Scale.QUICK: {"files": 4000, "size": "4K", "threads": 1, "dirs": 1, "sync": 1},
        # The ext4-vs-xfs comparison: 1M files of 4 KiB, fsync before close.
        Scale.FULL: {"files": 1_000_000, "size": "4K", "threads": 1, "dirs": 1, "sync": 1},
    }
    tools = (Tool("fs_mark", "fsmark"),)
    cache = CacheState.WARM  # it only creates: nothing to read
    # The syncfs that puts -S0/-S5 files on disk is inside `seconds` (and files_per_s).
    flush = Flush.SYNC
    headline = ("files_per_s",)
    rates = (FILES_PER_S,)

    def required_bytes(self, params: FsMarkParams) -> int:
        data = -(-params.size // BLOCK) * BLOCK
        per_file = max(data + _PER_FILE_META, _PER_FILE_MIN)
        return params.total_files * per_file + _MARGIN

    def threads(self, params: FsMarkParams) -> int:
        return params.threads

    def prepare(self, ctx: TrialContext, params: FsMarkParams) -> None:
        for d in dirs(params):
            (ctx.mountpoint / d).mkdir(parents=True, exist_ok=True)

    def run(self, ctx: TrialContext, params: FsMarkParams) -> list[Metric]:
        timeout = _TIMEOUT_BASE + _TIMEOUT_PER_FILE * params.total_files
        with tempfile.TemporaryDirectory(prefix="fsbench-fs_mark-") as tmp:
            log = Path(tmp) / "fs_log.txt"
            # Relative directories from the mountpoint: fs_mark refuses -d paths of 40
            # bytes or more.
            res = _tools.run_in(argv(params, dirs(params), log), ctx.mountpoint, timeout=timeout)
        if not res.ok:
            raise _tools.tool_failed("fs_mark", res)
        rows = parse_output(res.stdout)
        if not rows:
            raise _tools.tool_failed("fs_mark", res, "no result table in its output")
        metrics = summarize(rows, params.size)
        files = rows[-1].count
        if files != params.total_files:
            raise _tools.tool_failed(
                "fs_mark", res, f"created {files} files, not {params.total_files}"
            )
        return metrics
