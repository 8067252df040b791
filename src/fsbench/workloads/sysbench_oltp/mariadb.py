"""The MariaDB server of a sysbench-oltp step: its places, its command lines, SQL through
its socket, and its log."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from fsbench.system import proc
from fsbench.system.errors import TrialFailed
from fsbench.workloads import _tools
from fsbench.workloads.sysbench_oltp.params import (
    _READY_S,
    DATABASE,
    PERCENTILE,
    SysbenchOltpParams,
)

# -- the server --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Where:
    """The server's places: its data on the filesystem under test, the rest in the run's
    own directory."""

    datadir: Path
    rundir: Path  # servers.socket_dir(run_dir, NAME): socket, pid file, log, tmpdir
    socket: Path
    pidfile: Path
    log: Path
    # Its own tmpdir: a MariaDB server deletes every #sql* file in its tmpdir when it starts,
    # so in the machine's /tmp it would delete another server's temporary tables (a second
    # instance's install then aborts: "Could not remove temporary table"), and they ours.
    tmpdir: Path

    @classmethod
    def of(cls, datadir: Path, rundir: Path) -> Where:
        """The data directory, and the server's files in its run directory."""
        socket, pidfile, log = (rundir / f"mariadbd.{ext}" for ext in ("sock", "pid", "log"))
        return cls(datadir, rundir, socket, pidfile, log, rundir / "tmp")


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
        f"--tmpdir={where.tmpdir}",
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
        f"--tmpdir={where.tmpdir}",
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
