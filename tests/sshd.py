"""A real OpenSSH server on loopback addresses for the fleet tests: Debian's sshd with a
throwaway host key and a throwaway root key pair in a temporary directory, its own port,
listening on 127.0.0.x only; stopped and removed on every path. A test can take it away
mid-run (`drop`: the server and every session it serves end, as when a host falls off the
network) and bring it back (`start`)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

SSHD = Path("/usr/sbin/sshd")


@dataclass
class SshServer:
    addresses: tuple[str, ...]
    port: int
    key: Path  # the client's private key (root's, for this server only)
    dir: Path
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> None:
        with open(self.dir / "sshd.log", "ab") as log:
            self.proc = subprocess.Popen(
                [str(SSHD), "-D", "-e", "-f", str(self.dir / "sshd_config")],
                stdout=log,
                stderr=log,
            )
        deadline = time.monotonic() + 20
        while not all(_listening(a, self.port) for a in self.addresses):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    "sshd did not start: " + (self.dir / "sshd.log").read_text(errors="replace")
                )
            time.sleep(0.1)

    def drop(self) -> None:
        """End the server and every session it serves (each its own sshd process below
        it): clients then find nothing there, as when the host falls off the network.
        The sessions' sshd processes die at once (the connection is gone); the commands
        they ran get SIGTERM and end as commands do, running their exit traps (a login
        shell's startup killed mid-way can leave a lock that stalls every later login).
        What those sessions left running detached (an async job) goes on."""
        self._end_sessions(signal.SIGKILL, only=_is_sshd)
        self.stop()

    def stop(self) -> None:
        """End the server and the sessions it still serves (an SSH client's ControlPersist
        master keeps one open for a minute after its last command): nothing outlives it."""
        self._end_sessions(signal.SIGTERM)
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def _end_sessions(self, sig: signal.Signals, only: Callable[[int], bool] | None = None) -> None:
        """`sig` to the processes below the server that `only` picks (all by default);
        SIGTERM to the others."""
        if self.proc is None:
            return
        for pid in _descendants(self.proc.pid):
            try:
                os.kill(pid, sig if only is None or only(pid) else signal.SIGTERM)
            except ProcessLookupError:
                pass

    def check_login(self, address: str, limit: float = 10.0) -> None:
        """Fail at once, saying why, when one command through this server takes longer
        than `limit` seconds: every Ansible task is such a command, so a login shell whose
        startup files stall (a stale lock in ~/.bashrc's tools) would stall each fleet
        test until its timeout instead."""
        started = time.monotonic()
        subprocess.run(
            [
                "ssh",
                "-p",
                str(self.port),
                "-i",
                str(self.key),
                "-o",
                "BatchMode=yes",
                *self.host_vars(address)["ansible_ssh_common_args"].split(),
                f"root@{address}",
                "true",
            ],
            check=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            capture_output=True,
        )
        took = time.monotonic() - started
        if took > limit:
            raise RuntimeError(
                f"one command through the test sshd took {took:.0f} s (limit {limit:.0f}): "
                "root's login shell is slow to start here (~/.bashrc, ~/.profile); "
                "every Ansible task would pay that"
            )

    def host_vars(self, address: str) -> dict[str, str]:
        """Inventory variables that reach `address` as root with the throwaway key."""
        return {
            "ansible_host": address,
            "ansible_port": str(self.port),
            "ansible_user": "root",
            "ansible_ssh_private_key_file": str(self.key),
            "ansible_ssh_common_args": "-o StrictHostKeyChecking=no "
            "-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
        }


def free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


def _listening(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=0.5) as conn:
            return conn.recv(4).startswith(b"SSH")
    except OSError:
        return False


@contextmanager
def sshd(addresses: Sequence[str] = ("127.0.0.2", "127.0.0.3")) -> Iterator[SshServer]:
    for address in addresses:
        if not address.startswith("127."):
            raise ValueError(f"the test sshd listens on loopback addresses only, not {address}")
    base = Path(tempfile.mkdtemp(prefix="fsbench-sshd-"))
    server: SshServer | None = None
    try:
        os.chmod(base, 0o700)
        key = base / "id_ed25519"
        host_key = base / "host_ed25519"
        for path in (key, host_key):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True
            )
        shutil.copyfile(key.with_suffix(".pub"), base / "authorized_keys")
        port = free_port(addresses[0])
        config = base / "sshd_config"
        config.write_text(
            "\n".join(
                [
                    f"Port {port}",
                    *(f"ListenAddress {a}" for a in addresses),
                    f"HostKey {host_key}",
                    f"PidFile {base / 'sshd.pid'}",
                    f"AuthorizedKeysFile {base / 'authorized_keys'}",
                    "PermitRootLogin prohibit-password",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "UsePAM no",
                    "StrictModes no",
                    "MaxStartups 100:30:200",
                    "MaxSessions 100",
                    "Subsystem sftp /usr/lib/openssh/sftp-server",
                    "LogLevel ERROR",
                    "",
                ]
            )
        )
        Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation directory
        server = SshServer(tuple(addresses), port, key, base)
        server.start()
        server.check_login(addresses[0])
        yield server
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(base, ignore_errors=True)


def _is_sshd(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() in {"sshd", "sshd-session"}
    except OSError:
        return False


def _descendants(pid: int) -> list[int]:
    """Every process below `pid`, children first."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rpartition(")")[2].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    out: list[int] = []
    todo = [pid]
    while todo:
        children = parents.get(todo.pop(), [])
        out += children
        todo += children
    return out


def write_inventory(
    path: Path, server: SshServer, hosts: dict[str, dict[str, str]], groups: dict[str, list[str]]
) -> Path:
    """An INI inventory: each host with its variables (address from `ansible_host`, or
    reached through `server`), then the groups."""
    lines = []
    for name, variables in hosts.items():
        merged = {**server.host_vars(variables.get("ansible_host", "127.0.0.2")), **variables}
        lines.append(name + " " + " ".join(f"{k}={_ini(v)}" for k, v in merged.items()))
    for group, members in groups.items():
        lines += ["", f"[{group}]", *members]
    path.write_text("\n".join(lines) + "\n")
    return path


def _ini(value: str) -> str:
    return f"'{value}'" if " " in value else value
