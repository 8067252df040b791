"""postmark: NetApp's small-file benchmark (mail and news servers): make a pool of files,
run transactions on them (read or append, create or delete), delete them all.

postmark reads its configuration as commands on stdin (`set location <dir on the
filesystem>`, `run`, `quit`). It prints times in whole seconds, and never less than 1:
so the phases are timed with our monotonic clock from its progress messages
("Creating files...", "Performing transactions", "Deleting files...", which it flushes
as it goes), and every rate is computed from those times. The counts (files created,
read, appended, deleted; bytes read and written) are postmark's.

Rates as postmark defines them: transactions per second of the transaction phase;
files created, and MB read and written, per second of the whole run; files created
(deleted) alone per second of the creation (deletion) phase.

postmark exits 0 whatever happens, printing `Error: ...` lines on stderr for every file
it fails to open or delete: any of those makes the trial failed.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field, model_validator

from fsbench.system.units import Bytes
from fsbench.workloads import _tools
from fsbench.workloads.base import CacheState, Flush, Params, Scale, Tool, TrialContext, Workload
from fsbench.workloads.metric import Better, Metric

DIRNAME = "postmark"
_MARGIN = 64 << 20
_TIMEOUT_BASE = 600.0
_TIMEOUT_PER_TRANSACTION = 0.05

# Progress messages that open each phase; "Time:" starts the final report.
CREATE = "Creating files..."
TRANSACT = "Performing transactions"
DELETE = "Deleting files..."
REPORT = "Time:"
MARKERS = (CREATE, TRANSACT, DELETE, REPORT)


class PostmarkParams(Params):
    files: Annotated[int, Field(gt=0, description="files of the initial pool (set number)")]
    transactions: Annotated[
        int, Field(gt=0, description="transactions: read or append, create or delete")
    ]
    min_size: Annotated[Bytes, Field(gt=0, description="smallest file made (set size)")]
    max_size: Annotated[Bytes, Field(gt=0, description="largest file made (set size)")]
    subdirectories: Annotated[
        int, Field(ge=0, description="subdirectories the files spread over; 0: none")
    ] = 0
    read_block: Annotated[Bytes, Field(gt=0, description="bytes per read call (set read)")] = 512
    write_block: Annotated[Bytes, Field(gt=0, description="bytes per write call (set write)")] = 512
    # postmark has no fsync: its only I/O policy is stdio buffering or plain calls.
    buffering: bool = Field(
        default=True, description="stdio buffering (postmark's default); off: read()/write()"
    )
    seed: int = Field(
        default=42, description="random seed (postmark's default: every run does the same)"
    )

    @model_validator(mode="after")
    def _range(self) -> PostmarkParams:
        if self.min_size > self.max_size:
            raise ValueError(f"min_size {self.min_size} > max_size {self.max_size}")
        return self


def config(params: PostmarkParams, location: str) -> str:
    """postmark's commands for one run."""
    lines = [
        f"set location {location}",
        f"set number {params.files}",
        f"set transactions {params.transactions}",
        f"set size {params.min_size} {params.max_size}",
        f"set read {params.read_block}",
        f"set write {params.write_block}",
        f"set buffering {'true' if params.buffering else 'false'}",
        f"set seed {params.seed}",
        "set report verbose",
        "run",
        "quit",
    ]
    if params.subdirectories:  # postmark refuses `set subdirectories 0`, its default
        lines.insert(4, f"set subdirectories {params.subdirectories}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Report:
    """postmark's verbose report: counts and bytes (its seconds are whole and not used)."""

    seconds_total: int
    seconds_transactions: int
    created: int
    created_alone: int
    read: int
    appended: int
    deleted: int
    deleted_alone: int
    read_bytes: float
    written_bytes: float
    # The step of each amount as printed (2 decimals of its unit: 0.01 MiB for megabytes).
    read_step: float = 0.0
    written_step: float = 0.0


_UNITS = {"bytes": 1, "kilobytes": 1 << 10, "megabytes": 1 << 20, "gigabytes": 1 << 30}
_PATTERNS = {
    "seconds_total": r"^\s*(\d+) seconds total",
    "seconds_transactions": r"^\s*(\d+) seconds of transactions",
    "created": r"^\s*(\d+) created \(",
    "created_alone": r"Creation alone: (\d+) files",
    "read": r"^\s*(\d+) read \(",
    "appended": r"^\s*(\d+) appended \(",
    "deleted": r"^\s*(\d+) deleted \(",
    "deleted_alone": r"Deletion alone: (\d+) files",
}
_DATA = re.compile(r"^\s*([\d.]+) (bytes|kilobytes|megabytes|gigabytes) (read|written) \(", re.M)


def parse_report(text: str) -> Report | None:
    """The verbose report after `Time:`; None if it is not there. Data amounts are in
    postmark's binary units (a "kilobyte" is 1024 bytes), printed to 2 decimals."""
    start = text.rfind(REPORT)
    if start < 0:
        return None
    body = text[start:]
    counts: dict[str, int] = {}
    for key, pattern in _PATTERNS.items():
        m = re.search(pattern, body, re.M)
        if not m:
            return None
        counts[key] = int(m.group(1))
    data = {kind: _amount(value, unit) for value, unit, kind in _DATA.findall(body)}
    if set(data) != {"read", "written"}:
        return None
    (read, read_step), (written, written_step) = data["read"], data["written"]
    return Report(
        **counts,
        read_bytes=read,
        written_bytes=written,
        read_step=read_step,
        written_step=written_step,
    )


def _amount(value: str, unit: str) -> tuple[float, float]:
    """An amount as postmark prints it ("157.40", "megabytes"): bytes, and the bytes of
    one step of its last decimal."""
    decimals = len(value.partition(".")[2])
    return float(value) * _UNITS[unit], _UNITS[unit] * 10.0**-decimals


@dataclass(frozen=True)
class Phases:
    create: float
    transactions: float
    delete: float


def phases(seen: dict[str, float]) -> Phases | None:
    """Phase durations from the times the progress messages appeared; the deletion phase
    ends when the report starts (it includes removing the subdirectories)."""
    if not all(m in seen for m in MARKERS):
        return None
    return Phases(
        create=seen[TRANSACT] - seen[CREATE],
        transactions=seen[DELETE] - seen[TRANSACT],
        delete=seen[REPORT] - seen[DELETE],
    )


def metrics_from(params: PostmarkParams, report: Report, ph: Phases, total: float) -> list[Metric]:
    def rate(n: float, seconds: float) -> float:
        return n / seconds if seconds > 0 else 0.0

    return [
        Metric(
            "transactions_per_s", rate(params.transactions, ph.transactions), "tx/s", Better.HIGHER
        ),
        Metric("files_created_per_s", rate(report.created, total), "files/s", Better.HIGHER),
        Metric("read_mb_per_s", rate(report.read_bytes, total) / _tools.MB, "MB/s", Better.HIGHER),
        Metric(
            "write_mb_per_s", rate(report.written_bytes, total) / _tools.MB, "MB/s", Better.HIGHER
        ),
        Metric(
            "create_files_per_s", rate(report.created_alone, ph.create), "files/s", Better.HIGHER
        ),
        Metric(
            "delete_files_per_s", rate(report.deleted_alone, ph.delete), "files/s", Better.HIGHER
        ),
        Metric("transaction_seconds", ph.transactions, "s", Better.LOWER),
        Metric("tool_seconds", total, "s", Better.LOWER),
        Metric("transactions", params.transactions, "count", Better.HIGHER, resolution=1),
        Metric("files_created", report.created, "count", Better.HIGHER, resolution=1),
        Metric("read_bytes", report.read_bytes, "B", Better.HIGHER, report.read_step),
        Metric("written_bytes", report.written_bytes, "B", Better.HIGHER, report.written_step),
        Metric("bytes_written", report.written_bytes, "B", Better.HIGHER, report.written_step),
    ]


# Phoronix's pts/postmark: 500 files of 5-512 KiB (25,000 transactions at full).
_SHAPE = {"files": 500, "min_size": "5K", "max_size": "512K"}


class Postmark(Workload[PostmarkParams]):
    name = "postmark"
    summary = (
        "postmark: small-file transactions (read/append, create/delete) on a pool of files: "
        "transactions/s, files/s, MB/s"
    )
    scale_defaults = {
        Scale.TINY: {**_SHAPE, "transactions": 3000},
        Scale.QUICK: {**_SHAPE, "transactions": 8000},
        Scale.FULL: {**_SHAPE, "transactions": 25000},
    }
    tools = (Tool("postmark", "postmark"),)
    cache = CacheState.WARM  # it makes its own files
    # Everything is deleted by the end; the syncfs writes what is left (journal, frees).
    flush = Flush.SYNC
    headline = ("transactions_per_s",)

    def required_bytes(self, params: PostmarkParams) -> int:
        # The pool can grow by creates and appends: twice its largest size.
        return 2 * params.files * params.max_size + _MARGIN

    def prepare(self, ctx: TrialContext, params: PostmarkParams) -> None:
        (ctx.mountpoint / DIRNAME).mkdir(exist_ok=True)

    def run(self, ctx: TrialContext, params: PostmarkParams) -> list[Metric]:
        commands = config(params, str(ctx.mountpoint / DIRNAME))
        timeout = _TIMEOUT_BASE + _TIMEOUT_PER_TRANSACTION * params.transactions
        t0 = time.monotonic()
        res, seen = _tools.run_watching(["postmark"], MARKERS, input_text=commands, timeout=timeout)
        total = time.monotonic() - t0
        if not res.ok or "error" in res.stderr.lower():
            raise _tools.tool_failed("postmark", res)
        report = parse_report(res.stdout)
        ph = phases(seen)
        if report is None or ph is None:
            raise _tools.tool_failed("postmark", res, "no phases or report in its output")
        return metrics_from(params, report, ph, total)
