"""The PostgreSQL cluster of a pgbench step: Debian's binaries, where its data, socket,
log and the client's per-transaction log go, and what its log says when it fails."""

from __future__ import annotations

import contextlib
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from fsbench.system import servers
from fsbench.system.layout import FileIn
from fsbench.workloads.base import TrialContext

USER = "postgres"
PG_ROOT = Path("/usr/lib/postgresql")  # Debian's binaries, one directory per major version
SOCKET_NAME = ".s.PGSQL.5432"


def pg_bin() -> Path | None:
    """The newest Debian PostgreSQL with the server, initdb, pg_ctl, pgbench and psql."""
    found = []
    for bindir in PG_ROOT.glob("*/bin"):
        version = bindir.parent.name
        needed = ("postgres", "initdb", "pg_ctl", "pgbench", "psql")
        if version.isdigit() and all((bindir / tool).is_file() for tool in needed):
            found.append((int(version), bindir))
    return max(found)[1] if found else None


def unreachable(path: Path, user: str) -> Path | None:
    """The first directory above `path` that `user` may not pass through (no search
    permission for it), or None: the server must reach its data and socket."""
    uid, gid = servers.user_ids(user)
    for parent in reversed(path.parents):
        st = parent.stat()
        if st.st_uid == uid:
            bit = stat.S_IXUSR
        elif st.st_gid == gid:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not st.st_mode & bit:
            return parent
    return None


def conf_value(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


# The client dies with fsbench (PR_SET_PDEATHSIG, set by util-linux's setpriv before it
# execs pgbench): a killed run leaves no client behind; the server, another user's, is
# stopped from the run's note.
DIE_WITH_FSBENCH = ("setpriv", "--pdeathsig", "KILL")


@dataclass(frozen=True)
class Paths:
    """Where one step's server and client keep things: the data directory on the
    filesystem under test, the rest in the run's own directory (gone with it)."""

    pgdata: Path
    sockets: Path  # the server's socket directory, with its log
    txlog: Path  # pgbench's per-transaction log

    @classmethod
    def of(cls, ctx: TrialContext) -> Paths:
        return cls(
            ctx.mountpoint / "pgdata",
            servers.socket_dir(ctx.run_dir, "postgresql"),
            servers.socket_dir(ctx.run_dir, "pgbench-log"),
        )

    server_log = FileIn("sockets", "server.log")
    socket = FileIn("sockets", SOCKET_NAME)


_PREFIX = re.compile(r"^.*?\[\d+\]\s+")  # log_line_prefix '%m [%p] ': time, pid


def server_said(log: str) -> str:
    """Why a server did not start, from its log: its first FATAL (or PANIC) line, after
    the line before it (a refused setting is logged at LOG level, then the FATAL
    `configuration file ... contains errors`); else its last line."""
    lines = [_PREFIX.sub("", line) for line in log.splitlines() if line.strip()]
    for i, line in enumerate(lines):
        if line.startswith(("FATAL:", "PANIC:")):
            return "; ".join(" ".join(x.split()) for x in lines[max(0, i - 1) : i + 1])
    return " ".join(lines[-1].split()) if lines else ""


def read_text_of(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def remove_dirs(paths: Paths) -> None:
    for d in (paths.txlog, paths.sockets):
        shutil.rmtree(d, ignore_errors=True)
    with contextlib.suppress(OSError):
        paths.sockets.parent.rmdir()  # scratch-<pid>, when no other server's is left
