"""A guest's run directory: its share, root overlay, scratch disk, console log and QEMU's
pid, in the work directory, named after the fsbench process that owns it
(`vm-<pid>-<n>`). Released on every path (QEMU killed, the directory deleted, the serial
log kept in the cache); a run directory whose owner is gone is released by the next run
or `fsbench doctor`.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from fsbench.execute.targets.stale import pid_alive
from fsbench.plan.targets import DEFAULT_WORKDIR
from fsbench.system.errors import FsbenchError
from fsbench.system.layout import FileIn

PREFIX = "vm-"
PIDFILE = "qemu.pid"  # QEMU writes its pid there (-pidfile): a stale one is killed by it
KEEP_LOGS = 30
CONSOLE_TAIL_LINES = 40


@dataclass
class RunDir:
    path: Path
    cache: Path  # where the console log is kept (cache/logs)
    kept_log: str | None = None

    share = FileIn("path", "share")
    console = FileIn("path", "console.log")
    overlay = FileIn("path", "root.qcow2")
    pidfile = FileIn("path", PIDFILE)
    stderr = FileIn("path", "qemu.stderr")

    def keep_log(self) -> str:
        """The serial log outlives the directory: cache/logs/<time>-<pid>.log, the last
        few kept. Once; its path, or "" when there is none."""
        if self.kept_log is None:
            self.kept_log = _keep(self.console, self.cache)
        return self.kept_log

    def with_console(self, what: str) -> str:
        """`what` went wrong, with the serial console's last lines."""
        return f"{what}\n--- serial console (last lines) ---\n{console_tail(self.console)}"


@contextmanager
def run_dir(workdir: Path, cache: Path) -> Iterator[RunDir]:
    """A fresh run directory with its share made; released (and its log kept) after."""
    rd = RunDir(new_run_dir(workdir), cache)
    try:
        rd.share.mkdir()
        yield rd
    finally:
        rd.keep_log()
        release(rd.path)


def new_run_dir(workdir: Path) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    for n in range(1000):
        path = workdir / f"{PREFIX}{os.getpid()}-{n}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise FsbenchError(f"cannot make a VM run directory in {workdir}")


def release(path: Path) -> None:
    """Kill the directory's QEMU if it still runs, delete the directory."""
    try:
        pid = int((path / PIDFILE).read_text().strip())
    except (OSError, ValueError):
        pid = 0
    if pid and pid_alive(pid) and _is_qemu(pid, path):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    shutil.rmtree(path, ignore_errors=True)


def _is_qemu(pid: int, path: Path) -> bool:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    return "qemu" in cmd and str(path) in cmd


def release_stale(workdir: Path = DEFAULT_WORKDIR) -> list[str]:
    """Run directories of fsbench processes that are gone: kill their QEMU, delete them."""
    released = []
    for path in sorted(workdir.glob(f"{PREFIX}*-*")):
        owner = path.name[len(PREFIX) :].split("-")[0]
        if not owner.isdigit() or pid_alive(int(owner)) or not path.is_dir():
            continue
        release(path)
        released.append(str(path))
    return released


def console_tail(path: Path, lines: int = CONSOLE_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no console log)"
    text = text.replace("\r", "")
    return "\n".join(text.splitlines()[-lines:])


def _keep(console: Path, cache: Path) -> str:
    if not console.is_file():
        return ""
    logs = cache / "logs"
    try:
        logs.mkdir(parents=True, exist_ok=True)
        dst = logs / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
        shutil.copyfile(console, dst)
        for old in sorted(logs.glob("*.log"))[:-KEEP_LOGS]:
            old.unlink(missing_ok=True)
        return str(dst)
    except OSError:
        return ""
