"""Database servers that workloads start on the filesystem under test (PostgreSQL for
pgbench, MariaDB for sysbench-oltp).

A server runs as its own Unix user (both refuse root), keeps its data on the filesystem
under test, and listens only on a Unix socket in a directory of the run's own
(`WORKDIR/scratch-<pid>/<name>`), never on TCP. Before it starts it is written down in
`WORKDIR/server-<pid>.json` (how to stop it, where its pid file is), so that a run killed
with -9 leaves something the next `fsbench run` or `fsbench doctor` stops before it
releases the mount the server holds (targets/stale.py). It is stopped on every path out:
its own clean stop first, then SIGKILL of what is left.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from fsbench.system import proc
from fsbench.system.errors import TrialFailed, Unsupported

NOTE_RE = re.compile(r"^server-(\d+)\.json$")
STOP_TIMEOUT = 120.0


def note_path(workdir: Path, pid: int | None = None) -> Path:
    return Path(workdir) / f"server-{os.getpid() if pid is None else pid}.json"


SCRATCH_RE = re.compile(r"^scratch-(\d+)$")


def scratch_dir(workdir: Path, pid: int | None = None) -> Path:
    """This run's own directory beside the target (sockets, logs of tools): removed when the
    run ends, and by the next run's stale cleanup when it was killed."""
    return Path(workdir) / f"scratch-{os.getpid() if pid is None else pid}"


def socket_dir(workdir: Path, name: str, pid: int | None = None) -> Path:
    """Where a server's socket goes: a directory of this run's own, outside the target."""
    return scratch_dir(workdir, pid) / name


def as_user(user: str, argv: Sequence[str]) -> list[str]:
    """argv run as `user` (when fsbench runs as root, as it does to mkfs and mount):
    setpriv, not runuser or su, so that no PAM session moves it out of fsbench's cgroup
    (the `mem` cap) or gives it a login's limits."""
    if os.geteuid() != 0:
        return list(argv)
    # The program by fsbench's PATH: the user's reset one may lack /usr/sbin (mariadbd).
    program = proc.which(argv[0]) or argv[0]
    return [
        "setpriv",
        f"--reuid={user}",
        f"--regid={user}",
        "--init-groups",
        "--reset-env",
        "--",
        program,
        *argv[1:],
    ]


def user_ids(user: str) -> tuple[int, int]:
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise Unsupported(f"no {user} user: is its server installed? (make install)") from None
    return entry.pw_uid, entry.pw_gid


def owned_dir(path: Path, user: str, mode: int = 0o700) -> Path:
    """A directory (and its missing parents, root's) that `user` owns."""
    path.mkdir(parents=True, exist_ok=True)
    uid, gid = user_ids(user)
    os.chown(path, uid, gid)
    path.chmod(mode)
    return path


@dataclass
class Noted:
    """What the next run needs to stop a server this one started."""

    name: str
    user: str
    stop: list[str]  # its clean stop, run as `user`
    pidfile: str  # the server's own pid file (first line: its main pid)
    owner: int  # the fsbench process that started it


def _write_note(path: Path, noted: Noted) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as f:
        f.write(json.dumps(asdict(noted)) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _pid_of(pidfile: Path) -> int | None:
    try:
        return int(pidfile.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stop(noted: Noted) -> str:
    """Its clean stop, then SIGKILL if its main process is still there; what happened."""
    pid = _pid_of(Path(noted.pidfile))
    res = proc.run(as_user(noted.user, noted.stop), timeout=STOP_TIMEOUT)
    if pid is not None and _alive(pid):
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _alive(pid):
            try:
                os.killpg(os.getpgid(pid), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            return f"killed {noted.name} (pid {pid}): {res.output.splitlines()[-1:] or ''}"
    return f"stopped {noted.name}" + (f" (pid {pid})" if pid else "")


@contextmanager
def running(
    noted: Noted,
    note: Path,
    start: Sequence[str],
    ready: Path,
    *,
    log: Path | None = None,
    timeout: float = 300,
) -> Iterator[None]:
    """Start a server as its user and wait until its socket `ready` exists; yield; stop
    it on every path out. `start` either returns once the server runs on its own
    (`pg_ctl start`), or, with a `log` file for its output, is the server itself, left
    running in the background (`mariadbd`)."""
    _write_note(note, noted)
    child: subprocess.Popen[bytes] | None = None
    try:
        if log is None:
            res = proc.run(as_user(noted.user, start), timeout=timeout)
            if not res.ok:
                raise TrialFailed(
                    f"{noted.name} did not start: {(res.output.splitlines() or ['?'])[-1]}",
                    res.output[-4000:],
                )
        else:
            with open(log, "ab") as out:
                child = proc.spawn(as_user(noted.user, start), stdout=out, stderr=out)
        deadline = time.monotonic() + timeout
        while not ready.exists():
            if child is not None and child.poll() is not None:
                said = log.read_text(errors="replace") if log else ""
                raise TrialFailed(
                    f"{noted.name} exited before it was ready: "
                    f"{(said.strip().splitlines() or ['?'])[-1]}",
                    said[-4000:],
                )
            if time.monotonic() > deadline:
                raise TrialFailed(f"{noted.name} started but its socket {ready} never came")
            time.sleep(0.1)
        yield
    finally:
        _stop(noted)
        if child is not None:
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
        note.unlink(missing_ok=True)


def stop_noted(note: Path, why: str) -> list[str]:
    """Stop the server a dead run's note names (stale cleanup); the note goes."""
    try:
        noted = Noted(**json.loads(note.read_text()))
    except (OSError, ValueError, TypeError):
        note.unlink(missing_ok=True)
        return []
    lines = []
    pid = _pid_of(Path(noted.pidfile))
    if pid is not None and _alive(pid):
        lines.append(f"{_stop(noted)} ({why})")
    note.unlink(missing_ok=True)
    return lines
