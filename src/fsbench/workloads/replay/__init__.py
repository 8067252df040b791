"""replay: a trace of a program's filesystem calls (`fsbench record`, docs/replay.md)
replayed by fsbench-engine on the filesystem under test.

prepare (untimed) checks the whole trace and makes its starting tree in an empty
directory (`fsbench-engine replay prepare`); the runner then syncs and drops caches; run
replays the calls (`fsbench-engine replay run`), one engine thread per recorded thread,
each in its recorded order and waiting for other threads' earlier calls on the same
path or descriptor, as fast as possible (`timing = "fast"`) or with the recorded gaps
between calls divided by `speed` (`timing = "recorded"`).

A call whose result differs from the recording's (an error where the original succeeded,
fewer bytes) is counted (`mismatches`) and flags the trial `replay-mismatch`, never
skipped silently. The trace is refused in one line before anything runs when it is
truncated, of another version or names a path outside its tree.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from fsbench.system import engine
from fsbench.workloads.base import CacheState, Flush, Params, Scale, TrialContext, Workload
from fsbench.workloads.metric import Better, Metric, bucket_width
from fsbench.workloads.personalities import HDR_BITS

DIR = "replay"
_MARGIN = 64 << 20  # journal and metadata overhead that matters on small filesystems


class ReplayParams(Params):
    trace: str | None = Field(
        default=None, description="the trace replayed: a file `fsbench record -o FILE -- CMD` wrote"
    )
    timing: Literal["fast", "recorded"] = Field(
        default="fast",
        description="fast: each call as soon as its thread and the calls it depends on "
        "allow; recorded: also the recorded gap before each call, divided by speed",
    )
    speed: float = Field(
        default=1.0, gt=0, le=1e6, description="recorded timing's speed-up (2: gaps halved)"
    )


@lru_cache(maxsize=8)
def _summary(trace: str, mtime_ns: int) -> dict[str, Any]:
    return engine.trace_summary(Path(trace))


def summary(trace: str) -> dict[str, Any]:
    """What the trace holds (read once per version of the file)."""
    return _summary(trace, Path(trace).stat().st_mtime_ns)


def _us_step(us: float) -> float:
    return bucket_width(us, HDR_BITS, per_unit=1000)


class Replay(Workload[ReplayParams]):
    """A recorded trace replayed by the engine."""

    name = "replay"
    summary = (
        "a program's filesystem calls recorded by `fsbench record -- CMD` (trace=FILE), replayed "
        "by fsbench-engine on each config: calls/s, latency per call kind, mismatches"
    )
    scale_defaults = {scale: {} for scale in Scale}
    cache = CacheState.COLD
    # What the replay wrote counts once it is on disk, as for the personalities.
    flush = Flush.SYNC
    headline = ("seconds", "calls_per_s", "mismatches")
    input_params = ("trace",)

    @classmethod
    def missing(cls) -> str | None:
        if engine.find_engine() is None:
            return f"{engine.ENGINE} not built: `make install` builds it (Rust >= 1.88, rustup)"
        return None

    def refuses(self, params: ReplayParams) -> str | None:
        if params.trace is None:
            return "needs trace=FILE: a trace `fsbench record -o FILE -- COMMAND` wrote"
        if not Path(params.trace).is_file():
            return f"trace {params.trace}: no such file"
        return engine.trace_refusal(Path(params.trace))

    def _spec(self, ctx: TrialContext, params: ReplayParams) -> dict[str, Any]:
        return {
            "schema": engine.SCHEMA,
            "trace": str(Path(params.trace or "").resolve()),
            "dir": str(ctx.mountpoint / DIR),
            "timing": params.timing,
            "speed": params.speed,
            # one thread replays in a descriptor table of its own (docs/replay.md)
            "threads": self.threads(params),
        }

    def required_bytes(self, params: ReplayParams) -> int:
        if params.trace is None or not Path(params.trace).is_file():
            return 0
        held = summary(params.trace)
        written = sum(
            int(k.get("bytes", 0))
            for name, k in (held.get("kinds") or {}).items()
            if name.startswith(("write", "pwrite"))
        )
        return int(held["tree"]["bytes"]) + written + _MARGIN

    def threads(self, params: ReplayParams) -> int:
        if params.trace is None or not Path(params.trace).is_file():
            return 1
        return max(1, int(summary(params.trace).get("threads") or 1))

    def prepare(self, ctx: TrialContext, params: ReplayParams) -> None:
        where = ctx.mountpoint / DIR
        if where.exists():  # an earlier trial's tree, as the replay left it
            shutil.rmtree(where)
        engine.replay_prepare(self._spec(ctx, params), timeout=7200)

    def run(self, ctx: TrialContext, params: ReplayParams) -> list[Metric]:
        result = engine.replay_run(self._spec(ctx, params), timeout=86400)
        measured = result["measured"]
        # Fidelity: bytes each kind moved against the recording's (a short read, a write
        # refused), and recorded calls the replay did not make.
        unlike = sum(abs(int(k["bytes"]) - int(k["recorded_bytes"])) for k in result["kinds"])
        recorded = int(summary(params.trace or "")["calls"])
        metrics = [
            Metric("replay_seconds", measured["elapsed_s"], "s", Better.LOWER),
            Metric("bytes_unlike_recording", unlike, "B", Better.LOWER, resolution=1),
            Metric("calls_not_replayed", recorded - measured["calls"], "count", Better.LOWER, 1),
            Metric("calls", measured["calls"], "count", Better.HIGHER, resolution=1),
            Metric("calls_per_s", measured["calls_per_s"], "calls/s", Better.HIGHER),
            Metric(
                "mismatches", result["mismatches"]["total"], "count", Better.LOWER, resolution=1
            ),
        ]
        for kind in result["kinds"]:
            name, lat = kind["kind"], kind["latency_us"]
            metrics.append(Metric(f"{name}_calls", kind["calls"], "count", Better.HIGHER, 1))
            if kind["recorded_bytes"] or kind["bytes"]:
                metrics.append(Metric(f"{name}_bytes", kind["bytes"], "B", Better.HIGHER, 1))
            for q in ("p50", "p99"):
                metrics.append(
                    Metric(f"{name}_{q}_us", lat[q], "us", Better.LOWER, _us_step(lat[q]))
                )
        return metrics

    def check(self, params: ReplayParams, metrics: Mapping[str, float]) -> dict[str, str]:
        wrong = int(metrics.get("mismatches", 0))
        unlike = int(metrics.get("bytes_unlike_recording", 0))
        missed = int(metrics.get("calls_not_replayed", 0))
        if not (wrong or unlike or missed):
            return {}
        said = [
            f"{n} {what}"
            for n, what in (
                (wrong, "calls' results differed from the recording's"),
                (unlike, "bytes moved unlike the recording"),
                (missed, "recorded calls not replayed"),
            )
            if n
        ]
        return {"replay-mismatch": "; ".join(said)}
