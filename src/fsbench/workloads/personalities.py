"""fileserver, varmail, webserver: filebench's personalities, run by fsbench-engine with
filebench's defaults and flowop sequences (filebench itself is unmaintained).

prepare (untimed) lays out the fileset with `fsbench-engine prepare`; the runner then
syncs and drops caches; run is `fsbench-engine run` on the same fileset (reused), whose
measured phase excludes the warm-up. Threads sweep 1..64 as in the ext4-vs-xfs comparison.

Per-second series of the measured phase, from the engine's results (`timeseries`):
`ops_per_s` (whose steady state the runner judges), `mb_per_s`, and the latency p50 and
p99 of the operations that ended in each second (`lat_p50_us`, `lat_p99_us`).

The main fileset's size is the engine's per scale, or `size` (its nominal size: files x
mean file size, filebench's `$nfiles` x `$meanfilesize`), or `scale_to_mem` times the
memory the workload may use (the `mem` knob's cap, else the machine's RAM).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from fsbench.system import engine
from fsbench.system.units import Bytes
from fsbench.workloads.base import CacheState, Flush, Params, Scale, TrialContext, Workload
from fsbench.workloads.metric import Better, Metric, bucket_width

DIR = "engine"
_MARGIN = 64 << 20  # journal and metadata overhead that matters on small filesystems
# The engine's latency histograms (HDR, 2 significant figures: engine/src/stats.rs SIGFIG)
# have 2^7 buckets per power of two of nanoseconds.
HDR_BITS = 7


def _hdr_step(us: float) -> float:
    """What the engine's histogram cannot tell apart at this latency (µs)."""
    return bucket_width(us, HDR_BITS, per_unit=1000)


class PersonalityParams(Params):
    threads: int | None = Field(
        default=None, ge=1, le=4096, description="threads; none: the personality's own"
    )
    duration: float | None = Field(
        default=None, gt=0, description="seconds measured; none: the engine's for the scale"
    )
    warmup: float | None = Field(
        default=None, ge=0, description="seconds run before measuring; none: the engine's"
    )
    seed: int = Field(default=1, ge=0, description="seed of the file sizes and choices")
    size: Bytes | None = Field(
        default=None,
        gt=0,
        description="the main fileset's nominal size (files x mean file size); none: the "
        "engine's for the scale",
    )
    scale_to_mem: float | None = Field(
        default=None,
        gt=0,
        le=1024,
        description="the main fileset as a multiple of the memory the workload may use (the "
        "mem knob's cap, else the machine's RAM), in place of size",
    )


def _defaults(threads: dict[Scale, Any]) -> dict[Scale, dict[str, Any]]:
    return {scale: {"threads": threads[scale]} for scale in Scale}


class _Personality(Workload[PersonalityParams]):
    """A filebench personality: the engine's personality of the workload's own name."""

    cache = CacheState.COLD
    # ops/s is the engine's own, over its measured phase; the sync after it puts what was
    # written on disk so the device's bytes (write amplification) count all of it.
    flush = Flush.SYNC
    headline = ("ops_per_s", "mb_per_s", "lat_p99_us")
    steady_series = "ops_per_s"

    @classmethod
    def missing(cls) -> str | None:
        if engine.find_engine() is None:
            return f"{engine.ENGINE} not built: `make install` builds it (Rust >= 1.88, rustup)"
        return None

    def __init__(self) -> None:
        self._spec: dict[str, Any] = {}
        self._prepared: dict[str, Any] = {}

    def for_memory(self, params: PersonalityParams, mem_bytes: int) -> PersonalityParams:
        if params.scale_to_mem is None:
            return params
        size = max(1, int(params.scale_to_mem * mem_bytes))
        return PersonalityParams.model_validate({**params.model_dump(), "size": size})

    def required_bytes(self, params: PersonalityParams) -> int:
        if params.size is None:
            return 0  # sized by the engine per scale; full scale grows with RAM
        # Every file of the set present at once, grown by appends: a generous estimate.
        return params.size + params.size // 4 + _MARGIN

    def threads(self, params: PersonalityParams) -> int:
        # The spec prepare made says how many (the personality's own unless given).
        groups = self._spec.get("groups") or []
        return sum(int(g.get("threads") or 1) for g in groups) or params.threads or 1

    def prepare(self, ctx: TrialContext, params: PersonalityParams) -> None:
        spec = engine.personality(
            self.name,
            str(ctx.scale),
            ctx.mountpoint / DIR,
            threads=params.threads,
            duration=params.duration,
            warmup=params.warmup,
            seed=params.seed,
            fileset_bytes=params.size,
        )
        spec["drop_caches"] = False  # the runner settles caches as `cache` says
        # What prepare made: {"files", "bytes", "seconds", ...} (the engine's "prepare").
        self._prepared = engine.prepare(spec, timeout=7200).get("prepare") or {}
        for fileset in spec["filesets"]:
            fileset["reuse"] = True  # run measures on what prepare laid out
        self._spec = spec

    def run(self, ctx: TrialContext, params: PersonalityParams) -> list[Metric]:
        seconds = float(self._spec["stop"].get("duration_s") or 0) + float(
            self._spec.get("warmup_s") or 0
        )
        result = engine.run(self._spec, timeout=max(600.0, seconds * 4))
        total = result["total"]
        lat = total["latency_us"]
        metrics = [
            Metric("ops_per_s", total["ops_per_s"], "ops/s", Better.HIGHER),
            Metric("mb_per_s", total["mb_per_s"], "MB/s", Better.HIGHER),
            Metric("lat_mean_us", lat["mean"], "us", Better.LOWER),
            *(
                Metric(f"lat_{q}_us", lat[q], "us", Better.LOWER, _hdr_step(lat[q]))
                for q in ("p50", "p95", "p99", "p99_9", "max")
            ),
            Metric("ops", total["ops"], "count", Better.HIGHER, resolution=1),
            Metric("measured_seconds", result["measured"]["duration_s"], "s", Better.HIGHER),
            Metric("bytes_written", total["bytes_written"], "B", Better.HIGHER),
            Metric("prepare_seconds", self._prepared.get("seconds", 0.0), "s", Better.LOWER),
            Metric("fileset_bytes", self._prepared.get("bytes", 0), "B", Better.HIGHER),
        ]
        for group in result["groups"]:
            for op in group["flowops"]:
                name = op["name"]
                metrics.append(Metric(f"{name}_ops_per_s", op["ops_per_s"], "ops/s", Better.HIGHER))
                metrics.append(
                    Metric(f"{name}_p95_us", op["latency_us"]["p95"], "us", Better.LOWER)
                )
        _record_series(ctx, result.get("timeseries") or {})
        return metrics


def _record_series(ctx: TrialContext, ts: dict[str, Any]) -> None:
    """The engine's per-second series: second i is [i, i+1) s after the warm-up."""
    step = float(ts.get("interval_s") or 1.0)
    for name, unit, values in (
        ("ops_per_s", "ops/s", ts.get("ops_per_s") or []),
        ("mb_per_s", "MB/s", ts.get("mb_per_s") or []),
    ):
        if values:
            ctx.series(name, unit, "higher", [i * step for i in range(len(values))], values)
    for q, values in (ts.get("latency_us") or {}).items():
        points = [(i * step, v) for i, v in enumerate(values) if v is not None]
        if points:
            ctx.series(f"lat_{q}_us", "us", "lower", [t for t, _ in points], [v for _, v in points])


def _personality(name: str, summary: str, threads: dict[Scale, Any]) -> type[_Personality]:
    """A personality's workload: only its name, summary and threads per scale differ."""
    title = name.capitalize()
    fields = {"name": name, "summary": summary, "scale_defaults": _defaults(threads)}
    return type(title, (_Personality,), {**fields, "__module__": __name__, "__qualname__": title})


Fileserver = _personality(
    "fileserver",
    "filebench fileserver: 10,000 files of 128 KiB (gamma), create-write-append-read-delete-"
    "stat, 50 threads",
    {Scale.TINY: [1, 4], Scale.QUICK: [1, 4, 16], Scale.FULL: [1, 2, 4, 8, 16, 32, 64]},
)
Varmail = _personality(
    "varmail",
    "filebench varmail: 1,000 files of 16 KiB in one directory, delete-create-append-fsync-"
    "read, 16 threads",
    {Scale.TINY: 4, Scale.QUICK: 16, Scale.FULL: 16},
)
Webserver = _personality(
    "webserver",
    "filebench webserver: 1,000 files of 16 KiB, 10 whole-file reads per log append, 100 threads",
    {Scale.TINY: 4, Scale.QUICK: 100, Scale.FULL: 100},
)
