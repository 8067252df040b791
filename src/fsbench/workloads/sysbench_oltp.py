"""sysbench-oltp: sysbench's OLTP tests on a real MariaDB whose data directory lives on
the filesystem under test, as in kdevops' comparison of MySQL on XFS with 16 KiB blocks
against ext4 bigalloc, with InnoDB's doublewrite buffer on and off.

The server is fsbench's own, never the one Debian's package starts: `mariadbd
--no-defaults` (no /etc/mysql file applies), its data directory `MOUNT/mariadb` owned by
the mysql user, its socket, pid file and log in the run's own directory
(`servers.socket_dir`), `--skip-networking` (no TCP at all). Clients connect as root over
that socket (MariaDB's unix_socket authentication: no password exists anywhere).

`prepare` (untimed): mariadb-install-db with the InnoDB settings (the page size can only
be chosen there), mariadbd started in the background (`servers.running`), the tables made
by `sysbench <test> prepare`, then the server stopped and started again: its shutdown
writes every dirty page and checkpoints the redo log, so what prepare wrote is on disk and
every config starts its timed run with an empty buffer pool (no dump or load of it).
The server stays up until `release`, on every path.

`run` (timed): `sysbench <test> run` for `duration` seconds with a report every second
(tps, qps and the 95th percentile of that second's latency: the series) and the latency
histogram of the whole run (p50, p95, p99 computed from it as sysbench computes its own
95th percentile). InnoDB's status counters before and after give what the run wrote
(data, redo, doublewrite) and read past the buffer pool.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import time
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from fsbench import proc, servers
from fsbench.errors import TrialFailed, Unsupported
from fsbench.units import Bytes, format_size
from fsbench.workloads import _tools, register
from fsbench.workloads.base import CacheState, Flush, Params, Scale, Tool, TrialContext, Workload
from fsbench.workloads.metric import Better, Metric

Test = Literal["oltp_read_write", "oltp_read_only", "oltp_write_only"]
FlushMethod = Literal["O_DIRECT", "O_DIRECT_NO_FSYNC", "fsync", "O_DSYNC"]
KIB = 1 << 10
MIB = 1 << 20
PAGE_SIZES = tuple(n * KIB for n in (4, 8, 16, 32, 64))

USER = "mysql"  # Debian's package makes it; mariadbd refuses to run as root
NAME = "mariadb"  # the data directory on the filesystem, and the run's socket directory
DATABASE = "sbtest"
PERCENTILE = 95  # sysbench's --percentile: what its per-second lines report
# Bytes of table per row by page size (sysbench's rows: an int key, an int, char(120),
# char(60); the primary and the secondary index), measured after a 60 s read-write run on
# 8 tables of 100k rows (378 B at 16k pages, 461 at 32k, 629 at 64k), with room.
ROW_BYTES = {4 * KIB: 400, 8 * KIB: 400, 16 * KIB: 400, 32 * KIB: 500, 64 * KIB: 680}
# What a table takes before its first row at the largest page size (64k: 4 MiB extents).
TABLE_MIN = 8 * MIB
# The server's own files: redo log (96 MiB, MariaDB's default), the system tablespace with
# its undo log (12 MiB, 76 MiB after that run), the mysql schema, the temporary tablespace.
SERVER_BYTES = 384 * MIB
_ROWS_PER_S = 20_000  # slowest prepare we allow for (this machine: ~170k rows/s)
_TIMEOUT_SLACK = 600.0
_READY_S = 60.0


class SysbenchOltpParams(Params):
    test: Test = Field(
        default="oltp_read_write",
        description="sysbench's OLTP test: oltp_read_write, oltp_read_only, oltp_write_only",
    )
    tables: Annotated[int, Field(ge=1, le=1024, description="tables (--tables)")]
    table_size: Annotated[int, Field(ge=1, description="rows per table (--table-size)")]
    threads: Annotated[int, Field(ge=1, le=1024, description="client threads (--threads)")]
    duration: Annotated[int, Field(ge=1, le=86400, description="seconds of the run (--time)")]
    doublewrite: bool = Field(
        default=True,
        description="innodb_doublewrite: every page written twice (first to the doublewrite "
        "buffer) so a torn write can be repaired; off: trust the filesystem and device",
    )
    page_size: Bytes = Field(
        default=16 * KIB,
        description="innodb_page_size (4k, 8k, 16k, 32k, 64k), fixed when the data directory "
        "is initialized",
    )
    buffer_pool: Bytes = Field(
        default=64 * MIB,
        description="innodb_buffer_pool_size: smaller than the tables, so that the "
        "filesystem is read and written (32k pages need >= 11M, 64k >= 21M)",
    )
    flush_method: FlushMethod = Field(
        default="O_DIRECT",
        description="innodb_flush_method: O_DIRECT (data files bypass the page cache), "
        "O_DIRECT_NO_FSYNC, fsync, O_DSYNC",
    )

    @field_validator("page_size")
    @classmethod
    def _innodb_page_size(cls, value: int) -> int:
        if value not in PAGE_SIZES:
            sizes = ", ".join(format_size(p).lower() for p in PAGE_SIZES)
            raise ValueError(f"innodb_page_size must be one of {sizes}")
        return value


# -- parsing sysbench's output ---------------------------------------------------------------

_INTERVAL = re.compile(
    r"^\[\s*(\d+(?:\.\d+)?)s\s*\]\s+thds:\s*\d+\s+tps:\s*([\d.]+)\s+qps:\s*([\d.]+)"
    r".*?lat \(ms,(\d+(?:\.\d+)?)%\):\s*([\d.]+)\s+err/s:\s*([\d.]+)\s+reconn/s:\s*([\d.]+)",
    re.M,
)
_BUCKET = re.compile(r"^\s*([\d.]+)\s+\|\**\s+(\d+)\s*$", re.M)
_REPORT: dict[str, str] = {
    "transactions": r"^\s*transactions:\s+(\d+)\s+\(([\d.]+) per sec\.\)",
    "queries": r"^\s*queries:\s+(\d+)\s+\(([\d.]+) per sec\.\)",
    "errors": r"^\s*ignored errors:\s+(\d+)\s+\(([\d.]+) per sec\.\)",
    "reconnects": r"^\s*reconnects:\s+(\d+)\s+\(([\d.]+) per sec\.\)",
}
_LATENCY: dict[str, str] = {
    "total_time_s": r"^\s*total time:\s+([\d.]+)s",
    "events": r"^\s*total number of events:\s+(\d+)",
    "lat_min_ms": r"^\s*min:\s+([\d.]+)\s*$",
    "lat_avg_ms": r"^\s*avg:\s+([\d.]+)\s*$",
    "lat_max_ms": r"^\s*max:\s+([\d.]+)\s*$",
    "lat_pct_ms": r"^\s*\d+(?:\.\d+)?th percentile:\s+([\d.]+)\s*$",
    "lat_sum_ms": r"^\s*sum:\s+([\d.]+)\s*$",
}
# sysbench's latency histogram: 1024 buckets, logarithmic from 0.001 to 100000 ms; a value
# is known to within one bucket (its upper end over its lower end).
_HIST_BUCKETS, _HIST_MIN_MS, _HIST_MAX_MS = 1024, 0.001, 100_000.0
HIST_STEP = math.exp(math.log(_HIST_MAX_MS / _HIST_MIN_MS) / (_HIST_BUCKETS - 1)) - 1


@dataclass(frozen=True)
class Interval:
    """One `--report-interval` line: the second it ends at, and that second's rates."""

    t: float
    tps: float
    qps: float
    pct: float  # sysbench's --percentile: which percentile lat_pct_ms is
    lat_pct_ms: float  # that percentile of the second's latencies
    errors_s: float
    reconnects_s: float


@dataclass(frozen=True)
class OltpReport:
    transactions: int
    tps: float
    queries: int
    qps: float
    errors: int
    reconnects: int
    total_time_s: float
    events: int
    lat_min_ms: float
    lat_avg_ms: float  # sum / events: sysbench prints 2 decimals
    lat_max_ms: float
    lat_pct_ms: float | None  # sysbench's own --percentile of the whole run


def parse_intervals(text: str) -> list[Interval]:
    """The per-second lines of `--report-interval=1`, in order."""
    return [
        Interval(
            t=float(m.group(1)),
            tps=float(m.group(2)),
            qps=float(m.group(3)),
            pct=float(m.group(4)),
            lat_pct_ms=float(m.group(5)),
            errors_s=float(m.group(6)),
            reconnects_s=float(m.group(7)),
        )
        for m in _INTERVAL.finditer(text)
    ]


def parse_histogram(text: str) -> list[tuple[float, int]]:
    """(bucket value in ms, count) of `--histogram`, in increasing order; [] without it."""
    start = text.find("Latency histogram")
    if start < 0:
        return []
    end = text.find("SQL statistics:", start)
    block = text[start : end if end >= 0 else len(text)]
    return [(float(m.group(1)), int(m.group(2))) for m in _BUCKET.finditer(block)]


def percentile(histogram: list[tuple[float, int]], pct: float) -> float | None:
    """The pct-th percentile of a histogram as sysbench computes its own: the value of the
    first bucket at which the running count reaches round(total x pct / 100)."""
    total = sum(count for _, count in histogram)
    if total == 0:
        return None
    wanted = math.floor(total * pct / 100 + 0.5)
    seen = 0
    for value, count in histogram:
        seen += count
        if seen >= wanted:
            return value
    return histogram[-1][0]


def parse_report(text: str) -> OltpReport:
    """The final statistics of `sysbench oltp_* run` (sysbench 1.0)."""
    found: dict[str, tuple[float, float]] = {}
    for key, pattern in _REPORT.items():
        m = re.search(pattern, text, re.M)
        if m:
            found[key] = (float(m.group(1)), float(m.group(2)))
    general = text.split("General statistics:", 1)[1] if "General statistics:" in text else ""
    lat: dict[str, float] = {}
    for key, pattern in _LATENCY.items():
        m = re.search(pattern, general, re.M)
        if m:
            lat[key] = float(m.group(1))
    missing = [k for k in ("transactions", "queries") if k not in found]
    missing += [k for k in ("total_time_s", "events", "lat_avg_ms", "lat_max_ms") if k not in lat]
    if missing:
        raise ValueError(f"sysbench report without {', '.join(missing)}")
    events = int(lat["events"])
    avg = lat["lat_sum_ms"] / events if "lat_sum_ms" in lat and events > 0 else lat["lat_avg_ms"]
    return OltpReport(
        transactions=int(found["transactions"][0]),
        tps=found["transactions"][1],
        queries=int(found["queries"][0]),
        qps=found["queries"][1],
        errors=int(found.get("errors", (0, 0))[0]),
        reconnects=int(found.get("reconnects", (0, 0))[0]),
        total_time_s=lat["total_time_s"],
        events=events,
        lat_min_ms=lat.get("lat_min_ms", 0.0),
        lat_avg_ms=avg,
        lat_max_ms=lat["lat_max_ms"],
        lat_pct_ms=lat.get("lat_pct_ms"),
    )


def report_metrics(report: OltpReport, histogram: list[tuple[float, int]]) -> list[Metric]:
    """tps, qps, latency (avg, p50/p95/p99 from the histogram, max), errors, reconnects."""
    out = [
        Metric("tps", report.tps, "tx/s", Better.HIGHER, 0.01),
        Metric("qps", report.qps, "queries/s", Better.HIGHER, 0.01),
        Metric("lat_avg_ms", report.lat_avg_ms, "ms", Better.LOWER),
    ]
    for pct in (50, 95, 99):
        value = percentile(histogram, pct)
        if value is not None:
            # Known to within its histogram bucket.
            out.append(Metric(f"lat_p{pct}_ms", value, "ms", Better.LOWER, value * HIST_STEP))
    out += [
        Metric("lat_max_ms", report.lat_max_ms, "ms", Better.LOWER, 0.01),
        Metric("errors", report.errors, "errors", Better.LOWER, 1),
        Metric("reconnects", report.reconnects, "reconnects", Better.LOWER, 1),
    ]
    return out


# -- InnoDB's counters: what the run wrote and read ------------------------------------------

# SHOW GLOBAL STATUS name -> (metric, unit): deltas over the timed run.
COUNTERS: dict[str, tuple[str, str]] = {
    "Innodb_data_written": ("innodb_bytes_written", "B"),
    "Innodb_os_log_written": ("redo_bytes_written", "B"),
    "Innodb_dblwr_pages_written": ("doublewrite_pages", "pages"),
    "Innodb_data_fsyncs": ("innodb_fsyncs", "fsyncs"),
    "Innodb_buffer_pool_reads": ("buffer_pool_misses", "pages"),
}
# SHOW GLOBAL VARIABLES recorded with every trial: what was in force, not what was asked.
VARIABLES = (
    "version",
    "datadir",
    "socket",
    "pid_file",
    "skip_networking",
    "innodb_page_size",
    "innodb_doublewrite",
    "innodb_buffer_pool_size",
    "innodb_flush_method",
    "innodb_flush_log_at_trx_commit",
    "innodb_log_file_size",
    "innodb_use_native_aio",
    "max_connections",
    "open_files_limit",
)


def parse_pairs(text: str) -> dict[str, str]:
    """`mariadb --batch --skip-column-names` output of a SHOW: name<TAB>value lines."""
    pairs = {}
    for line in text.splitlines():
        name, sep, value = line.partition("\t")
        if sep:
            pairs[name.strip()] = value.strip()
    return pairs


def counter_metrics(before: dict[str, str], after: dict[str, str]) -> list[Metric]:
    out = []
    for status, (name, unit) in COUNTERS.items():
        if status in before and status in after:
            delta = float(after[status]) - float(before[status])
            out.append(Metric(name, delta, unit, Better.LOWER, 1))
    return out


# -- MariaDB's refusals ----------------------------------------------------------------------

# Words of an [ERROR] line that refuses a setting of ours: the cell is `unsupported` (a
# page size the buffer pool is too small for, O_DIRECT the filesystem refuses).
_REFUSALS = ("innodb_page_size", "innodb_buffer_pool_size", "innodb_flush_method", "o_direct")
_ERROR = re.compile(r"\[ERROR\]\s*(.*)$", re.M)


def refusal(what: str, output: str) -> Exception:
    """An Unsupported for MariaDB's words refusing one of our settings; else TrialFailed
    with its first [ERROR] line."""
    errors = [m.group(1).strip() for m in _ERROR.finditer(output)]
    detail = "\n".join(output.strip().splitlines()[-40:])
    for line in errors:
        if any(word in line.lower() for word in _REFUSALS) or "error number 22" in line:
            return Unsupported(f"{what}: MariaDB refused the settings: {line}", detail)
    said = errors[0] if errors else (output.strip().splitlines() or ["no output"])[-1]
    return TrialFailed(f"{what} failed: {said}", detail)


def sysbench_failed(what: str, res: proc.Result) -> TrialFailed:
    fatal = next((ln.strip() for ln in res.output.splitlines() if "FATAL" in ln), "")
    if res.returncode == 127:
        return TrialFailed("sysbench is not installed (apt-get install sysbench)")
    return _tools.tool_failed(f"sysbench {what}", res, fatal)


# -- the server --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Where:
    """The server's places: its data on the filesystem under test, the rest in the run's
    own directory."""

    datadir: Path
    rundir: Path  # servers.socket_dir(run_dir, NAME): socket, pid file, log

    @property
    def socket(self) -> Path:
        return self.rundir / "mariadbd.sock"

    @property
    def pidfile(self) -> Path:
        return self.rundir / "mariadbd.pid"

    @property
    def log(self) -> Path:
        return self.rundir / "mariadbd.log"


def innodb_args(params: SysbenchOltpParams) -> list[str]:
    """The settings given both to mariadb-install-db and to every start of the server."""
    return [
        f"--innodb-page-size={params.page_size}",
        f"--innodb-buffer-pool-size={params.buffer_pool}",
        f"--innodb-flush-method={params.flush_method}",
        f"--innodb-doublewrite={'ON' if params.doublewrite else 'OFF'}",
        "--innodb-buffer-pool-dump-at-shutdown=OFF",
        "--innodb-buffer-pool-load-at-startup=OFF",
    ]


def install_argv(params: SysbenchOltpParams, where: Where) -> list[str]:
    return [
        "mariadb-install-db",
        "--no-defaults",  # first: /etc/mysql never applies
        f"--datadir={where.datadir}",
        "--auth-root-authentication-method=socket",
        "--skip-test-db",
        "--skip-name-resolve",
        *innodb_args(params),
    ]


def server_argv(params: SysbenchOltpParams, where: Where) -> list[str]:
    return [
        "mariadbd",
        "--no-defaults",
        f"--datadir={where.datadir}",
        f"--socket={where.socket}",
        f"--pid-file={where.pidfile}",
        "--skip-networking",
        f"--max-connections={max(151, params.threads + 16)}",
        *innodb_args(params),
    ]


def client_argv(where: Where, *sql: str) -> list[str]:
    """The mariadb client as root over the socket (unix_socket authentication)."""
    argv = ["mariadb", "--no-defaults", f"--socket={where.socket}", "--user=root"]
    return [*argv, "--batch", "--skip-column-names", "-e", "; ".join(sql)]


def stop_argv(where: Where) -> list[str]:
    """Its clean stop, run as the mysql user (mysql@localhost, made by mariadb-install-db);
    mariadb-admin waits until the server is gone."""
    return [
        "mariadb-admin",
        "--no-defaults",
        f"--socket={where.socket}",
        "--user=mysql",
        "shutdown",
    ]


def sysbench_argv(params: SysbenchOltpParams, where: Where, command: str) -> list[str]:
    argv = [
        "sysbench",
        params.test,
        "--db-driver=mysql",
        f"--mysql-socket={where.socket}",
        "--mysql-user=root",
        f"--mysql-db={DATABASE}",
        f"--tables={params.tables}",
        f"--table-size={params.table_size}",
        f"--threads={params.threads}",
    ]
    if command == "run":
        argv += [
            f"--time={params.duration}",
            "--events=0",
            "--report-interval=1",
            "--histogram",
            f"--percentile={PERCENTILE}",
        ]
    return [*argv, command]


def dies_with_us(argv: list[str]) -> list[str]:
    """argv with a parent-death signal: a killed fsbench leaves no sysbench client behind
    (the server, another user's, is stopped by the stale cleanup instead)."""
    return ["setpriv", "--pdeathsig", "KILL", "--", *argv]


def sql(where: Where, *statements: str, timeout: float = 120) -> str:
    res = proc.run(client_argv(where, *statements), timeout=timeout)
    if not res.ok:
        raise TrialFailed(f"mariadb: {_tools.first_error_line(res)}", res.output[-2000:])
    return res.stdout


def wait_ready(where: Where, timeout: float = _READY_S) -> None:
    """The socket exists a moment before the server accepts on it."""
    deadline = time.monotonic() + timeout
    while True:
        res = proc.run(client_argv(where, "SELECT 1"), timeout=timeout)
        if res.ok:
            return
        if time.monotonic() > deadline:
            raise TrialFailed(f"mariadbd never answered: {_tools.first_error_line(res)}")
        time.sleep(0.2)


def log_lines(log: Path, levels: tuple[str, ...] = ("[ERROR]", "[Warning]")) -> list[str]:
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return []
    return [ln.strip() for ln in text.splitlines() if any(w in ln for w in levels)]


@register
class SysbenchOltp(Workload[SysbenchOltpParams]):
    name = "sysbench-oltp"
    summary = (
        "sysbench OLTP (read-write, read-only, write-only) on MariaDB, its data on the "
        "filesystem, InnoDB doublewrite on/off and page size: tps, latency p50/p95/p99"
    )
    scale_defaults = {
        Scale.TINY: {
            "tables": 2,
            "table_size": 10_000,
            "threads": 2,
            "duration": 5,
            "buffer_pool": "32M",
        },
        Scale.QUICK: {
            "tables": 8,
            "table_size": 100_000,
            "threads": 8,
            "duration": 60,
            "buffer_pool": "64M",
        },
        Scale.FULL: {
            "tables": 16,
            "table_size": 1_000_000,
            "threads": 32,
            "duration": 600,
            "buffer_pool": "512M",
        },
    }
    tools = (
        Tool("sysbench", "sysbench"),
        Tool("mariadbd", "mariadb-server"),
        Tool("mariadb-install-db", "mariadb-server"),
        Tool("mariadb", "mariadb-client"),
        Tool("mariadb-admin", "mariadb-client"),
        Tool("setpriv", "util-linux"),
    )
    # Page cache dropped and the buffer pool empty (the server restarted in prepare);
    # never a remount: the server holds the filesystem.
    cache = CacheState.COLD
    # InnoDB makes its commits durable itself (redo log fsync at every commit).
    flush = Flush.NONE
    headline = ("tps", "lat_p99_ms")
    steady_series = "tps"

    def __init__(self) -> None:
        self._server: ExitStack | None = None

    def required_bytes(self, params: SysbenchOltpParams) -> int:
        per_table = max(TABLE_MIN, params.table_size * ROW_BYTES[params.page_size])
        return SERVER_BYTES + params.tables * per_table

    def threads(self, params: SysbenchOltpParams) -> int:
        return params.threads

    def _where(self, ctx: TrialContext) -> Where:
        return Where(ctx.mountpoint / NAME, servers.socket_dir(ctx.run_dir, NAME))

    def _start(self, params: SysbenchOltpParams, where: Where, run_dir: Path) -> None:
        """mariadbd in the background until `_stop` (or `release`)."""
        for leftover in (where.socket, where.pidfile, where.log):
            leftover.unlink(missing_ok=True)
        noted = servers.Noted(
            name="mariadbd",
            user=USER,
            stop=stop_argv(where),
            pidfile=str(where.pidfile),
            owner=os.getpid(),
        )
        stack = ExitStack()
        try:
            stack.enter_context(
                servers.running(
                    noted,
                    servers.note_path(run_dir),
                    server_argv(params, where),
                    where.socket,
                    log=where.log,
                )
            )
        except TrialFailed as exc:
            stack.close()
            said = where.log.read_text(errors="replace") if where.log.exists() else exc.detail
            raise refusal("mariadbd", said) from exc
        except BaseException:
            stack.close()
            raise
        self._server = stack
        wait_ready(where)

    def _stop(self) -> None:
        stack, self._server = self._server, None
        if stack is not None:
            stack.close()

    def prepare(self, ctx: TrialContext, params: SysbenchOltpParams) -> None:
        where = self._where(ctx)
        servers.owned_dir(where.datadir, USER)
        servers.owned_dir(where.rundir, USER)
        install = install_argv(params, where)
        res = proc.run(servers.as_user(USER, install), timeout=_TIMEOUT_SLACK)
        if not res.ok:
            raise refusal("mariadb-install-db", res.output)

        self._start(params, where, ctx.run_dir)
        sql(where, f"CREATE DATABASE {DATABASE}")
        timeout = _TIMEOUT_SLACK + params.tables * params.table_size / _ROWS_PER_S
        res = proc.run(dies_with_us(sysbench_argv(params, where, "prepare")), timeout=timeout)
        if not res.ok:
            raise sysbench_failed("prepare", res)
        # A clean shutdown writes every dirty page and checkpoints the redo log; the timed
        # run starts with an empty buffer pool.
        self._stop()
        self._start(params, where, ctx.run_dir)
        variables = parse_pairs(
            sql(where, f"SHOW GLOBAL VARIABLES WHERE Variable_name IN {_names(VARIABLES)}")
        )
        ctx.facts["mariadb"] = {
            "install": install,
            "server": server_argv(params, where),
            "pid_file": str(where.pidfile),
            "variables": variables,
        }
        ctx.facts["sysbench"] = {"run": sysbench_argv(params, where, "run")}

    def run(self, ctx: TrialContext, params: SysbenchOltpParams) -> list[Metric]:
        where = self._where(ctx)
        counted = f"SHOW GLOBAL STATUS WHERE Variable_name IN {_names(COUNTERS)}"
        before = parse_pairs(sql(where, counted))
        res = proc.run(
            dies_with_us(sysbench_argv(params, where, "run")),
            timeout=params.duration + _TIMEOUT_SLACK,
        )
        if not res.ok:
            raise sysbench_failed("run", res)
        after = parse_pairs(sql(where, counted))
        try:
            report = parse_report(res.stdout)
        except ValueError as exc:
            raise TrialFailed(f"sysbench: {exc}", res.stdout[-2000:]) from exc
        intervals = parse_intervals(res.stdout)
        t = [i.t for i in intervals]
        ctx.series("tps", "tx/s", "higher", t, [i.tps for i in intervals])
        ctx.series(f"lat_p{PERCENTILE}_ms", "ms", "lower", t, [i.lat_pct_ms for i in intervals])
        facts: dict[str, Any] = ctx.facts.setdefault("mariadb", {})
        facts["log"] = log_lines(where.log)[-20:]
        return report_metrics(report, parse_histogram(res.stdout)) + counter_metrics(before, after)

    def release(self, ctx: TrialContext, params: SysbenchOltpParams) -> None:
        self._stop()
        # Stopped: its socket directory goes (its log's warnings are in the facts), and
        # scratch-<pid> when no other server's is left.
        rundir = self._where(ctx).rundir
        shutil.rmtree(rundir, ignore_errors=True)
        with contextlib.suppress(OSError):
            rundir.parent.rmdir()


def _names(names: Iterable[str]) -> str:
    """An SQL list of our own constant names: ('a', 'b')."""
    return "(" + ", ".join(f"'{n}'" for n in names) + ")"
