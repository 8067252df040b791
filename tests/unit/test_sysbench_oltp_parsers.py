"""sysbench-oltp without a server: sysbench's and MariaDB's outputs, captured from real runs
(sysbench 1.0.20 against MariaDB 10.11 through a Unix socket; tests/data), parsed into
the workload's metrics and series; refusals told from failures; the commands it runs;
its parameters."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from fsbench.system import proc
from fsbench.system.errors import TrialFailed, Unsupported
from fsbench.workloads import get
from fsbench.workloads.base import Better, Scale
from fsbench.workloads.sysbench_oltp import SysbenchOltp
from fsbench.workloads.sysbench_oltp.mariadb import (
    Where,
    install_argv,
    server_argv,
    stop_argv,
    sysbench_argv,
)
from fsbench.workloads.sysbench_oltp.output import (
    HIST_STEP,
    counter_metrics,
    parse_histogram,
    parse_intervals,
    parse_pairs,
    parse_report,
    percentile,
    refusal,
    report_metrics,
    sysbench_failed,
)
from fsbench.workloads.sysbench_oltp.params import SysbenchOltpParams

DATA = Path(__file__).resolve().parent.parent / "data"


def load(name: str) -> str:
    return (DATA / name).read_text()


def params(**over: object) -> SysbenchOltpParams:
    base: dict[str, object] = {"tables": 2, "table_size": 10_000, "threads": 2, "duration": 3}
    return SysbenchOltpParams.model_validate({**base, **over})


@pytest.mark.parametrize("test", ["read_write", "read_only"])
def test_report_of_a_real_run(test: str) -> None:
    text = load(f"sysbench_oltp_{test}.txt")
    report = parse_report(text)
    assert report.events == report.transactions > 0
    assert report.tps == pytest.approx(report.transactions / report.total_time_s, rel=1e-3)
    assert report.qps > report.tps
    # The average from the latency sum (sysbench prints avg with 2 decimals).
    assert report.lat_min_ms <= report.lat_avg_ms <= report.lat_max_ms
    assert report.reconnects == 0


def test_report_counts_ignored_errors() -> None:
    """The read-write sample had one ignored error (a deadlock sysbench retries)."""
    report = parse_report(load("sysbench_oltp_read_write.txt"))
    assert (report.transactions, report.tps, report.queries, report.errors) == (
        2246,
        747.25,
        44936,
        1,
    )
    assert report.total_time_s == pytest.approx(3.005)


def test_report_without_statistics_is_refused() -> None:
    with pytest.raises(ValueError, match="transactions"):
        parse_report(load("sysbench_oltp_no_server.txt"))


@pytest.mark.parametrize("test", ["read_write", "read_only"])
def test_histogram_percentiles_are_sysbenchs_own(test: str) -> None:
    """p95 from the whole run's histogram is the 95th percentile sysbench itself prints
    (same rule), the histogram counts every transaction, and p50 <= p95 <= p99 <= max."""
    text = load(f"sysbench_oltp_{test}.txt")
    report = parse_report(text)
    hist = parse_histogram(text)
    assert sum(count for _, count in hist) == report.events
    assert [v for v, _ in hist] == sorted(v for v, _ in hist)
    p50, p95, p99 = (percentile(hist, p) for p in (50, 95, 99))
    assert p50 is not None and p95 is not None and p99 is not None
    assert report.lat_pct_ms == pytest.approx(p95, abs=0.005)
    assert report.lat_min_ms <= p50 <= p95 <= p99 <= report.lat_max_ms + 0.01


def test_percentile_rule() -> None:
    hist = [(1.0, 50), (2.0, 45), (3.0, 4), (4.0, 1)]
    assert percentile(hist, 50) == 1.0
    assert percentile(hist, 95) == 2.0
    assert percentile(hist, 99) == 3.0
    assert percentile(hist, 100) == 4.0
    assert percentile([], 95) is None
    assert parse_histogram("no histogram here") == []


def test_intervals_are_the_per_second_series() -> None:
    intervals = parse_intervals(load("sysbench_oltp_read_write.txt"))
    assert [i.t for i in intervals] == [1.0, 2.0, 3.0]
    first = intervals[0]
    assert (first.tps, first.qps, first.pct, first.lat_pct_ms) == (1023.64, 20506.48, 95.0, 5.57)
    assert all(i.errors_s >= 0 and i.reconnects_s == 0 for i in intervals)
    assert parse_intervals(load("sysbench_oltp_no_server.txt")) == []


def test_metrics_names_units_directions() -> None:
    text = load("sysbench_oltp_read_write.txt")
    metrics = {m.name: m for m in report_metrics(parse_report(text), parse_histogram(text))}
    assert list(metrics) == [
        "tps",
        "qps",
        "lat_avg_ms",
        "lat_p50_ms",
        "lat_p95_ms",
        "lat_p99_ms",
        "lat_max_ms",
        "errors",
        "reconnects",
    ]
    assert metrics["tps"].unit == "tx/s" and metrics["tps"].better == Better.HIGHER
    assert all(metrics[n].better == Better.LOWER for n in list(metrics)[2:])
    # A percentile is known to within its histogram bucket (~1.8%).
    p99 = metrics["lat_p99_ms"]
    assert p99.resolution == pytest.approx(p99.value * HIST_STEP)
    assert 0.017 < HIST_STEP < 0.019
    assert SysbenchOltp.headline == ("tps", "lat_p99_ms")
    assert SysbenchOltp.steady_series == "tps"


def test_innodb_counters_are_deltas() -> None:
    before = parse_pairs("Innodb_data_written\t1000\nInnodb_dblwr_pages_written\t0\n")
    after = parse_pairs("Innodb_data_written\t5096\nInnodb_dblwr_pages_written\t0\njunk\n")
    metrics = {m.name: m.value for m in counter_metrics(before, after)}
    assert metrics == {"innodb_bytes_written": 4096.0, "doublewrite_pages": 0.0}


def test_a_refused_setting_is_unsupported_with_mariadbs_words() -> None:
    exc = refusal("mariadb-install-db", load("mariadb_install_page_size_refused.txt"))
    assert isinstance(exc, Unsupported)
    assert "innodb_page_size=65536 requires innodb_buffer_pool_size >= 21 MiB" in exc.message


def test_another_error_is_a_failure() -> None:
    log = (
        "2026-11-25  2:14:40 0 [ERROR] Can't start server: Bind on unix socket: Permission denied\n"
    )
    exc = refusal("mariadbd", log + "[ERROR] Aborting\n")
    assert isinstance(exc, TrialFailed)
    assert "Bind on unix socket: Permission denied" in exc.message
    assert isinstance(refusal("mariadbd", ""), TrialFailed)


def test_sysbench_failure_says_its_fatal_line() -> None:
    text = load("sysbench_oltp_no_server.txt")
    exc = sysbench_failed("run", proc.Result(("sysbench",), 1, text, ""))
    assert exc.message.startswith("sysbench run: FATAL: unable to connect to MySQL server")


def test_server_is_fsbenchs_own() -> None:
    """No option file, no TCP, every path of the server's ours; InnoDB's settings the same
    at initialization and at every start."""
    where = Where.of(Path("/mnt/x/mariadb"), Path("/work/scratch-1/mariadb"))
    p = params(doublewrite=False, page_size="4k")
    server = server_argv(p, where)
    install = install_argv(p, where)
    assert server[:2] == ["mariadbd", "--no-defaults"]
    assert install[:2] == ["mariadb-install-db", "--no-defaults"]
    assert "--skip-networking" in server and not any("port" in a for a in server)
    assert "--datadir=/mnt/x/mariadb" in server and "--datadir=/mnt/x/mariadb" in install
    assert "--socket=/work/scratch-1/mariadb/mariadbd.sock" in server
    assert "--pid-file=/work/scratch-1/mariadb/mariadbd.pid" in server
    innodb = [a for a in server if a.startswith("--innodb")]
    assert innodb == [a for a in install if a.startswith("--innodb")]
    assert "--innodb-doublewrite=OFF" in innodb and "--innodb-page-size=4096" in innodb
    assert "--innodb-flush-method=O_DIRECT" in innodb
    assert stop_argv(where)[:2] == ["mariadb-admin", "--no-defaults"]
    run = sysbench_argv(p, where, "run")
    assert run[:2] == ["sysbench", "oltp_read_write"] and run[-1] == "run"
    for arg in ("--histogram", "--report-interval=1", "--time=3", "--db-driver=mysql"):
        assert arg in run
    assert "--time=3" not in sysbench_argv(p, where, "prepare")


def test_page_sizes() -> None:
    assert [params(page_size=s).page_size for s in ("4k", "8K", "16k", "32KiB", 65536)] == [
        4096,
        8192,
        16384,
        32768,
        65536,
    ]
    for bad in ("2k", "12k", "128k"):
        with pytest.raises(ValidationError, match="innodb_page_size must be one of"):
            params(page_size=bad)


def test_sizes_per_scale() -> None:
    wl = get("sysbench-oltp")
    assert wl is SysbenchOltp
    sizes = {}
    for scale in Scale:
        p = SysbenchOltpParams.model_validate(wl.defaults(scale))
        sizes[scale] = SysbenchOltp().required_bytes(p)
        assert p.tables * p.table_size * 300 < sizes[scale]  # the rows, at least
    assert sizes[Scale.TINY] < sizes[Scale.QUICK] < sizes[Scale.FULL]
    assert sizes[Scale.TINY] < 1 << 30  # the tests' loop image
