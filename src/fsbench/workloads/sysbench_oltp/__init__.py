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
import os
import shutil
from collections.abc import Iterable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from fsbench.system import proc, servers
from fsbench.system.errors import TrialFailed
from fsbench.workloads.base import CacheState, Flush, Scale, Tool, TrialContext, Workload
from fsbench.workloads.metric import Metric
from fsbench.workloads.sysbench_oltp.mariadb import (
    Where,
    dies_with_us,
    install_argv,
    log_lines,
    server_argv,
    sql,
    stop_argv,
    sysbench_argv,
    wait_ready,
)
from fsbench.workloads.sysbench_oltp.output import (
    COUNTERS,
    VARIABLES,
    counter_metrics,
    parse_histogram,
    parse_intervals,
    parse_pairs,
    parse_report,
    refusal,
    report_metrics,
    sysbench_failed,
)
from fsbench.workloads.sysbench_oltp.params import (
    _ROWS_PER_S,
    _TIMEOUT_SLACK,
    DATABASE,
    NAME,
    PERCENTILE,
    ROW_BYTES,
    SERVER_BYTES,
    TABLE_MIN,
    USER,
    SysbenchOltpParams,
)


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
        return Where.of(ctx.mountpoint / NAME, servers.socket_dir(ctx.run_dir, NAME))

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
        servers.owned_dir(where.tmpdir, USER)
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
