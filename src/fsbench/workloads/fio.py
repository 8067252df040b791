"""fio: the standard I/O workload generator, with built-in profiles or any job file.

Profiles (the `profile` parameter):

- `seq-write`: IOzone-style, one file (per thread) written sequentially in 1 MiB blocks
  through the page cache, fsync at the end inside fio's timing (IOzone's `-e`).
- `seq-read`: the same file laid out by `prepare` (untimed), then read sequentially, cold.
- `rand-rw-16k-direct`: random 16 KiB reads and writes, 50/50, O_DIRECT, on a file laid
  out by `prepare` (so the writes are overwrites, as in sysbench's `rndrw`); `threads`
  jobs share the file; time based.
- `threaded-io`: tiobench-style: `threads` threads, each on its own file, doing a
  sequential write, a sequential read, random reads and random writes (4 KiB, buffered),
  one fio run per phase with caches dropped in between; metrics per phase.
- `job=/path/file.fio`: any fio job file. fsbench points every job at the filesystem under
  test (its `directory=` lines are replaced) and lays the files out in `prepare` with
  `--create_only=1`, untimed.

Every fio run uses `--output-format=json`; bandwidth (MiB/s), IOPS, mean latency and
completion-latency percentiles (p50, p95, p99, p99.9, in µs) are reported per direction.

On the `raw` pseudo-filesystem (the bare device) the same profile runs on the device
itself with O_DIRECT, so every filesystem can be shown as a percentage of the device.
"""

from __future__ import annotations

import errno
import json
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import Field, field_validator, model_validator

from fsbench import proc
from fsbench.errors import TrialFailed, Unsupported
from fsbench.workloads import register
from fsbench.workloads.base import (
    Better,
    Bytes,
    CacheState,
    Flush,
    Metric,
    Params,
    Scale,
    Tool,
    TrialContext,
    Workload,
)

SEQ_WRITE = "seq-write"
SEQ_READ = "seq-read"
RAND_RW = "rand-rw-16k-direct"
THREADED = "threaded-io"
PROFILES: tuple[str, ...] = (SEQ_WRITE, SEQ_READ, RAND_RW, THREADED)
JOB_PREFIX = "job="

MIB = 1 << 20
# Each thread of a per-thread-file profile gets at least this much to work on.
MIN_PER_THREAD = MIB
_MARGIN_MIN = 64 * MIB  # journal and metadata overhead that matters on small filesystems
# Percentiles fio reports by default, as fio's JSON keys, and our metric suffixes.
PERCENTILES: tuple[tuple[str, str], ...] = (
    ("50.000000", "p50"),
    ("95.000000", "p95"),
    ("99.000000", "p99"),
    ("99.900000", "p99_9"),
)
DIRECTIONS = ("read", "write", "trim")
# Generous bounds so that a hung fio becomes a failed trial, not a hung run.
_SLOWEST_BYTES_PER_S = 4 * MIB
_TIMEOUT_SLACK = 600.0
_JOBFILE_TIMEOUT = 6 * 3600.0

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
    # A built-in profile name, or "job=/path/to/file.fio".
    profile: str = SEQ_WRITE
    # The data set: the file of seq-write/seq-read/rand-rw, shared out among the threads of
    # the per-thread-file profiles (seq-*, threaded-io). Ignored by job files.
    size: Annotated[Bytes, Field(gt=0)]
    # Seconds of each time-based phase (rand-rw, threaded-io's random phases).
    runtime: Annotated[int, Field(ge=1, le=86400)]
    threads: Annotated[int, Field(ge=1, le=1024)] = 1

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
        if self.profile in (SEQ_WRITE, SEQ_READ, THREADED):
            if self.size // self.threads < MIN_PER_THREAD:
                raise ValueError(
                    f"size {self.size} shared by {self.threads} threads leaves under 1 MiB each"
                )
        return self

    @property
    def job_file(self) -> Path | None:
        if self.profile.startswith(JOB_PREFIX):
            return Path(self.profile[len(JOB_PREFIX) :].strip())
        return None


# -- parsing fio's JSON ----------------------------------------------------------------


@dataclass(frozen=True)
class Direction:
    """One direction (read, write, trim) of one fio job or reporting group."""

    io_bytes: int
    bw_mib_s: float
    iops: float
    lat_mean_us: float | None
    clat_percentiles_us: dict[str, float]  # metric suffix ("p99") -> µs
    total_ios: int


@dataclass(frozen=True)
class JobResult:
    name: str
    groupid: int
    error: int
    directions: dict[str, Direction] = field(default_factory=dict)


class FioOutputError(ValueError):
    """fio's output is not the JSON we expect."""


def parse_fio_json(text: str) -> list[JobResult]:
    """The jobs (or reporting groups) of a `fio --output-format=json` output. fio may print
    notes before the JSON object: everything before the first `{` is skipped."""
    start = text.find("{")
    if start < 0:
        raise FioOutputError("no JSON object in fio's output")
    try:
        data = json.loads(text[start:])
    except json.JSONDecodeError as exc:
        raise FioOutputError(f"fio's JSON does not parse: {exc}") from exc
    jobs = data.get("jobs") if isinstance(data, dict) else None
    if not isinstance(jobs, list):
        raise FioOutputError("fio's JSON has no `jobs` list")
    results = []
    for job in jobs:
        directions = {}
        for ddir in DIRECTIONS:
            d = job.get(ddir)
            if isinstance(d, dict) and int(d.get("total_ios", 0)) > 0:
                directions[ddir] = _direction(d)
        results.append(
            JobResult(
                name=str(job.get("jobname", "")),
                groupid=int(job.get("groupid", 0)),
                error=int(job.get("error", 0)),
                directions=directions,
            )
        )
    return results


def _direction(d: dict[str, Any]) -> Direction:
    bw_bytes = d.get("bw_bytes")
    # bw_bytes appeared in fio 3.x; `bw` is KiB/s in every version.
    bw = float(bw_bytes) / MIB if bw_bytes is not None else float(d.get("bw", 0)) / 1024
    lat = d.get("lat_ns")
    lat_mean = float(lat["mean"]) / 1000 if isinstance(lat, dict) and lat.get("N") else None
    pct: dict[str, float] = {}
    clat = d.get("clat_ns")
    table = clat.get("percentile") if isinstance(clat, dict) else None
    if isinstance(table, dict):
        for key, suffix in PERCENTILES:
            if key in table:
                pct[suffix] = float(table[key]) / 1000
    return Direction(
        io_bytes=int(d.get("io_bytes", 0)),
        bw_mib_s=bw,
        iops=float(d.get("iops", 0.0)),
        lat_mean_us=lat_mean,
        clat_percentiles_us=pct,
        total_ios=int(d.get("total_ios", 0)),
    )


def direction_metrics(prefix: str, ddir: str, d: Direction) -> list[Metric]:
    """`{prefix}{ddir}_mib_s`, `_iops`, `_lat_mean_us`, `_clat_p50_us`...: e.g. write_mib_s,
    rand_read_clat_p99_us."""
    base = f"{prefix}{ddir}"
    out = [
        Metric(f"{base}_mib_s", d.bw_mib_s, "MiB/s", Better.HIGHER),
        Metric(f"{base}_iops", d.iops, "IOPS", Better.HIGHER),
    ]
    if d.lat_mean_us is not None:
        out.append(Metric(f"{base}_lat_mean_us", d.lat_mean_us, "us", Better.LOWER))
    for _, suffix in PERCENTILES:
        if suffix in d.clat_percentiles_us:
            value = d.clat_percentiles_us[suffix]
            out.append(Metric(f"{base}_clat_{suffix}_us", value, "us", Better.LOWER))
    return out


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "job"


def _written(results: Sequence[JobResult]) -> list[Metric]:
    """What fio wrote, for the runner's write amplification (device bytes per byte)."""
    total = sum(d.io_bytes for r in results for ddir, d in r.directions.items() if ddir == "write")
    return [Metric("bytes_written", total, "B", Better.HIGHER)] if total else []


def job_metrics(results: Sequence[JobResult], prefix: str = "") -> list[Metric]:
    """Metrics of one fio run. One job (or reporting group): plain names; several: each
    prefixed with its job name (made unique with the group id when names repeat)."""
    if len(results) == 1:
        return [
            m
            for ddir, d in results[0].directions.items()
            for m in direction_metrics(prefix, ddir, d)
        ]
    slugs = [_slug(r.name) for r in results]
    metrics = []
    for r, slug in zip(results, slugs, strict=True):
        label = slug if slugs.count(slug) == 1 else f"{slug}_g{r.groupid}"
        for ddir, d in r.directions.items():
            metrics += direction_metrics(f"{prefix}{label}_", ddir, d)
    return metrics


# -- the jobs ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Where:
    """Where the I/O goes: a directory on the filesystem under test, or the bare device."""

    directory: Path | None = None
    device: str | None = None

    @property
    def raw(self) -> bool:
        return self.device is not None


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


def _sized_timeout(nbytes: int) -> float:
    return _TIMEOUT_SLACK + nbytes / _SLOWEST_BYTES_PER_S


def run_phases(profile: str, params: FioParams, where: Where) -> list[Phase]:
    """The timed fio runs of a built-in profile, in order."""
    size, threads, runtime = params.size, params.threads, params.runtime
    timed = (("time_based", "1"), ("runtime", f"{runtime}s"))
    if profile in (SEQ_WRITE, SEQ_READ):
        per = _per_thread(params, MIB)
        rw = "write" if profile == SEQ_WRITE else "read"
        opts = [
            ("name", profile),
            *_COMMON,
            *_placement(where, per_thread=per),
            ("rw", rw),
            ("bs", "1M"),
            ("size", str(per)),
            ("numjobs", str(threads)),
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
            ("bs", "16k"),
            *([] if where.raw else [("direct", "1")]),  # the device gets it with its name
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
            ("bs", "4k"),
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
        # seq-write allocates its file from nothing; threaded-io's first phase writes the
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


# -- job files ----------------------------------------------------------------------------

_SECTION_RE = re.compile(r"^\s*\[([^\]]+)\]\s*$")
_KEY_RE = re.compile(r"^\s*([A-Za-z0-9_]+)\s*(?:=(.*))?$")
# Where a job puts its files: replaced by the filesystem under test (or the device).
_PLACEMENT_KEYS = {"directory", "filename", "filename_format", "opendir"}


def rewrite_job_file(text: str, where: Where) -> str:
    """The job file with every job pointed at `where`: `directory=` lines dropped and the
    target's directory set at the end of every section (the last value wins); on the bare
    device every job gets `filename=<device>` and `direct=1`. Relative `filename=` values
    stay (under the new directory); absolute ones and includes are refused."""
    out = [
        "; rewritten by fsbench: placement set for the device/filesystem under test",
        "[global]",
        "group_reporting=1",
        "",
    ]
    sections = 0

    def close_section() -> None:
        if sections:
            if where.device is not None:
                out.extend([f"filename={where.device}", "direct=1"])
            else:
                out.append(f"directory={where.directory}")
            out.append("")

    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            out.append(line)
            continue
        if stripped.startswith("include "):
            raise ValueError(f"line {lineno}: `include` is not supported; inline the file")
        if _SECTION_RE.match(stripped):
            close_section()
            sections += 1
            out.append(line)
            continue
        m = _KEY_RE.match(stripped)
        key = m.group(1).lower() if m else ""
        value = (m.group(2) or "").strip() if m else ""
        if key in _PLACEMENT_KEYS:
            if where.device is not None or key in ("directory", "opendir"):
                out.append(f"; fsbench: dropped {stripped}")
                continue
            if value.startswith("/") or ".." in value.split("/"):
                raise ValueError(
                    f"line {lineno}: {key}={value} points outside the filesystem under test"
                )
        if where.device is not None and key in ("direct", "buffered"):
            out.append(f"; fsbench: dropped {stripped}")
            continue
        out.append(line)
    if not sections:
        raise ValueError("no job section ([name]) in the job file")
    close_section()
    return "\n".join(out) + "\n"


# -- running fio ---------------------------------------------------------------------------


def _argv_options(options: Sequence[tuple[str, str]]) -> list[str]:
    return [f"--{k}={v}" for k, v in options]


def _stderr_tail(res: proc.Result, lines: int = 40) -> str:
    text = "\n".join(p for p in (res.stderr.strip(), res.stdout.strip()) if p)
    return "\n".join(text.splitlines()[-lines:])


def run_fio(args: Sequence[str], *, timeout: float, direct: bool) -> list[JobResult]:
    """Run fio with `args` (options and/or a job file); its parsed JSON. Errors: a refused
    O_DIRECT is Unsupported; anything else is TrialFailed with fio's messages."""
    with tempfile.TemporaryDirectory(prefix="fsbench-fio-") as tmp:
        out_path = Path(tmp) / "fio.json"
        argv = ["fio", "--output-format=json", f"--output={out_path}", "--eta=never", *args]
        res = proc.run(argv, timeout=timeout)
        text = out_path.read_text(errors="replace") if out_path.exists() else ""
    return check_fio(res, text, direct=direct)


def check_fio(res: proc.Result, text: str, *, direct: bool) -> list[JobResult]:
    """fio's parsed JSON, or the error its exit status, job errors and messages mean."""
    detail = _stderr_tail(res)
    if res.returncode == 127:
        raise TrialFailed("fio is not installed (apt-get install fio)", detail)
    if res.returncode == 124:
        raise TrialFailed(f"fio: {res.stderr.strip()}", detail)
    try:
        results = parse_fio_json(text) if text.strip() else []
    except FioOutputError as exc:
        raise TrialFailed(f"fio: {exc}", detail + "\n" + text[-2000:]) from exc
    errors = sorted({r.error for r in results if r.error})
    # fio: "looks like your file system does not support direct=1/buffered=0", or the
    # EINVAL of the open/first I/O with O_DIRECT.
    if "does not support direct" in res.stderr or (direct and errno.EINVAL in errors):
        raise Unsupported(f"fio: O_DIRECT refused: {os.strerror(errno.EINVAL)}", detail)
    if errors or not res.ok:
        first = next(
            (ln.strip() for ln in res.stderr.splitlines() if ln.strip().startswith("fio:")),
            "",
        )
        what = ", ".join(os.strerror(e) for e in errors) or f"exit {res.returncode}"
        raise TrialFailed(f"fio failed: {what}" + (f" ({first})" if first else ""), detail)
    if not results:
        raise TrialFailed("fio reported no jobs", detail)
    return results


def _device_size(device: str) -> int:
    fd = os.open(device, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.lseek(fd, 0, os.SEEK_END)
    finally:
        os.close(fd)


def _where(ctx: TrialContext) -> Where:
    if ctx.fs_type == "raw":
        return Where(device=ctx.device)
    return Where(directory=ctx.mountpoint)


@register
class Fio(Workload):
    name: ClassVar[str] = "fio"
    summary: ClassVar[str] = (
        "fio profiles: seq-write/seq-read (IOzone-style, 1 MiB), rand-rw-16k-direct, "
        "threaded-io (tiobench-style), or job=FILE; MiB/s, IOPS, latency percentiles"
    )
    params_model: ClassVar[type[Params]] = FioParams
    scale_defaults = {
        Scale.TINY: {"profile": SEQ_WRITE, "size": "64M", "runtime": 1, "threads": 1},
        Scale.QUICK: {"profile": SEQ_WRITE, "size": "2G", "runtime": 10, "threads": 1},
        # IOzone 8 GB write/read, as in the classic suite comparison.
        Scale.FULL: {"profile": SEQ_WRITE, "size": "8G", "runtime": 60, "threads": 1},
    }
    tools: ClassVar[tuple[Tool, ...]] = (Tool("fio", "fio"),)
    # Reads are cold: nothing of the laid-out files is cached (fio also drops each file's
    # pages before it starts, invalidate=1). On the raw device the runner drops caches.
    cache: ClassVar[CacheState] = CacheState.COLD_REMOUNT
    # fio's write phases fsync at their end; the runner's sync catches what a job file
    # leaves dirty, inside `seconds` (fio's own MiB/s follow the job's own policy).
    flush: ClassVar[Flush] = Flush.SYNC
    needs_filesystem: ClassVar[bool] = False  # `raw`: the same profile on the bare device
    headline: ClassVar[tuple[str, ...]] = (
        "write_mib_s",
        "read_mib_s",
        "write_iops",
        "read_iops",
        "write_clat_p99_us",
        "read_clat_p99_us",
        "seq_write_mib_s",
        "seq_read_mib_s",
        "rand_read_mib_s",
        "rand_write_mib_s",
        "seconds",
    )

    def required_bytes(self, params: Params) -> int:
        assert isinstance(params, FioParams)
        if params.job_file is not None:
            return 0  # unknown: the job file decides
        return params.size + max(params.size // 10, _MARGIN_MIN)

    def prepare(self, ctx: TrialContext, params: Params) -> None:
        assert isinstance(params, FioParams)
        where = _where(ctx)
        if where.device is not None and params.job_file is None:
            dev_size = _device_size(where.device)
            if params.size > dev_size:
                raise TrialFailed(
                    f"fio size {params.size} is larger than {where.device} ({dev_size} bytes)"
                )
        if params.job_file is not None:
            # fio's own setup phase (laying out files a job reads), untimed.
            self._run_job_file(params, where, ["--create_only=1"])
            return
        phase = layout_phase(params.profile, params, where)
        if phase is not None:
            run_fio(_argv_options(phase.options), timeout=phase.timeout, direct=where.raw)

    def run(self, ctx: TrialContext, params: Params) -> list[Metric]:
        assert isinstance(params, FioParams)
        where = _where(ctx)
        if params.job_file is not None:
            results = self._run_job_file(params, where, [])
            return job_metrics(results) + _written(results)
        metrics: list[Metric] = []
        written = 0
        for phase in run_phases(params.profile, params, where):
            if phase.drop_caches_before:
                ctx.drop_caches()
            direct = where.raw or ("direct", "1") in phase.options
            results = run_fio(_argv_options(phase.options), timeout=phase.timeout, direct=direct)
            metrics += job_metrics(results, phase.prefix)
            written += sum(int(m.value) for m in _written(results))
        if written:
            metrics.append(Metric("bytes_written", written, "B", Better.HIGHER))
        return metrics

    def _run_job_file(self, params: FioParams, where: Where, extra: list[str]) -> list[JobResult]:
        path = params.job_file
        assert path is not None
        try:
            text = path.read_text()
        except OSError as exc:
            raise TrialFailed(f"fio job file {path}: {exc.strerror or exc}") from exc
        try:
            rewritten = rewrite_job_file(text, where)
        except ValueError as exc:
            raise TrialFailed(f"fio job file {path}: {exc}") from exc
        direct = where.raw or bool(re.search(r"^\s*direct\s*=\s*1", text, re.MULTILINE))
        with tempfile.TemporaryDirectory(prefix="fsbench-fio-job-") as tmp:
            job = Path(tmp) / path.name
            job.write_text(rewritten)
            return run_fio([*extra, str(job)], timeout=_JOBFILE_TIMEOUT, direct=direct)

    def check(self, params: Params, metrics: dict[str, float]) -> dict[str, str]:
        assert isinstance(params, FioParams)
        read = metrics.get("device_read_bytes")
        if params.profile == SEQ_READ and read is not None and read < params.size / 2:
            return {
                "not-cold": f"the device read {read / MIB:.1f} MiB of a "
                f"{params.size / MIB:.0f} MiB file read cold"
            }
        return {}
