"""Running fsbench's playbooks with ansible-playbook, and reading what happened per host.

Results come back through fsbench's callback plugin (callbacks/fsbench_events.py: one JSON
line per host and task); Ansible's own output goes to a log file in the controller's fleet
directory, and each call's seconds and controller CPU to `calls.jsonl` beside it (what a
poll of N hosts costs the controller). Every variable travels in a vars file (mode 0600,
deleted after the call), never on a command line. A secret (the database password) is in
no file at all: it lives in a memfd (memory, no path) whose descriptor ansible-playbook
inherits, read by the one task that needs it (marked no_log) through
`lookup('pipe', 'cat /proc/$PPID/fd/N')`; it ends with the last process holding it, so a
controller killed with -9 leaves nothing of it behind.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from fsbench.system import proc
from fsbench.system.errors import FsbenchError

PLAYBOOKS = ("start", "status", "stop", "collect")
# One line per ansible-playbook call: playbook, hosts, start, seconds, controller CPU seconds.
CALLS = "calls.jsonl"


def binary(name: str) -> str | None:
    """An Ansible command: beside this Python first (ansible-core installed in fsbench's
    own venv, which need not be on PATH), then on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    return proc.which(name)


@dataclass
class Event:
    """One task's result on one host."""

    host: str
    task: str
    status: str  # ok | failed | unreachable | skipped
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def reason(self) -> str:
        """Ansible's one-line reason for a failure."""
        for key in ("msg", "stderr", "stdout"):
            text = str(self.data.get(key) or "").strip()
            if text:
                return text.splitlines()[-1][:500]
        return self.status


@dataclass
class Ansible:
    """ansible-playbook runs against one inventory, sharing a control directory (SSH
    connections reused between polls) that `close()` releases."""

    inventory: Path
    workdir: Path  # the controller's fleet directory: logs, vars files, fetched stores
    forks: int = 20
    timeout: float = 3600.0  # one playbook run
    _control: Path | None = None

    def playbook_dir(self) -> Path:
        return Path(str(resources.files("fsbench.fleet").joinpath("playbooks")))

    def _env(self, events: Path) -> dict[str, str]:
        if self._control is None:
            # A short path: OpenSSH's control sockets live within the 108-byte limit.
            self._control = Path(tempfile.mkdtemp(prefix="fsb-cp-"))
        callbacks = Path(str(resources.files("fsbench.fleet").joinpath("callbacks")))
        playbook = binary("ansible-playbook") or "ansible-playbook"
        env = dict(os.environ)
        env.update(
            {
                "PATH": f"{Path(playbook).parent}:{env.get('PATH', '/usr/bin:/bin')}",
                "ANSIBLE_CALLBACK_PLUGINS": str(callbacks),
                "ANSIBLE_CALLBACKS_ENABLED": "fsbench_events",
                "ANSIBLE_FORKS": str(self.forks),
                "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_RETRY_FILES_ENABLED": "False",
                "ANSIBLE_LOCAL_TEMP": str(self.workdir / "ansible-tmp"),
                "ANSIBLE_SSH_CONTROL_PATH_DIR": str(self._control),
                "ANSIBLE_TIMEOUT": "20",
                # Debian's python3; an inventory's ansible_python_interpreter still wins.
                "ANSIBLE_PYTHON_INTERPRETER": "/usr/bin/python3",
                "ANSIBLE_INTERPRETER_PYTHON": "/usr/bin/python3",
                "ANSIBLE_DEPRECATION_WARNINGS": "False",
                "FSBENCH_EVENTS": str(events),
            }
        )
        # One SSH round trip per task instead of three (bench/fleet_scale.py: a status poll
        # of 16 hosts took half the time). A sudo that requires a tty refuses it: such a
        # host sets ansible_pipelining=false, or the controller's environment turns it off.
        env.setdefault("ANSIBLE_PIPELINING", "True")
        return env

    def run(
        self,
        name: str,
        variables: dict[str, Any],
        limit: Sequence[str] | None = None,
        secret: str = "",
    ) -> list[Event]:
        """Run playbook `name` on the inventory's hosts (or `limit`), return its events.
        A host that fails or cannot be reached is an event, not an exception. A `secret`
        reaches the playbook as the memfd whose number is `fsbench_secret_fd`."""
        if name not in PLAYBOOKS:
            raise ValueError(name)
        playbook = binary("ansible-playbook")
        if playbook is None:
            raise FsbenchError("fleet runs need Ansible: make install (ansible-core from PyPI)")
        self.workdir.mkdir(parents=True, exist_ok=True)
        fd, vars_path = tempfile.mkstemp(prefix=f"{name}-", suffix=".json", dir=self.workdir)
        events = self.workdir / f"{name}-{os.getpid()}-events.jsonl"
        events.unlink(missing_ok=True)
        secret_fd = _memfd(secret) if secret else None
        try:
            if secret_fd is not None:
                variables = {**variables, "fsbench_secret_fd": secret_fd}
            with os.fdopen(fd, "w") as out:  # mode 0600; no secret in it
                json.dump(variables, out)
            argv = [
                playbook,
                "-i",
                str(self.inventory),
                str(self.playbook_dir() / f"{name}.yml"),
                "-e",
                f"@{vars_path}",
            ]
            if limit is not None:
                argv += ["--limit", ",".join(limit)]
            with open(self.workdir / "ansible.log", "a") as log:
                log.write(f"\n=== {name} {' '.join(limit or ['all'])}\n")
                log.flush()
                began, t0, cpu0 = time.time(), time.monotonic(), _children_cpu()
                try:
                    subprocess.run(
                        argv,
                        env=self._env(events),
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        timeout=self.timeout,
                        check=False,
                        pass_fds=() if secret_fd is None else (secret_fd,),
                    )
                except subprocess.TimeoutExpired:
                    raise FsbenchError(
                        f"ansible-playbook {name} did not end within {self.timeout:.0f} s "
                        f"(see {self.workdir / 'ansible.log'})"
                    ) from None
                finally:
                    seconds, cpu = time.monotonic() - t0, _children_cpu() - cpu0
                    _record_call(self.workdir / CALLS, name, limit, began, seconds, cpu)
            return read_events(events)
        finally:
            if secret_fd is not None:
                os.close(secret_fd)
            Path(vars_path).unlink(missing_ok=True)
            events.unlink(missing_ok=True)

    def close(self) -> None:
        """End the SSH master connections this controller kept open."""
        if self._control is None:
            return
        for sock in self._control.iterdir():
            subprocess.run(
                ["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "fsbench-fleet"],
                capture_output=True,
                timeout=30,
                check=False,
            )
        subprocess.run(["rm", "-rf", str(self._control)], check=False)
        self._control = None


def _memfd(secret: str) -> int:
    """A descriptor of an anonymous memory file holding `secret`: no path on any
    filesystem, gone when the last process holding it ends."""
    fd = os.memfd_create("fsbench-secret", os.MFD_CLOEXEC)
    try:
        os.write(fd, secret.encode())
    except OSError:
        os.close(fd)
        raise
    return fd


def _children_cpu() -> float:
    """CPU seconds of this process's ended children (ansible-playbook and its forks)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _record_call(
    path: Path,
    name: str,
    limit: Sequence[str] | None,
    began: float,
    seconds: float,
    cpu: float,
) -> None:
    line = {
        "playbook": name,
        "hosts": len(limit) if limit is not None else None,
        "started": began,
        "seconds": round(seconds, 3),
        "cpu_s": round(cpu, 3),
    }
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def read_calls(path: Path) -> list[dict[str, Any]]:
    """The calls `Ansible.run` recorded in `path` (calls.jsonl), in order."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    return [json.loads(line) for line in lines if line.strip()]


def read_events(path: Path) -> list[Event]:
    out = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            continue
        host, task, status = data.pop("host"), data.pop("task"), data.pop("status")
        out.append(Event(host, task, status, data))
    return out
