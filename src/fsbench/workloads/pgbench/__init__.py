"""pgbench: a real PostgreSQL whose data directory is on the filesystem under test, driven
by pgbench's built-in scripts (tpcb-like read-write, select-only read-only) for a fixed
time: transactions per second, and latency percentiles from the per-transaction log.

prepare (untimed): `initdb` into MOUNTPOINT/pgdata (owned by the postgres user: the
server refuses root), the server started with `pg_ctl start` on a Unix socket in the run's
own directory (servers.py: no TCP at all, written down first so that a killed run's server
is stopped by the next run's or doctor's cleanup), `pgbench -i -s SCALE`, a CHECKPOINT.
The server then runs through the step and is stopped in `release`, on every path.

run (timed): `pgbench -n -b tpcb-like|select-only -c -j -T [-R] -l`. `tps` is pgbench's
own figure without the initial connection time; the latency percentiles (nearest rank),
their mean and the per-second series are computed here from its per-transaction log,
written outside the filesystem under test. Under a rate limit (-R) pgbench counts latency
from each transaction's scheduled start, so a server that falls behind shows it.

The cache is dropped before the timed phase (`cold`), but the server keeps what its own
shared buffers hold: it runs from prepare to the end of the step, so the filesystem is
never remounted in between (the server holds the mount).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator

from fsbench.system import proc, servers
from fsbench.system.errors import TrialFailed, Unsupported
from fsbench.workloads import _tools
from fsbench.workloads.base import CacheState, Flush, Params, Scale, Tool, TrialContext, Workload
from fsbench.workloads.metric import Better, Metric
from fsbench.workloads.pgbench import cluster, txlog

DATABASE = "postgres"
BUILTIN = {"read-write": "tpcb-like", "read-only": "select-only"}
# pgbench's database per scale unit: 100,000 pgbench_accounts rows with their index, 10
# tellers, 1 branch. Measured here (PostgreSQL 15, ext4), pg_database_size after
# `pgbench -i`: 23.5 MB at scale 1, 164.6 MB at 10, 791.9 MB at 50: 15.68 MB a unit over
# an empty database's 7.8 MB.
BYTES_PER_SCALE = 15_680_000
# Beside the database: the cluster initdb makes (40 MB measured: catalogs, the first WAL
# segments), room for what a run adds (history rows, dead tuples until autovacuum), and the
# WAL, which checkpoints keep near max_wal_size (set to PostgreSQL's default here, so that
# this estimate and the server agree; a soft limit, hence the margin).
CLUSTER_BYTES = 64 << 20
GROWTH = 0.25
MAX_WAL = 1 << 30
WAL_ROOM = MAX_WAL + MAX_WAL // 2
# Longer than any sane initialization per scale unit (0.12 s measured here), and slack
# beyond a run's duration (connections, the last transactions, writing the log).
_INIT_TIMEOUT_BASE = 600.0
_INIT_TIMEOUT_PER_SCALE = 2.0
_RUN_TIMEOUT_SLACK = 600.0
_START_TIMEOUT = 300
SOCKET_PATH_MAX = 107  # sun_path less its terminating NUL; PostgreSQL refuses longer
# What the trial records as in force, read back from the running server.
SETTINGS = (
    "server_version",
    "full_page_writes",
    "fsync",
    "synchronous_commit",
    "wal_level",
    "wal_compression",
    "data_checksums",
    "shared_buffers",
    "max_wal_size",
    "checkpoint_timeout",
    "max_connections",
    "listen_addresses",
    "unix_socket_directories",
)


class PgbenchParams(Params):
    mode: Literal["read-write", "read-only"] = Field(
        default="read-write",
        description="built-in script: read-write = tpcb-like, read-only = select-only (-b)",
    )
    scale: Annotated[
        int,
        Field(gt=0, description="scale factor (pgbench -i -s): 100,000 accounts, ~15.7 MB each"),
    ]
    scale_to_mem: Annotated[float, Field(gt=0)] | None = Field(
        default=None,
        description="the scale factor that makes the database this multiple of the memory "
        "the workload may use (the mem knob's cap, else the machine's); replaces scale",
    )
    clients: Annotated[int, Field(gt=0, description="concurrent client sessions (-c)")]
    threads: Annotated[int, Field(gt=0)] | None = Field(
        default=None,
        description="pgbench worker threads (-j); none: one per CPU, at most clients",
    )
    duration: Annotated[int, Field(gt=0, description="seconds of the timed run (-T)")]
    rate: Annotated[float, Field(gt=0)] | None = Field(
        default=None,
        description="transactions per second to schedule (-R: latency at a fixed "
        "throughput); none: as fast as the server goes",
    )
    full_page_writes: bool = Field(
        default=True, description="the server's full_page_writes (off: torn pages unprotected)"
    )

    @model_validator(mode="after")
    def _threads(self) -> PgbenchParams:
        if self.threads is not None and self.threads > self.clients:
            raise ValueError(f"threads {self.threads} > clients {self.clients} (pgbench refuses)")
        return self


def scale_for(params: PgbenchParams, mem_bytes: int) -> int:
    """The scale factor: `scale`, or the one whose database is `scale_to_mem` times
    `mem_bytes` (at least 1)."""
    if params.scale_to_mem is None:
        return params.scale
    return max(1, round(params.scale_to_mem * mem_bytes / BYTES_PER_SCALE))


def needed_bytes(scale: int) -> int:
    """What the cluster takes on the filesystem at this scale factor, WAL included."""
    return CLUSTER_BYTES + int(scale * BYTES_PER_SCALE * (1 + GROWTH)) + WAL_ROOM


def threads_of(params: PgbenchParams) -> int:
    return params.threads or min(params.clients, os.cpu_count() or 1)


def run_argv(bindir: Path, paths: cluster.Paths, params: PgbenchParams) -> list[str]:
    argv = [str(bindir / "pgbench"), "-h", str(paths.sockets), "-U", cluster.USER]
    # -n: no vacuum first (prepare's `pgbench -i` vacuumed); the log outside the target.
    argv += ["-n", "-b", BUILTIN[params.mode], "-c", str(params.clients)]
    argv += ["-j", str(threads_of(params)), "-T", str(params.duration)]
    if params.rate is not None:
        argv += ["-R", f"{params.rate:g}"]
    argv += ["-l", f"--log-prefix={paths.txlog / 'tx'}", DATABASE]
    return argv


class Pgbench(Workload[PgbenchParams]):
    name = "pgbench"
    summary = (
        "PostgreSQL on the filesystem, pgbench's read-write (TPC-B like) or read-only "
        "script for a fixed time: TPS, latency percentiles, per-second series"
    )
    scale_defaults = {
        # Seconds: a 24 MB database, one client a CPU.
        Scale.TINY: {"scale": 1, "clients": 2, "duration": 5},
        # ~315 MB (in the cache of any machine; scale_to_mem for one that is not), long
        # enough for a 10 s steady window after the ramp-up.
        Scale.QUICK: {"scale": 20, "clients": 8, "duration": 20},
        # The classic large pgbench database (~15.7 GB), 1 to 64 clients, 10 minutes.
        Scale.FULL: {"scale": 1000, "clients": [1, 16, 64], "duration": 600},
    }
    # Debian's `postgresql` brings the server, initdb, pg_ctl, pgbench and psql.
    tools = tuple(Tool(c, "postgresql") for c in ("postgres", "initdb", "pg_ctl", "pgbench"))
    cache = CacheState.COLD  # never a remount: the server holds the mount
    flush = Flush.NONE  # the server's commits are its own fsyncs
    headline = ("tps", "lat_p99_ms")
    steady_series = "tps"

    def __init__(self) -> None:
        self._stack: contextlib.ExitStack | None = None
        self._bin: Path | None = None

    @classmethod
    def missing(cls) -> str | None:
        # Debian's initdb and pg_ctl are not on PATH: they live in the versioned directory.
        if cluster.pg_bin() is None:
            where = f"{cluster.PG_ROOT}/<version>/bin"
            return f"missing PostgreSQL in {where} (apt-get install postgresql)"
        try:
            servers.user_ids(cluster.USER)
        except Unsupported as exc:
            return exc.message
        utils = ("setpriv",)
        absent = [u for u in utils if proc.which(u) is None]
        if absent:
            return f"missing {', '.join(absent)} (apt-get install util-linux)"
        return None

    def for_memory(self, params: PgbenchParams, mem_bytes: int) -> PgbenchParams:
        """`scale` resolved from `scale_to_mem` for this much memory (idempotent)."""
        if params.scale_to_mem is None:
            return params
        return PgbenchParams.model_validate(
            {**params.model_dump(), "scale": scale_for(params, mem_bytes)}
        )

    def required_bytes(self, params: PgbenchParams) -> int:
        # `scale` as for_memory resolved it; prepare checks again against the free space.
        return needed_bytes(params.scale)

    def threads(self, params: PgbenchParams) -> int:
        return params.clients + threads_of(params)  # a server backend per client, the client

    def prepare(self, ctx: TrialContext, params: PgbenchParams) -> None:
        bindir = cluster.pg_bin()
        if bindir is None:
            raise Unsupported(self.missing() or "no PostgreSQL")
        self._bin = bindir
        paths = cluster.Paths.of(ctx)
        scale = self.for_memory(params, ctx.mem_bytes).scale
        self._check_room(ctx, paths, scale)
        stack = self._stack = contextlib.ExitStack()
        # Last out: the run's directories of this step, once the server is stopped.
        stack.callback(cluster.remove_dirs, paths)
        servers.owned_dir(paths.pgdata, cluster.USER)
        # scratch-<pid>, root's, searchable whatever the umask: the server reaches its own.
        paths.sockets.parent.mkdir(parents=True, exist_ok=True)
        paths.sockets.parent.chmod(0o755)
        servers.owned_dir(paths.sockets, cluster.USER)
        t0 = time.monotonic()
        self._as_postgres(
            "initdb",
            [
                str(bindir / "initdb"),
                "-D",
                str(paths.pgdata),
                "--auth-local=trust",  # the socket's directory is the postgres user's only
                "--auth-host=reject",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-instructions",
                "--no-sync",  # the runner syncs the filesystem before the timed phase
            ],
        )
        settings = {
            "listen_addresses": "",  # no TCP at all
            "unix_socket_directories": str(paths.sockets),
            "full_page_writes": "on" if params.full_page_writes else "off",
            "max_wal_size": f"{MAX_WAL >> 20}MB",
            "max_connections": str(max(100, params.clients + 10)),
        }
        with open(paths.pgdata / "postgresql.conf", "a") as conf:
            conf.write("\n# fsbench\n")
            conf.writelines(f"{k} = {cluster.conf_value(v)}\n" for k, v in settings.items())
        self._start(ctx, bindir, paths, stack)
        t_started = time.monotonic()
        init = proc.run(
            [*self._client("pgbench", paths), "-i", "-q", "-s", str(scale), DATABASE],
            timeout=_INIT_TIMEOUT_BASE + scale * _INIT_TIMEOUT_PER_SCALE,
        )
        if not init.ok:
            raise _tools.tool_failed("pgbench -i", init)
        t_init = time.monotonic()
        self._sql(paths, "CHECKPOINT", timeout=_INIT_TIMEOUT_BASE)
        in_force = dict(
            line.split("\x1f", 1)
            for line in self._sql(
                paths,
                "SELECT name, current_setting(name) FROM pg_settings WHERE name IN ("
                + ", ".join(f"'{s}'" for s in SETTINGS)
                + ") ORDER BY name",
            ).splitlines()
        )
        db_bytes = int(self._sql(paths, f"SELECT pg_database_size('{DATABASE}')"))
        ctx.facts["pgbench"] = {
            "bin": str(bindir),
            "scale": scale,
            "scale_to_mem": params.scale_to_mem,
            "mem_bytes": ctx.mem_bytes if params.scale_to_mem is not None else None,
            "threads": threads_of(params),
            "db_bytes": db_bytes,
            "set": settings,
            "in_force": in_force,
            "seconds": {
                "initdb_start": round(t_started - t0, 3),
                "init": round(t_init - t_started, 3),
                "checkpoint": round(time.monotonic() - t_init, 3),
            },
        }

    def run(self, ctx: TrialContext, params: PgbenchParams) -> list[Metric]:
        assert self._bin is not None, "run before prepare"
        paths = cluster.Paths.of(ctx)
        shutil.rmtree(paths.txlog, ignore_errors=True)
        paths.txlog.mkdir(parents=True)
        argv = run_argv(self._bin, paths, params)
        t0 = time.monotonic()
        res = proc.run(
            [*cluster.DIE_WITH_FSBENCH, *argv], timeout=params.duration + _RUN_TIMEOUT_SLACK
        )
        seconds = time.monotonic() - t0
        summary = txlog.parse_summary(res.stdout)
        if not res.ok or summary is None:
            raise _tools.tool_failed("pgbench", res)
        log = txlog.read_log(sorted(paths.txlog.iterdir()))
        shutil.rmtree(paths.txlog, ignore_errors=True)  # can be large; counted already
        if log.ok == 0:
            raise TrialFailed("pgbench: no transaction succeeded", _tools.tail(res.stdout))
        ctx.facts.setdefault("pgbench", {})["argv"] = argv
        ms = 1000.0
        metrics = [
            # The client's run, not the reading of its log after it (the runner's default).
            Metric("seconds", seconds, "s", Better.LOWER),
            Metric("tps", summary.tps, "tx/s", Better.HIGHER, resolution=1e-6),
            Metric("lat_mean_ms", log.mean_us() / ms, "ms", Better.LOWER),
        ]
        metrics += [
            Metric(
                f"lat_p{p}_ms", txlog.percentile(log.latencies, p) / ms, "ms", Better.LOWER, 0.001
            )
            for p in (50, 95, 99)
        ]
        failed = summary.failed if summary.failed is not None else log.failed
        metrics += [
            Metric("transactions", summary.transactions, "tx", Better.HIGHER, resolution=1),
            Metric("failed_transactions", failed, "tx", Better.LOWER, resolution=1),
        ]
        if params.rate is not None and log.lag_n:
            lag = log.lag_us_sum / log.lag_n / ms
            metrics.append(Metric("schedule_lag_ms", lag, "ms", Better.LOWER))
        ctx.series("tps", "tx/s", "higher", log.seconds, [float(n) for n in log.per_second])
        p99 = [(t, v / ms) for t, v in zip(log.seconds, log.p99_per_second, strict=True) if v]
        ctx.series("lat_p99_ms", "ms", "lower", [t for t, _ in p99], [v for _, v in p99])
        return metrics

    def release(self, ctx: TrialContext, params: PgbenchParams) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            stack.close()

    # -- helpers ------------------------------------------------------------------------

    def _check_room(self, ctx: TrialContext, paths: cluster.Paths, scale: int) -> None:
        """One line, before anything is made, for what would fail later in the server's
        own words: too little room, a socket path too long, a directory it cannot reach."""
        st = os.statvfs(ctx.mountpoint)
        free, need = st.f_bavail * st.f_frsize, needed_bytes(scale)
        if need > free:
            raise TrialFailed(
                f"pgbench at scale {scale} needs ~{need >> 20} MiB, the filesystem has "
                f"{free >> 20} MiB free: use a larger --image-size or a smaller scale"
            )
        if len(str(paths.socket)) > SOCKET_PATH_MAX:
            raise TrialFailed(
                f"the server's socket path {paths.socket} is longer than {SOCKET_PATH_MAX} "
                "bytes: use a shorter --workdir"
            )
        for where in (ctx.mountpoint, ctx.run_dir):
            blocked = cluster.unreachable(where / "x", cluster.USER)
            if blocked is not None:
                raise TrialFailed(
                    f"the {cluster.USER} user cannot pass through {blocked} "
                    f"(mode {stat.S_IMODE(blocked.stat().st_mode):o}): use a --workdir it can"
                )

    def _as_postgres(self, what: str, argv: list[str], timeout: float = 300) -> proc.Result:
        res = proc.run(servers.as_user(cluster.USER, argv), timeout=timeout)
        if not res.ok:
            raise _tools.tool_failed(what, res)
        return res

    def _client(self, tool: str, paths: cluster.Paths) -> list[str]:
        assert self._bin is not None
        return [str(self._bin / tool), "-h", str(paths.sockets), "-U", cluster.USER]

    def _sql(self, paths: cluster.Paths, sql: str, timeout: float = 60) -> str:
        argv = [*self._client("psql", paths), "-X", "-d", DATABASE, "-v", "ON_ERROR_STOP=1"]
        res = proc.run([*argv, "-tA", "-F", "\x1f", "-c", sql], timeout=timeout)
        if not res.ok:
            raise _tools.tool_failed(f"psql {sql.split()[0]}", res)
        return res.stdout.strip()

    def _start(
        self, ctx: TrialContext, bindir: Path, paths: cluster.Paths, stack: contextlib.ExitStack
    ) -> None:
        """The server, written down first (servers.running), stopped when `stack` closes."""
        pg_ctl = [str(bindir / "pg_ctl"), "-D", str(paths.pgdata)]
        noted = servers.Noted(
            name="postgresql",
            user=cluster.USER,
            stop=[*pg_ctl, "-m", "fast", "-w", "-t", "60", "stop"],
            pidfile=str(paths.pgdata / "postmaster.pid"),
            owner=os.getpid(),
        )
        start = [*pg_ctl, "-l", str(paths.server_log), "-w", "-t", str(_START_TIMEOUT), "start"]
        try:
            stack.enter_context(
                servers.running(
                    noted,
                    servers.note_path(ctx.run_dir),
                    start,
                    paths.socket,
                    timeout=_START_TIMEOUT + 60,
                )
            )
        except TrialFailed as exc:  # pg_ctl says "could not start server": the log says why
            said = cluster.read_text_of(paths.server_log)
            why = cluster.server_said(said)
            message = f"{noted.name} did not start: {why}" if why else exc.message
            raise TrialFailed(message, said[-4000:] or exc.detail) from None
