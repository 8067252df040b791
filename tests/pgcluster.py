"""A real PostgreSQL cluster for the tests: Debian's PostgreSQL 15 binaries, `initdb` +
`pg_ctl` in a temporary directory owned by the `postgres` user, listening on a Unix
socket in that directory only (no TCP), password authentication (scram) so that the
tests can check a password never leaks; stopped and removed on every path."""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
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


def _as_postgres(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["runuser", "-u", "postgres", "--", *argv],
        check=True,
        capture_output=True,
        text=True,
        **kwargs,  # type: ignore[arg-type]
    )


@contextmanager
def cluster() -> Iterator[Cluster]:
    binaries = pg_bin()
    if binaries is None:
        raise RuntimeError("no PostgreSQL binaries (make install: Debian's postgresql)")
    base = Path(tempfile.mkdtemp(prefix="fsbench-pg-", dir="/var/tmp"))
    data, sock = base / "data", base / "sock"
    started = False
    try:
        pg = pwd.getpwnam("postgres")
        sock.mkdir()
        os.chown(base, pg.pw_uid, pg.pw_gid)
        os.chown(sock, pg.pw_uid, pg.pw_gid)
        password = secrets.token_hex(12)
        pwfile = base / "pw"
        pwfile.write_text(password + "\n")
        os.chown(pwfile, pg.pw_uid, pg.pw_gid)
        os.chmod(pwfile, 0o600)
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
        _as_postgres(
            [
                str(binaries / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(base / "server.log"),
                "-w",
                "-t",
                "60",
                "-o",
                f"-c listen_addresses='' -k {sock} -c max_connections=200 -c fsync=off",
                "start",
            ]
        )
        started = True
        made = Cluster(base, sock, "fsbench", password, "fsbench")
        made.psql("CREATE DATABASE fsbench OWNER fsbench")
        yield made
    finally:
        if started:
            subprocess.run(
                [
                    "runuser",
                    "-u",
                    "postgres",
                    "--",
                    str(binaries / "pg_ctl"),
                    "-D",
                    str(data),
                    "-m",
                    "immediate",
                    "-w",
                    "stop",
                ],
                capture_output=True,
                check=False,
            )
        shutil.rmtree(base, ignore_errors=True)


# -- pytest fixtures (registered in conftest.py) ----------------------------------------

_counter = iter(range(1, 1_000_000))


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """One PostgreSQL cluster for the whole session (about 2.5 s to start)."""
    if os.geteuid() != 0:
        pytest.skip("the PostgreSQL tests start their cluster as root (runuser postgres)")
    with cluster() as made:
        yield made


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> str:
    """A fresh database of the session's cluster, as a postgresql:// URL with a password."""
    return pg_cluster.createdb(f"t{os.getpid()}_{next(_counter)}")


@pytest.fixture
def pg_password(pg_cluster: Cluster) -> str:
    return pg_cluster.password
