"""What sysbench's OLTP tests print (per-second lines, the final report, the latency
histogram), InnoDB's counters over a run, and MariaDB's refusals in its own words."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from fsbench.system import proc
from fsbench.system.errors import TrialFailed, Unsupported
from fsbench.workloads import _tools
from fsbench.workloads.metric import Better, Metric

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
    "tmpdir",
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
