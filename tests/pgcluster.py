"""A real PostgreSQL cluster for the tests: Debian's PostgreSQL 15 binaries, `initdb` +
`pg_ctl` in a temporary directory (owned by the `postgres` user when the tests run as
root: PostgreSQL refuses to run as root), listening on a Unix socket in that directory
only (no TCP), password authentication (scram) so that the tests can check a password
never leaks; stopped and removed on every path. Debian's own cluster (the one its package
starts) is never used or touched. A cluster a killed test session left behind is stopped
and removed by the next session."""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest


def pg_bin() -> Path | None:
    for version in ("15", "16", "17"):
        path = Path(f"/usr/lib/postgresql/{version}/bin")
        if (path / "initdb").exists():
            return path
    return None


@dataclass(frozen=True)
class Cluster:
    dir: Path
    socket_dir: Path
    user: str
    password: str
    database: str

    def url(self, database: str | None = None) -> str:
        return (
            f"postgresql://{self.user}:{self.password}@/{database or self.database}"
            f"?host={self.socket_dir}"
        )

    def stop(self, mode: str = "immediate") -> None:
        """Stop the server now (its directory stays until the cluster's cleanup): at once
        (`immediate`: a crash, every connection cut), or as an administrator restarting
        it does (`fast`: each session told "terminating connection due to administrator
        command")."""
        binaries = pg_bin()
        assert binaries is not None
        _stop(binaries, self.dir / "data", mode)

    def start(self) -> None:
        """Start the stopped server again, on the same socket."""
        binaries = pg_bin()
        assert binaries is not None
        _start(binaries, self.dir / "data", self.socket_dir, self.dir / "server.log")

    @property
    def running(self) -> bool:
        return (self.dir / "data" / "postmaster.pid").exists()

    def createdb(self, name: str) -> str:
        """A fresh database in the cluster; its URL."""
        self.psql(f'CREATE DATABASE "{name}" OWNER {self.user}')
        return self.url(name)

    def psql(self, sql: str, database: str = "postgres") -> str:
        env = {**os.environ, "PGPASSWORD": self.password}
        return subprocess.run(
            [
                "psql",
                "-h",
                str(self.socket_dir),
                "-U",
                self.user,
                "-d",
                database,
                "-v",
                "ON_ERROR_STOP=1",
                "-tA",
                "-c",
                sql,
            ],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout


PREFIX = "fsbench-pg-"


def _as_postgres(argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    """As the `postgres` user when root, else as ourselves."""
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    return subprocess.run([*prefix, *argv], check=check, capture_output=True, text=True)


def _stop(binaries: Path, data: Path, mode: str = "immediate") -> None:
    _as_postgres([str(binaries / "pg_ctl"), "-D", str(data), "-m", mode, "-w", "stop"], False)


def _start(binaries: Path, data: Path, sock: Path, log: Path) -> None:
    _as_postgres(
        [
            str(binaries / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(log),
            "-w",
            "-t",
            "60",
            "-o",
            f"-c listen_addresses='' -k {sock} -c max_connections=200 -c fsync=off",
            "start",
        ]
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale(binaries: Path) -> None:
    """Clusters of test sessions that died without their cleanup (SIGKILL)."""
    for base in Path("/var/tmp").glob(f"{PREFIX}*"):
        owner = base / "owner"
        try:
            pid = int(owner.read_text())
        except (OSError, ValueError):
            continue
        if _alive(pid):
            continue
        if (base / "data" / "postmaster.pid").exists():
            _stop(binaries, base / "data")
        shutil.rmtree(base, ignore_errors=True)


@contextmanager
def cluster() -> Iterator[Cluster]:
    binaries = pg_bin()
    if binaries is None:
        raise RuntimeError("no PostgreSQL binaries (make install: Debian's postgresql)")
    _remove_stale(binaries)
    base = Path(tempfile.mkdtemp(prefix=PREFIX, dir="/var/tmp"))
    data, sock = base / "data", base / "sock"
    started = False
    try:
        (base / "owner").write_text(str(os.getpid()))
        sock.mkdir()
        password = secrets.token_hex(12)
        pwfile = base / "pw"
        pwfile.write_text(password + "\n")
        os.chmod(pwfile, 0o600)
        if os.geteuid() == 0:
            pg = pwd.getpwnam("postgres")
            for path in (base, sock, pwfile):
                os.chown(path, pg.pw_uid, pg.pw_gid)
        _as_postgres(
            [
                str(binaries / "initdb"),
                "-D",
                str(data),
                "-U",
                "fsbench",
                f"--pwfile={pwfile}",
                "--auth-local=scram-sha-256",
                "--auth-host=reject",
                "-E",
                "UTF8",
                "--no-instructions",
            ]
        )
        pwfile.unlink()
        started = True  # from here on, stop it whatever happens
        _start(binaries, data, sock, base / "server.log")
        made = Cluster(base, sock, "fsbench", password, "fsbench")
        made.psql("CREATE DATABASE fsbench OWNER fsbench")
        yield made
    finally:
        if started:
            _stop(binaries, data)
        shutil.rmtree(base, ignore_errors=True)


# -- pytest fixtures (registered in conftest.py) ----------------------------------------

_counter = iter(range(1, 1_000_000))


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """One PostgreSQL cluster for the whole session (2-2.7 s to start, 0.6 s to stop); no
    PostgreSQL binaries is a failure, not a skip (`make install` installs them)."""
    with cluster() as made:
        yield made


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> str:
    """A fresh database of the session's cluster, as a postgresql:// URL with a password."""
    return pg_cluster.createdb(f"t{os.getpid()}_{next(_counter)}")


@pytest.fixture
def pg_password(pg_cluster: Cluster) -> str:
    return pg_cluster.password


BACKENDS = ("sqlite", "postgresql")


@pytest.fixture(params=BACKENDS)
def new_db(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], str]:
    """Makes new, empty stores of each backend, as `--db` takes them: SQLite files, or
    fresh databases of the session's PostgreSQL cluster (URLs with a password). The
    cluster starts only when a PostgreSQL case runs."""
    if request.param == "sqlite":
        names = iter(range(1_000_000))
        return lambda: str(tmp_path / f"store-{next(names)}.db")
    made: Cluster = request.getfixturevalue("pg_cluster")
    return lambda: made.createdb(f"t{os.getpid()}_{next(_counter)}")


@pytest.fixture
def store_db(new_db: Callable[[], str]) -> str:
    """A new, empty store of each backend."""
    return new_db()


def load_sqlite(path: Path, url: str) -> None:
    """The tables and rows of the SQLite store at `path` into the empty database at `url`,
    as they are (an older schema stays older): a store that an older fsbench would have
    written in that database."""
    from sqlalchemy import MetaData, create_engine, text

    from fsbench.store.dburl import to_url

    src, dest = create_engine(f"sqlite:///{path}"), create_engine(to_url(url))
    try:
        tables = MetaData()
        tables.reflect(src)
        with src.connect() as reader, dest.begin() as conn:
            tables.create_all(conn)
            for table in tables.sorted_tables:
                rows = [dict(r) for r in reader.execute(table.select()).mappings()]
                if rows:
                    conn.execute(table.insert(), rows)
                if "id" in table.c and rows:  # the next id after the copied ones
                    conn.execute(
                        text(
                            f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "
                            f"(SELECT max(id) FROM {table.name}))"
                        )
                    )
    finally:
        src.dispose()
        dest.dispose()
