"""pgbench's report and per-transaction log, read as the workload reads them: real output
captured from Debian 12's pgbench 15.18 (tests/data/pgbench_*.txt), and a small log
written by hand whose percentiles and per-second buckets are worked out below. Also the
parameter model, the argv and the sizes. Nothing runs PostgreSQL here."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from pydantic import ValidationError

from fsbench.workloads import get
from fsbench.workloads import pgbench as pg
from fsbench.workloads.base import Scale
from fsbench.workloads.pgbench import cluster, txlog

DATA = Path(__file__).parent.parent / "data"

# Two pgbench threads' logs: client transaction latency(µs)|failed|skipped script epoch µs.
THREAD_0 = """\
0 1 1000 0 100 0
1 1 2000 0 100 500000
0 2 3000 0 101 100000
0 3 failed 0 101 200000
1 2 4000 0 101 900000
0 4 5000 0 102 200000
"""
THREAD_1 = """\
2 1 1500 0 100 200000
2 2 skipped 0 100 300000

3 1 10000 0 102 500000
"""


def write_log(tmp_path: Path, *texts: str) -> list[Path]:
    paths = []
    for i, text in enumerate(texts):
        path = tmp_path / (f"tx.123.{i}" if i else "tx.123")
        path.write_text(text)
        paths.append(path)
    return paths


def test_percentile_is_the_nearest_rank() -> None:
    hundred = Counter(range(1, 101))
    assert [txlog.percentile(hundred, p) for p in (50, 95, 99, 100)] == [50, 95, 99, 100]
    assert txlog.percentile(Counter({7: 1}), 99) == 7
    # Counts weigh: 98 fast and 2 slow; p99 is a slow one (rank 99 of 100).
    assert txlog.percentile({1: 98, 500: 2}, 99) == 500
    assert txlog.percentile({1: 98, 500: 2}, 98) == 1
    with pytest.raises(ValueError):
        txlog.percentile({}, 50)


def test_log_percentiles_failures_and_seconds(tmp_path: Path) -> None:
    log = txlog.read_log(write_log(tmp_path, THREAD_0, THREAD_1))
    # Successful latencies, sorted: 1000 1500 2000 3000 4000 5000 10000 (µs).
    assert log.ok == 7 and log.failed == 1 and log.skipped == 1
    assert txlog.percentile(log.latencies, 50) == 3000  # rank ceil(3.5) = 4
    assert txlog.percentile(log.latencies, 95) == 10000  # rank ceil(6.65) = 7
    assert log.mean_us() == pytest.approx(26500 / 7)
    assert log.lag_n == 0
    # The run starts with the first transaction's start, 100.000000 - 1000 µs = 99.999;
    # it ends at 102.5: two whole seconds, the third (102.2 and 102.5) cut short.
    assert log.seconds == [0.0, 1.0]
    assert log.per_second == [3, 2]  # 100.0, 100.2, 100.5 | 101.1, 101.9
    assert log.p99_per_second == [2000, 4000]


def test_log_of_a_rate_limited_run_has_the_schedule_lag(tmp_path: Path) -> None:
    text = "0 1 2206 0 1795573190 212651 72\n1 1 870 0 1795573190 212671 92\n"
    log = txlog.read_log(write_log(tmp_path, text))
    assert log.lag_n == 2 and log.lag_us_sum == 164
    assert log.seconds == []  # well under a second: no whole second to show
    assert txlog.parse_line("0 1 2206 0 1795573190 212651 72") == txlog.Tx(
        1795573190_212651, 2206, False, 72
    )
    assert txlog.parse_line("0 1 2206 0 17955") is None  # a line cut short


def test_summary_of_a_read_write_run() -> None:
    got = txlog.parse_summary((DATA / "pgbench_read_write.txt").read_text())
    assert got == txlog.Summary(tps=676.828565, transactions=2025, failed=0)


def test_summary_of_a_rate_limited_read_only_run() -> None:
    got = txlog.parse_summary((DATA / "pgbench_read_only_rate.txt").read_text())
    assert got == txlog.Summary(tps=216.111606, transactions=645, failed=0)


def test_summary_of_an_older_pgbench_and_of_an_aborted_run() -> None:
    # PostgreSQL 13 and older: two tps lines, no failed transactions.
    old = (
        "number of transactions actually processed: 100\n"
        "tps = 50.5 (including connections establishing)\n"
        "tps = 51.25 (excluding connections establishing)\n"
    )
    assert txlog.parse_summary(old) == txlog.Summary(51.25, 100, None)
    assert txlog.parse_summary("pgbench: error: connection to server failed\n") is None


def test_params_and_argv() -> None:
    model = pg.PgbenchParams
    with pytest.raises(ValidationError, match="threads 4 > clients 2"):
        model(scale=1, clients=2, threads=4, duration=5)
    with pytest.raises(ValidationError):
        model(scale=1, clients=2, duration=5, mode="write-only")  # type: ignore[arg-type]
    params = model(scale=1, clients=4, threads=2, duration=7, rate=250, mode="read-only")
    paths = cluster.Paths(Path("/m/pgdata"), Path("/w/scratch-1/postgresql"), Path("/w/log"))
    argv = pg.run_argv(Path("/usr/lib/postgresql/15/bin"), paths, params)
    assert argv[:5] == [
        "/usr/lib/postgresql/15/bin/pgbench",
        "-h",
        str(paths.sockets),
        "-U",
        "postgres",
    ]
    joined = " ".join(argv)
    assert "-n -b select-only -c 4 -j 2 -T 7 -R 250 -l --log-prefix=/w/log/tx postgres" in joined
    default = model(scale=1, clients=1, duration=1)
    assert pg.threads_of(default) == 1  # never more threads than clients
    assert "-R" not in pg.run_argv(Path("/b"), paths, default)
    assert "-b tpcb-like" in " ".join(pg.run_argv(Path("/b"), paths, default))


def test_scale_to_mem_sizes_the_database() -> None:
    wl = get("pgbench")()
    params = pg.PgbenchParams(scale=1, clients=1, duration=1, scale_to_mem=2)
    sized = wl.for_memory(params, 1 << 30)
    # 2 GiB of database at 15.68 MB a scale unit.
    assert sized.scale == round(2 * (1 << 30) / pg.BYTES_PER_SCALE) == 137
    assert wl.for_memory(sized, 1 << 30) == sized  # idempotent
    assert wl.for_memory(params.model_copy(update={"scale_to_mem": 1e-9}), 1 << 30).scale == 1
    plain = pg.PgbenchParams(scale=5, clients=1, duration=1)
    assert wl.for_memory(plain, 1 << 30) is plain


def test_required_bytes_cover_the_database_and_its_wal() -> None:
    wl = get("pgbench")()
    tiny = pg.PgbenchParams.model_validate(
        {k: v[0] if isinstance(v, list) else v for k, v in wl.defaults(Scale.TINY).items()}
    )
    need = wl.required_bytes(tiny)
    assert need == pg.needed_bytes(1) and need >= pg.BYTES_PER_SCALE + pg.MAX_WAL
    # A 2 GiB loop image holds a tiny run (the tests'); 1 GiB does not (the WAL alone).
    assert need < 2 * (1 << 30) * 0.85 and need > (1 << 30) * 0.85
    full = pg.PgbenchParams(scale=1000, clients=1, duration=1)
    assert wl.required_bytes(full) > 1000 * pg.BYTES_PER_SCALE


def test_why_a_server_did_not_start() -> None:
    log = (
        "2026-11-25 02:29:28.942 UTC [8640] LOG:  300010 is outside the valid range for "
        'parameter "max_connections" (1 .. 262143)\n'
        '2026-11-25 02:29:28.942 UTC [8640] FATAL:  configuration file "/m/pgdata/'
        'postgresql.conf" contains errors\n'
    )
    assert cluster.server_said(log) == (
        'LOG: 300010 is outside the valid range for parameter "max_connections" (1 .. 262143); '
        'FATAL: configuration file "/m/pgdata/postgresql.conf" contains errors'
    )
    assert cluster.server_said(
        "2026-11-25 02:29:28.942 UTC [1] LOG:  received fast shutdown\n"
    ) == ("LOG: received fast shutdown")
    assert cluster.server_said("") == ""
