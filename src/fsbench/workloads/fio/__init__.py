"""fio: the standard I/O workload generator, with built-in profiles or any job file.

Profiles (the `profile` parameter; `profiles.py` registers them, `builtin.py` holds the
shipped ones' fio options; a plugin adds its own through the same registry):

- `seq-write`: IOzone-style, one file (per thread) written sequentially in 1 MiB blocks
  through the page cache, fsync at the end inside fio's timing (IOzone's `-e`).
- `seq-write-direct`: the same with O_DIRECT (IOzone's `-I -e`): the filesystem's
  allocator and I/O path without the page cache, whose speed in a VM can be the
  hypervisor's (a guest whose free memory is reported to the host pays to fault it back
  in, more the longer it was free).
- `seq-read`: the same file laid out by `prepare` (untimed), then read sequentially, cold.
- `rand-rw-16k-direct`: random 16 KiB reads and writes, 50/50, O_DIRECT, on a file laid
  out by `prepare` (so the writes are overwrites, as in sysbench's `rndrw`); `threads`
  jobs share the file; time based.
- `threaded-io`: tiobench-style: `threads` threads, each on its own file, doing a
  sequential write, a sequential read, random reads and random writes (4 KiB, buffered),
  one fio run per phase with caches dropped in between; metrics per phase.
- `job=/path/file.fio`: any fio job file (`jobfile.py`). fsbench points every job at the
  filesystem under test (its `directory=` lines are replaced) and lays the files out in
  `prepare` with `--create_only=1`, untimed.

Every fio run uses `--output-format=json+` (`parse.py`); bandwidth (MiB/s), IOPS, mean
latency and completion-latency percentiles (p50, p95, p99, p99.9, in µs) are reported per
direction. The headline metrics follow the profile: MiB/s and IOPS are one number at the
1 MiB blocks of seq-*, so only MiB/s is shown there.

Per-second series (`logs.py`: fio's bandwidth log and per-second latency histograms):
a profile of one fio run (seq-write, seq-read, rand-rw) records `mib_s`, every direction
together, whose steady state the runner judges (fio's own ss= rule, on fio's `bw`), and
per direction the completion-latency p50 and p99 of each second (`write_clat_p99_us`);
threaded-io records each phase's own (`rand_read_mib_s`, `rand_read_clat_p99_us`...),
with no steady state across four runs. A size-based run shorter than the steady window
is drawn but not judged. Job files record no series (their jobs may run one after
another, on clocks of their own).

`scale_to_mem` sizes the data set (the file of seq-*/rand-rw, the threads' files of
threaded-io) to a multiple of the memory the workload may use (`ctx.mem_bytes`: the `mem`
knob's cap, else the machine's RAM), so `--knob mem=256M --set scale_to_mem=0.5,2,4`
sweeps the working set across the page cache.

On the `raw` pseudo-filesystem (the bare device) the same profile runs on the device
itself with O_DIRECT, so every filesystem can be shown as a percentage of the device.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Collection, Mapping
from pathlib import Path

from fsbench.system import servers
from fsbench.system.errors import TrialFailed
from fsbench.system.units import parse_size
from fsbench.workloads.base import CacheState, Flush, Scale, Tool, TrialContext, Workload
from fsbench.workloads.fio import jobfile, logs, profiles, tool
from fsbench.workloads.fio.parse import job_metrics, written_bytes
from fsbench.workloads.fio.profiles import SEQ_WRITE, FioParams, layout_phase, run_phases
from fsbench.workloads.metric import Better, Metric

MIB = 1 << 20
_MARGIN_MIN = 64 * MIB  # journal and metadata overhead that matters on small filesystems


class Fio(Workload[FioParams]):
    name = "fio"
    summary = (
        "fio profiles: seq-write(-direct)/seq-read (IOzone-style, 1 MiB), rand-rw-16k-direct, "
        "threaded-io (tiobench-style), or job=FILE; MiB/s, IOPS, latency percentiles"
    )
    scale_defaults = {
        Scale.TINY: {"profile": SEQ_WRITE, "size": "64M", "runtime": 1, "threads": 1},
        Scale.QUICK: {"profile": SEQ_WRITE, "size": "2G", "runtime": 10, "threads": 1},
        # IOzone 8 GB write/read, as in the classic suite comparison.
        Scale.FULL: {"profile": SEQ_WRITE, "size": "8G", "runtime": 60, "threads": 1},
    }
    tools = (Tool("fio", "fio"),)
    # Reads are cold: nothing of the laid-out files is cached (fio also drops each file's
    # pages before it starts, invalidate=1). On the raw device the runner drops caches.
    cache = CacheState.COLD_REMOUNT
    # fio's write phases fsync at their end; the runner's sync catches what a job file
    # leaves dirty, inside `seconds` (fio's own MiB/s follow the job's own policy).
    flush = Flush.SYNC
    needs_filesystem = False  # `raw`: the same profile on the bare device
    # Every direction's MiB/s a second, of the profiles that are one fio run.
    steady_series = "mib_s"
    # Every headline metric of every profile; `headline_for` picks a trial's own.
    headline = (
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

    @classmethod
    def headline_for(cls, params: FioParams, reported: Collection[str]) -> tuple[str, ...]:
        """A job file: the bandwidth of each of its jobs, then `seconds`. A profile: its
        own directions; no IOPS where a block is 1 MiB (the same number as MiB/s), no
        `seconds` where the phases are time based (the same for every config)."""
        if params.job_file is not None:
            bandwidth = tuple(name for name in reported if name.endswith("_mib_s"))
            return (*bandwidth, *(("seconds",) if "seconds" in reported else ()))
        profile = profiles.get(params.profile)
        one_mib = parse_size(profile.block_size) == MIB
        return tuple(
            name
            for name in super().headline_for(params, reported)
            if not (one_mib and name.endswith("_iops"))
            and not (profile.time_based and name == "seconds")
        )

    def for_memory(self, params: FioParams, mem_bytes: int) -> FioParams:
        return params.for_memory(mem_bytes)

    def required_bytes(self, params: FioParams) -> int:
        if params.job_file is not None:
            return 0  # unknown: the job file decides
        return params.size + max(params.size // 10, _MARGIN_MIN)

    def refuses(self, params: FioParams) -> str | None:
        if params.job_file is None:
            return None
        return jobfile.check_job_file(params.job_file)

    def threads(self, params: FioParams) -> int:
        # A job file's jobs are its own: count every CPU as possibly busy.
        return params.threads if params.job_file is None else os.cpu_count() or 1

    def prepare(self, ctx: TrialContext, params: FioParams) -> None:
        where = tool.where(ctx)
        if where.device is not None and params.job_file is None:
            dev_size = tool.device_size(where.device)
            if params.size > dev_size:
                raise TrialFailed(
                    f"fio size {params.size} is larger than {where.device} ({dev_size} bytes)"
                )
        if params.job_file is not None:
            # fio's own setup phase (laying out files a job reads), untimed.
            jobfile.run_job_file(params.job_file, where, ["--create_only=1"])
            return
        phase = layout_phase(params.profile, params, where)
        if phase is not None:
            tool.run_fio(tool.argv_options(phase.options), timeout=phase.timeout, direct=where.raw)

    def run(self, ctx: TrialContext, params: FioParams) -> list[Metric]:
        where = tool.where(ctx)
        if params.job_file is not None:
            results = jobfile.run_job_file(params.job_file, where, [])
            return job_metrics(results) + _written(written_bytes(results))
        metrics: list[Metric] = []
        written = 0
        phases = run_phases(params.profile, params, where)
        for phase in phases:
            if phase.drop_caches_before:
                ctx.drop_caches()
            direct = where.raw or ("direct", "1") in phase.options
            # The per-second logs go beside the mount point, not onto the filesystem.
            hist_s = logs.hist_interval_s(phase.options)
            scratch = servers.scratch_dir(ctx.run_dir)
            scratch.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=scratch, prefix="fio-logs-") as d:
                logged = logs.log_options(Path(d), hist_s)
                options = tool.argv_options((*phase.options, *logged))
                results = tool.run_fio(options, timeout=phase.timeout, direct=direct)
                seconds = logs.read_dir(Path(d), hist_s)
            if len(results) == 1:  # a profile's jobs report as one group
                seconds.add_tail(results[0].directions)
            _record_series(ctx, seconds, phase.prefix, total=len(phases) == 1)
            metrics += job_metrics(results, phase.prefix)
            written += written_bytes(results)
        return metrics + _written(written)

    def expected_read_bytes(self, params: FioParams, metrics: Mapping[str, float]) -> float | None:
        # seq-read reads its whole laid-out file cold (the other profiles' reads are
        # O_DIRECT, or follow writes of the same trial).
        if params.job_file is None and profiles.get(params.profile).reads_cold:
            return params.size
        return None


def _record_series(ctx: TrialContext, seconds: logs.PerSecond, prefix: str, total: bool) -> None:
    """One fio run's per-second series: `mib_s` of every direction together where the
    profile is that one run (`total`: the steady series), else each direction's
    `{prefix}{ddir}_mib_s`; each direction's latency percentiles."""
    if total:
        t, v = seconds.total_mib_s()
        if t:
            ctx.series("mib_s", "MiB/s", "higher", t, v)
    else:
        for ddir, per in seconds.mib_s.items():
            ordered = sorted(per)
            if ordered:
                name = f"{prefix}{ddir}_mib_s"
                ctx.series(
                    name, "MiB/s", "higher", [float(s) for s in ordered], [per[s] for s in ordered]
                )
    for ddir in seconds.hist:
        for pct, suffix in logs.SERIES_PERCENTILES:
            t, v = seconds.percentile_series(ddir, pct)
            if t:
                ctx.series(f"{prefix}{ddir}_clat_{suffix}_us", "us", "lower", t, v)


def _written(total: int) -> list[Metric]:
    """What fio wrote, for the runner's write amplification (device bytes per byte)."""
    return [Metric("bytes_written", total, "B", Better.HIGHER)] if total else []
