"""A command and every process it starts, held together: in a cgroup of its own (cgroup v2,
where the machine offers a hierarchy fsbench may write) or else in a session of its own.
Its CPU time is counted over all of them, and when it ends (or anything interrupts the
wait: the trial's time limit, Ctrl-C) whatever it left running is killed, its double-forked
daemons included where the cgroup holds them.

    with Contained(argv, cwd=..., env=..., stdout=f, stderr=g) as command:
        ended = command.wait()   # its status, CPU, what it left running (killed)
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from fsbench.system import stepgroup
from fsbench.system.memcap import remove
from fsbench.system.opened import Opened
from fsbench.system.proc import die_with_parent

GROUP_PREFIX = "fsbench-command-"  # + fsbench's pid + "-" + a tag: stale.py knows them
GROUP_RE = re.compile(rf"^{GROUP_PREFIX}(\d+)-[0-9a-f]+$")


@dataclass(frozen=True)
class Ended:
    status: int  # the exit status, or -N when signal N killed it
    user_s: float  # CPU of the command and everything it started
    sys_s: float
    left: int  # its processes still running when it ended, killed then
    held_by: str  # "cgroup" or "session": what held its processes

    @property
    def ok(self) -> bool:
        return self.status == 0

    def said(self) -> str:
        """`exit status 2`, `killed by signal 9 (SIGKILL)`."""
        if self.status >= 0:
            return f"exit status {self.status}"
        return f"killed by signal {-self.status} ({signal.Signals(-self.status).name})"


def v2_group_root() -> Path | None:
    """The cgroup v2 group fsbench is in, where a command's group goes; None when there
    is none."""
    mount = stepgroup.v2_root()
    return None if mount is None else stepgroup.own_group(mount)


class Contained(Opened):
    """`argv` started in a group of its own, standard input empty; use as a context
    manager: leaving it kills what is left and removes the group, on every path."""

    def __init__(
        self,
        argv: list[str],
        *,
        cwd: Path,
        env: dict[str, str],
        stdout: IO[bytes],
        stderr: IO[bytes],
    ) -> None:
        self.argv, self.cwd, self.env = argv, cwd, env
        self.stdout, self.stderr = stdout, stderr
        self.group: Path | None = None
        self.child: subprocess.Popen[bytes] | None = None
        self._reaped: tuple[int, Any] | None = None

    def open(self) -> None:
        self.group = _make_group()
        try:
            self.child = self._start()
        except subprocess.SubprocessError:  # the group refused it: a session alone
            self._remove_group()
            self.child = self._start()
        except BaseException:
            self._remove_group()
            raise

    def _start(self) -> subprocess.Popen[bytes]:
        procs = self.group / "cgroup.procs" if self.group else None
        dies = die_with_parent(signal.SIGKILL)

        def in_group() -> None:  # in the child, before exec: nothing it forks escapes
            if procs is not None:
                fd = os.open(procs, os.O_WRONLY)
                try:
                    os.write(fd, b"0\n")
                finally:
                    os.close(fd)
            dies()

        return subprocess.Popen(
            self.argv,
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=self.stdout,
            stderr=self.stderr,
            start_new_session=True,
            preexec_fn=in_group,
        )

    def wait(self) -> Ended:
        """Wait for the command; then kill what it left running. Its CPU is the group's
        (every process it started), or the rusage of it and the children it waited for."""
        assert self.child is not None
        pid, status, usage = os.wait4(self.child.pid, 0)
        self._reaped = (status, usage)
        self.child.returncode = os.waitstatus_to_exitcode(status)
        left = self._kill_rest()
        cpu = self._group_cpu()
        user, system = cpu if cpu is not None else (usage.ru_utime, usage.ru_stime)
        return Ended(
            self.child.returncode, user, system, left, "cgroup" if self.group else "session"
        )

    def close(self) -> None:
        """Kill what the command left running and remove its group. Idempotent."""
        try:
            if self.child is not None and self._reaped is None:
                self._kill_rest()
                self.child.wait()
        finally:
            self._remove_group()

    def _members(self) -> list[int]:
        """The command's processes still alive: its group's, or its session's."""
        assert self.child is not None
        if self.group is not None:
            text = (self.group / "cgroup.procs").read_text()
            return [int(p) for p in text.split()]
        return session_members(self.child.pid)

    def _kill_rest(self) -> int:
        """SIGKILL every process of the command; how many there were."""
        members = self._members()
        if self.group is not None and (self.group / "cgroup.kill").exists():
            (self.group / "cgroup.kill").write_text("1\n")
        for _ in range(100):  # without cgroup.kill: until none is left (one may fork)
            alive = self._members()
            if not alive:
                break
            for pid in alive:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)
        assert self.child is not None
        return len([p for p in members if p != self.child.pid])

    def _group_cpu(self) -> tuple[float, float] | None:
        if self.group is None:
            return None
        stat = dict(
            line.split() for line in (self.group / "cpu.stat").read_text().splitlines() if line
        )
        if "user_usec" not in stat:
            return None
        return int(stat["user_usec"]) / 1e6, int(stat["system_usec"]) / 1e6

    def _remove_group(self) -> None:
        """rmdir the group once its last process is gone (a killed one takes a moment)."""
        group, self.group = self.group, None
        if group is not None:
            remove(group)


def _make_group() -> Path | None:
    """A fresh cgroup for one command, or None where there is no cgroup v2 to write."""
    try:
        root = v2_group_root()
        if root is None:
            return None
        group = root / f"{GROUP_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
        group.mkdir()
        return group
    except (OSError, ValueError, IndexError):
        return None


def session_members(sid: int) -> list[int]:
    """The processes of session `sid` (the session a command leads), zombies left out."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        # After the command's name: state, ppid, pgrp, session.
        if len(fields) > 3 and int(fields[3]) == sid and fields[0] not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def stale_groups() -> list[tuple[Path, int]]:
    """Command groups whose fsbench is gone (killed before it could remove them): (path,
    fsbench's pid), found anywhere in the cgroup v2 hierarchy."""
    mount = stepgroup.v2_root()
    if mount is None:
        return []
    found = []
    for where, dirs, _ in os.walk(mount):
        for name in dirs:
            m = GROUP_RE.match(name)
            if m and not Path(f"/proc/{m.group(1)}").exists():
                found.append((Path(where) / name, int(m.group(1))))
    return found


def release(group: Path) -> None:
    """Kill what is left in a stale command group and remove it (OSError if it stays)."""
    kill = group / "cgroup.kill"
    if kill.exists():
        kill.write_text("1\n")
    for _ in range(100):
        try:
            group.rmdir()
            return
        except OSError:
            time.sleep(0.02)
    group.rmdir()
