"""sysbench-fileio: sysbench's file I/O test, as in the classic ext4 vs xfs comparison
(random 16 KiB reads and writes with O_DIRECT in 1 x 1 GiB, 128 x 8 MiB and 3072 x 16 KiB
files).

`layout` is `COUNTxSIZE`: COUNT files of SIZE each (sysbench's --file-num and
--file-total-size = COUNT x SIZE). The full scale sweeps the classic three; quick and tiny
sweep smaller files of the same shapes, and the value stored with every result is the one
that ran.

`prepare` runs `sysbench fileio prepare` untimed in a directory of the filesystem under
test, except for `seqwr`: there the files do not exist yet and the timed run creates and
allocates them (after a prepare, seqwr would only rewrite them, which is `seqrewr`).
The fsync policy is explicit and recorded: `fsync_freq` (sysbench's default: an fsync
every 100 requests; 0 = none) and `fsync_end` (an fsync at the end of the test).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from fsbench.system import proc
from fsbench.system.errors import TrialFailed, Unsupported
from fsbench.system.units import Bytes, format_size, parse_size
from fsbench.workloads import _tools
from fsbench.workloads.base import CacheState, Flush, Params, Scale, Tool, TrialContext, Workload
from fsbench.workloads.metric import Better, Metric

Mode = Literal["seqwr", "seqrewr", "seqrd", "rndrd", "rndwr", "rndrw"]
MODES: tuple[Mode, ...] = ("seqwr", "seqrewr", "seqrd", "rndrd", "rndwr", "rndrw")
READ_MODES = frozenset({"seqrd", "rndrd", "rndrw"})
WRITE_MODES = frozenset({"seqwr", "seqrewr", "rndwr", "rndrw"})
CLASSIC_LAYOUTS = ("1x1G", "128x8M", "3072x16K")

SUBDIR = "sysbench-fileio"
MIB = 1 << 20
_MARGIN_MIN = 64 * MIB
_LAYOUT_RE = re.compile(r"^\s*(\d+)\s*x\s*(\S+)\s*$", re.IGNORECASE)
_SLOWEST_BYTES_PER_S = 4 * MIB
_TIMEOUT_SLACK = 600.0


def parse_layout(text: str) -> tuple[int, int]:
    """'128x8M' -> (128, 8 MiB): file count and the size of each file."""
    m = _LAYOUT_RE.match(text)
    if not m:
        raise ValueError(f"layout {text!r} is not COUNTxSIZE (examples: 1x1G, 128x8M)")
    count, size = int(m.group(1)), parse_size(m.group(2))
    if count < 1 or size < 1:
        raise ValueError(f"layout {text!r}: count and size must be positive")
    return count, size


class SysbenchFileioParams(Params):
    mode: Mode = Field(
        default="rndrw",
        description="--file-test-mode: seqwr (creates the files), seqrewr, seqrd, rndrd, "
        "rndwr, rndrw",
    )
    layout: str = Field(description="COUNTxSIZE: COUNT files of SIZE each, e.g. 128x8M")
    block_size: Annotated[
        Bytes, Field(gt=0, description="bytes per request (--file-block-size)")
    ] = 16 * 1024
    direct: bool = Field(
        default=True, description="O_DIRECT (--file-extra-flags=direct); off: buffered"
    )
    threads: Annotated[int, Field(ge=1, le=1024, description="threads (--threads)")] = 1
    duration: Annotated[int, Field(ge=1, le=86400, description="seconds of the test (--time)")]
    fsync_freq: Annotated[
        int,
        Field(ge=0, description="fsync every N requests (--file-fsync-freq); 0: none"),
    ] = 100
    fsync_end: bool = Field(
        default=True, description="an fsync at the end of the test (--file-fsync-end)"
    )
    rw_ratio: Annotated[
        float, Field(gt=0, description="reads per write of rndrw (--file-rw-ratio)")
    ] = 1.5

    @field_validator("layout")
    @classmethod
    def _normal_layout(cls, value: str) -> str:
        count, size = parse_layout(value)
        return f"{count}x{format_size(size)}"

    @model_validator(mode="after")
    def _whole_blocks(self) -> SysbenchFileioParams:
        _, size = parse_layout(self.layout)
        if size < self.block_size or size % self.block_size:
            raise ValueError(
                f"layout {self.layout}: each file must be a whole number of "
                f"{format_size(self.block_size)} blocks"
            )
        return self

    @property
    def file_num(self) -> int:
        return parse_layout(self.layout)[0]

    @property
    def total_size(self) -> int:
        count, size = parse_layout(self.layout)
        return count * size


# -- parsing sysbench's report -------------------------------------------------------------

_FIELDS: dict[str, str] = {
    "reads_s": r"reads/s:\s*([\d.]+)",
    "writes_s": r"writes/s:\s*([\d.]+)",
    "fsyncs_s": r"fsyncs/s:\s*([\d.]+)",
    "read_mib_s": r"read, MiB/s:\s*([\d.]+)",
    "write_mib_s": r"written, MiB/s:\s*([\d.]+)",
    "total_time_s": r"total time:\s*([\d.]+)s",
    "events": r"total number of events:\s*(\d+)",
    "lat_min_ms": r"^\s*min:\s*([\d.]+)\s*$",
    "lat_avg_ms": r"^\s*avg:\s*([\d.]+)\s*$",
    "lat_max_ms": r"^\s*max:\s*([\d.]+)\s*$",
    "lat_p_ms": r"^\s*\d+(?:\.\d+)?th percentile:\s*([\d.]+)\s*$",
    "lat_sum_ms": r"^\s*sum:\s*([\d.]+)\s*$",
}
_REQUIRED = ("reads_s", "writes_s", "read_mib_s", "write_mib_s", "total_time_s", "events")


@dataclass(frozen=True)
class SysbenchResult:
    reads_s: float
    writes_s: float
    fsyncs_s: float
    read_mib_s: float
    write_mib_s: float
    total_time_s: float
    events: int
    lat_avg_ms: float | None  # sysbench prints 2 decimals: sum/events is more precise
    lat_max_ms: float | None
    lat_p95_ms: float | None


def parse_sysbench_fileio(text: str) -> SysbenchResult:
    """The numbers of a `sysbench fileio ... run` report (sysbench 1.0)."""
    # The latency block's min/avg/max/sum lines are the only ones of that shape; the
    # "Threads fairness" block uses "events (avg/stddev)", which these patterns skip.
    lat_block = text.split("Latency (ms):", 1)[1] if "Latency (ms):" in text else ""
    found: dict[str, float] = {}
    for key, pattern in _FIELDS.items():
        source = lat_block if key.startswith("lat_") else text
        m = re.search(pattern, source, re.MULTILINE)
        if m:
            found[key] = float(m.group(1))
    missing = [k for k in _REQUIRED if k not in found]
    if missing:
        raise ValueError(f"sysbench report without {', '.join(missing)}")
    events = int(found["events"])
    lat_avg = found.get("lat_avg_ms")
    if "lat_sum_ms" in found and events > 0:
        lat_avg = found["lat_sum_ms"] / events
    return SysbenchResult(
        reads_s=found["reads_s"],
        writes_s=found["writes_s"],
        fsyncs_s=found.get("fsyncs_s", 0.0),
        read_mib_s=found["read_mib_s"],
        write_mib_s=found["write_mib_s"],
        total_time_s=found["total_time_s"],
        events=events,
        lat_avg_ms=lat_avg,
        lat_max_ms=found.get("lat_max_ms"),
        lat_p95_ms=found.get("lat_p_ms"),
    )


def result_metrics(mode: str, r: SysbenchResult) -> list[Metric]:
    """The metrics of one mode: only the directions the mode does."""
    # sysbench prints every rate and latency with 2 decimals (lat_avg_ms is sum / events).
    step = 0.01
    out: list[Metric] = []
    if mode in READ_MODES:
        out += [
            Metric("read_mib_s", r.read_mib_s, "MiB/s", Better.HIGHER, step),
            Metric("reads_s", r.reads_s, "ops/s", Better.HIGHER, step),
        ]
    if mode in WRITE_MODES:
        out += [
            Metric("write_mib_s", r.write_mib_s, "MiB/s", Better.HIGHER, step),
            Metric("writes_s", r.writes_s, "ops/s", Better.HIGHER, step),
            # sysbench prints rates only: bytes = rate x its own total time.
            Metric("bytes_written", r.write_mib_s * r.total_time_s * (1 << 20), "B", Better.HIGHER),
            Metric("fsyncs_s", r.fsyncs_s, "ops/s", Better.HIGHER, step),
        ]
    if r.lat_avg_ms is not None:
        out.append(Metric("lat_avg_ms", r.lat_avg_ms, "ms", Better.LOWER))
    if r.lat_p95_ms is not None:
        out.append(Metric("lat_p95_ms", r.lat_p95_ms, "ms", Better.LOWER, step))
    if r.lat_max_ms is not None:
        out.append(Metric("lat_max_ms", r.lat_max_ms, "ms", Better.LOWER, step))
    return out


# -- running sysbench ------------------------------------------------------------------------


def file_args(params: SysbenchFileioParams) -> list[str]:
    return [
        f"--file-num={params.file_num}",
        f"--file-total-size={params.total_size}",
        f"--file-block-size={params.block_size}",
    ]


def run_args(params: SysbenchFileioParams) -> list[str]:
    args = [
        "sysbench",
        "fileio",
        *file_args(params),
        f"--file-test-mode={params.mode}",
        f"--file-fsync-freq={params.fsync_freq}",
        f"--file-fsync-end={'on' if params.fsync_end else 'off'}",
        f"--file-rw-ratio={params.rw_ratio:g}",
        f"--threads={params.threads}",
        f"--time={params.duration}",
        "--events=0",
        "--percentile=95",
    ]
    if params.direct:
        args.append("--file-extra-flags=direct")
    return [*args, "run"]


def _failure(res: proc.Result, what: str, direct: bool) -> Exception:
    text = "\n".join(p for p in (res.stderr.strip(), res.stdout.strip()) if p)
    detail = "\n".join(text.splitlines()[-40:])
    if res.returncode == 127:
        return TrialFailed("sysbench is not installed (apt-get install sysbench)", detail)
    fatal = next((ln.strip() for ln in text.splitlines() if "FATAL" in ln), "")
    if direct and "errno = 22" in fatal:
        return Unsupported(f"sysbench {what}: O_DIRECT refused: {fatal}", detail)
    msg = fatal or (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
    return TrialFailed(f"sysbench {what} failed: {msg}", detail)


class SysbenchFileio(Workload[SysbenchFileioParams]):
    name = "sysbench-fileio"
    summary = (
        "sysbench fileio (seqwr..rndrw), 16 KiB O_DIRECT in 1x1G, 128x8M, 3072x16K files: "
        "MiB/s, ops/s, latency"
    )
    scale_defaults = {
        Scale.TINY: {"mode": "rndrw", "layout": ["1x32M", "128x256K", "256x16K"], "duration": 1},
        Scale.QUICK: {
            "mode": "rndrw",
            "layout": ["1x256M", "128x2M", "3072x16K"],
            "duration": 10,
        },
        Scale.FULL: {"mode": "rndrw", "layout": list(CLASSIC_LAYOUTS), "duration": 60},
    }
    tools = (Tool("sysbench", "sysbench"),)
    cache = CacheState.COLD
    # sysbench's own numbers follow its fsync policy (a parameter); the runner's sync
    # puts whatever it left dirty on disk inside `seconds`, and counts its device bytes.
    flush = Flush.SYNC
    # A mode reports only its own directions: `headline_for` keeps those.
    headline = (
        "read_mib_s",
        "write_mib_s",
        "reads_s",
        "writes_s",
        "lat_p95_ms",
    )

    def required_bytes(self, params: SysbenchFileioParams) -> int:
        return params.total_size + max(params.total_size // 10, _MARGIN_MIN)

    def threads(self, params: SysbenchFileioParams) -> int:
        return params.threads

    def prepare(self, ctx: TrialContext, params: SysbenchFileioParams) -> None:
        workdir = ctx.mountpoint / SUBDIR
        workdir.mkdir(exist_ok=True)
        if params.mode == "seqwr":
            return  # the timed run creates the files: see the module docstring
        timeout = _TIMEOUT_SLACK + params.total_size / _SLOWEST_BYTES_PER_S
        prepare = ["sysbench", "fileio", *file_args(params), "prepare"]
        # sysbench fileio works on ./test_file.N only: it runs in the test directory.
        res = _tools.run_in(prepare, workdir, timeout=timeout)
        if not res.ok:
            raise _failure(res, "prepare", direct=False)

    def run(self, ctx: TrialContext, params: SysbenchFileioParams) -> list[Metric]:
        workdir = ctx.mountpoint / SUBDIR
        timeout = params.duration + _TIMEOUT_SLACK + params.total_size / _SLOWEST_BYTES_PER_S
        res = _tools.run_in(run_args(params), workdir, timeout=timeout)
        if not res.ok:
            raise _failure(res, "run", direct=params.direct)
        try:
            result = parse_sysbench_fileio(res.stdout)
        except ValueError as exc:
            raise TrialFailed(f"sysbench: {exc}", res.stdout[-2000:]) from exc
        return result_metrics(params.mode, result)

    def expected_read_bytes(
        self, params: SysbenchFileioParams, metrics: Mapping[str, float]
    ) -> float | None:
        if params.mode not in READ_MODES or params.direct:
            return None  # O_DIRECT reads always reach the device
        # What sysbench read, at most the data set once: the rest may be re-reads.
        asked = metrics.get("read_mib_s", 0.0) * MIB * params.duration
        return min(asked, params.total_size)
