"""dbench: N clients replaying a file-server trace (the NetBench client.txt load) for a
fixed time, in a directory on the filesystem; throughput and worst latency as dbench
measures them.

dbench is time bound: it reports MB/s over its execute phase, after a warmup, and then
deletes its files. The runner's `seconds` (the whole run, warmup and cleanup included)
says little here; the metrics are dbench's own.

Debian's dbench 4.00 has no `--warmup` option: its warmup is always `duration / 5`
(whole seconds). `warmup` = None means exactly that; another value is refused as
unsupported unless the installed dbench has the option. It exits 0 even when a client
fails (`Child failed with status 1`): a run without its `Throughput` line is a failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated

from pydantic import Field

from fsbench.system import proc
from fsbench.system.errors import TrialFailed, Unsupported
from fsbench.workloads import _tools
from fsbench.workloads.base import CacheState, Flush, Params, Scale, Tool, TrialContext, Workload
from fsbench.workloads.metric import Better, Metric

DIRNAME = "dbench"
LOADFILE = "/usr/share/dbench/client.txt"  # shipped by the Debian package
# What one client of client.txt keeps on the filesystem (~21 MB measured), with room.
_PER_CLIENT = 48 << 20
_MARGIN = 64 << 20
# Beyond duration: process start, cleanup (deltree of every client's files).
_TIMEOUT_SLACK = 600.0


class DbenchParams(Params):
    clients: Annotated[int, Field(gt=0, description="client processes replaying the trace")]
    duration: Annotated[int, Field(gt=0, description="seconds of the run, warm-up included (-t)")]
    warmup: Annotated[int, Field(ge=0)] | None = Field(
        default=None,
        description="seconds of warm-up (--warmup); none: dbench's own, duration / 5",
    )
    loadfile: str = Field(default=LOADFILE, description="the trace replayed (-c)")
    # dbench's sync policy, explicit; all off by default, as in dbench. The trace's own
    # Flush operations are fsync calls either way.
    o_sync: bool = Field(default=False, description="open files O_SYNC (-s)")
    sync_dirs: bool = Field(default=False, description="sync directory operations (-S)")
    fsync: bool = Field(default=False, description="fsync after every write (-F)")


@dataclass(frozen=True)
class Result:
    mb_per_s: float
    clients: int
    max_latency_ms: float
    # operation name -> (count, avg latency ms, max latency ms), from the final table
    operations: dict[str, tuple[int, float, float]]


_THROUGHPUT = re.compile(
    r"^Throughput\s+([\d.]+)\s+MB/sec.*?\s(\d+)\s+clients.*max_latency=([\d.]+)\s+ms", re.M
)
_OPERATION = re.compile(r"^\s*([A-Za-z]+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s*$", re.M)


def parse_output(text: str) -> Result | None:
    """The final lines of a dbench run: the operation table and the `Throughput X MB/sec
    N clients N procs max_latency=Y ms` line; None without that line."""
    m = _THROUGHPUT.search(text)
    if not m:
        return None
    ops: dict[str, tuple[int, float, float]] = {}
    table = text.rfind("Operation")
    if table >= 0:
        for op in _OPERATION.finditer(text, table):
            ops[op.group(1)] = (int(op.group(2)), float(op.group(3)), float(op.group(4)))
    return Result(float(m.group(1)), int(m.group(2)), float(m.group(3)), ops)


def first_error(res: proc.Result) -> str:
    """dbench prints everything, errors included, on stdout, and here says `failed to
    create barrier semaphore` (harmless: it falls back to another barrier)."""
    for line in (res.stderr + "\n" + res.stdout).splitlines():
        low = line.lower()
        if "barrier semaphore" in low:
            continue
        if "error" in low or "fail" in low or "invalid" in low:
            return line.strip()
    return _tools.first_error_line(res) if not res.ok else "no Throughput line in its output"


@cache
def _has_warmup_option() -> bool:
    res = proc.run(["dbench", "--help"], timeout=20)
    return "--warmup" in res.stdout + res.stderr


def argv(params: DbenchParams, directory: Path, warmup_option: bool) -> list[str]:
    args = ["dbench", "-D", str(directory), "-t", str(params.duration), "-c", params.loadfile]
    if params.warmup is not None and warmup_option:
        args.append(f"--warmup={params.warmup}")
    if params.o_sync:
        args.append("-s")
    if params.sync_dirs:
        args.append("-S")
    if params.fsync:
        args.append("-F")
    args.append(str(params.clients))
    return args


class Dbench(Workload[DbenchParams]):
    name = "dbench"
    summary = "dbench: N clients replaying a file-server trace for a fixed time: MB/s, max latency"
    scale_defaults = {
        Scale.TINY: {"clients": 2, "duration": 3},
        Scale.QUICK: {"clients": [1, 6, 12], "duration": 10},
        # dbench's default time limit, and the suite comparisons' 1..128 clients.
        Scale.FULL: {"clients": [1, 6, 12, 48, 128], "duration": 600},
    }
    tools = (Tool("dbench", "dbench"),)
    cache = CacheState.WARM  # it writes its own files first
    # Time bound, and it deletes what it wrote: nothing for a flush to measure.
    flush = Flush.NONE
    headline = ("mb_per_s", "max_latency_ms")

    def required_bytes(self, params: DbenchParams) -> int:
        return params.clients * _PER_CLIENT + _MARGIN

    def threads(self, params: DbenchParams) -> int:
        return params.clients

    def prepare(self, ctx: TrialContext, params: DbenchParams) -> None:
        if not Path(params.loadfile).is_file():
            raise TrialFailed(f"dbench loadfile {params.loadfile} not found")
        if (
            params.warmup is not None
            and params.warmup != params.duration // 5
            and not _has_warmup_option()
        ):
            raise Unsupported(
                f"this dbench has no --warmup option: its warmup is duration / 5 = "
                f"{params.duration // 5} s, not {params.warmup} s"
            )
        (ctx.mountpoint / DIRNAME).mkdir(exist_ok=True)

    def run(self, ctx: TrialContext, params: DbenchParams) -> list[Metric]:
        warmup_option = params.warmup is not None and _has_warmup_option()
        res = proc.run(
            argv(params, ctx.mountpoint / DIRNAME, warmup_option),
            timeout=params.duration + _TIMEOUT_SLACK,
        )
        result = parse_output(res.stdout)
        if not res.ok or result is None:
            raise _tools.tool_failed("dbench", res, first_error(res))
        # dbench prints every figure with 3 decimals.
        metrics = [
            Metric("mb_per_s", result.mb_per_s, "MB/s", Better.HIGHER, resolution=0.001),
            Metric("max_latency_ms", result.max_latency_ms, "ms", Better.LOWER, resolution=0.001),
        ]
        # The trace's Flush is fsync(2): its latency is the filesystem's commit cost.
        if "Flush" in result.operations:
            _count, avg, _max = result.operations["Flush"]
            metrics.append(
                Metric("fsync_avg_latency_ms", avg, "ms", Better.LOWER, resolution=0.001)
            )
        return metrics
