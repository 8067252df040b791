"""Running external commands: always argv lists, never shell strings."""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any


@dataclass(frozen=True)
class Result:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def output(self) -> str:
        """stderr and stdout together, trimmed: what a user needs to see of a failure."""
        return "\n".join(p for p in (self.stderr.strip(), self.stdout.strip()) if p)

    @property
    def signal(self) -> str | None:
        """The signal that killed it (SIGKILL: the OOM killer, a kill -9), if one did."""
        if self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"

    def command(self) -> str:
        return " ".join(self.argv)


class CommandError(Exception):
    def __init__(self, result: Result) -> None:
        first = result.output.splitlines()[0] if result.output else f"exit {result.returncode}"
        super().__init__(f"{result.command()}: {first}")
        self.result = result


def run(
    argv: Sequence[str],
    *,
    check: bool = False,
    timeout: float | None = 600,
    input_text: str | None = None,
    cwd: str | Path | None = None,
) -> Result:
    """Run argv, capture text output. A missing program is returncode 127, not an exception.
    Standard input is empty unless given: a tool that reads it must never wait on a tty.

    The tool runs in a process group of its own, and the whole group is killed when it
    times out or when anything interrupts the wait (per-trial timeout, Ctrl-C): tools that
    fork (dbench's clients, make -j) leave no orphans holding the filesystem busy."""
    args = tuple(str(a) for a in argv)
    try:
        child = subprocess.Popen(
            args,
            stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            cwd=cwd,
            start_new_session=True,
        )
    except FileNotFoundError:
        result = Result(args, 127, "", f"{args[0]}: command not found")
    else:
        try:
            out, err = child.communicate(input_text, timeout=timeout)
            result = Result(args, child.returncode, out, err)
        except subprocess.TimeoutExpired:
            kill_group(child)
            result = Result(args, 124, "", f"{args[0]}: timed out after {timeout:.0f} s")
        except BaseException:
            kill_group(child)
            raise
    if check and not result.ok:
        raise CommandError(result)
    return result


def spawn(
    argv: Sequence[str],
    *,
    stdout: Any = subprocess.DEVNULL,
    stderr: Any = subprocess.DEVNULL,
    preexec_fn: Callable[[], None] | None = None,
) -> subprocess.Popen[bytes]:
    """A long-lived child (a server, QEMU, a load) in a session of its own, so that it and
    everything it forks are stopped as a group (kill_group); no standard input."""
    return subprocess.Popen(
        [str(a) for a in argv],
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
        start_new_session=True,
        preexec_fn=preexec_fn,
    )


def kill_group(child: subprocess.Popen[Any]) -> None:
    """SIGKILL a child started with start_new_session=True and everything it forked."""
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        child.communicate(timeout=30)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        child.kill()
        child.wait()


def which(program: str) -> str | None:
    # /sbin and /usr/sbin are not on every root PATH (sudo, cron, CI); mkfs lives there.
    return shutil.which(program) or shutil.which(program, path="/usr/sbin:/sbin:/usr/bin:/bin")


@dataclass(frozen=True)
class Tool:
    """A command a workload or a monitor runs, and the Debian package that provides it
    (`make install` installs it: execute/packages.py)."""

    command: str
    package: str


def missing_tools(tools: Sequence[Tool]) -> str | None:
    """Which of `tools` this machine lacks, with what to install (one line), or None."""
    absent = [t for t in tools if which(t.command) is None]
    if not absent:
        return None
    return "missing " + ", ".join(f"{t.command} (apt-get install {t.package})" for t in absent)


def tool_version(argv: Sequence[str]) -> str | None:
    """First non-empty output line of a version command, or None if the tool is missing."""
    if which(argv[0]) is None:
        return None
    res = run(argv, timeout=20)
    for line in (res.stdout + "\n" + res.stderr).splitlines():
        if line.strip():
            return line.strip()
    return None


def run_to_file(argv: Sequence[str], out: IO[bytes], *, timeout: float | None = 600) -> Result:
    """Run argv with stdout into an open binary file (decompression, archives)."""
    args = tuple(str(a) for a in argv)
    try:
        cp = subprocess.run(
            args,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.PIPE,
            timeout=timeout,
            check=False,
        )
        return Result(args, cp.returncode, "", cp.stderr.decode("utf-8", "replace"))
    except FileNotFoundError:
        return Result(args, 127, "", f"{args[0]}: command not found")
    except subprocess.TimeoutExpired as exc:
        return Result(args, 124, "", f"{args[0]}: timed out after {exc.timeout:.0f} s")


def read_through_cat(
    argv: Sequence[str], *, cwd: str | None = None, timeout: float | None = 3600
) -> Result:
    """`argv | cat > /dev/null` without a shell. GNU tar reads no file data when its
    output is /dev/null itself, so the bytes must go through a pipe."""
    args = tuple(str(a) for a in argv)
    with tempfile.TemporaryFile() as err:
        try:
            producer = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err, cwd=cwd)
        except FileNotFoundError:
            return Result(args, 127, "", f"{args[0]}: command not found")
        assert producer.stdout is not None
        sink = subprocess.Popen(["cat"], stdin=producer.stdout, stdout=subprocess.DEVNULL)
        producer.stdout.close()  # so the producer sees SIGPIPE if cat dies
        try:
            sink.wait(timeout=timeout)
            rc = producer.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return Result(args, 124, "", f"{args[0]}: timed out after {timeout:.0f} s")
        finally:
            # Also on an exception from outside (per-trial timeout, Ctrl-C): no orphans
            # left holding the filesystem busy.
            for child in (producer, sink):
                if child.poll() is None:
                    child.kill()
                    child.wait()
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    if sink.returncode != 0 and rc == 0:
        rc = sink.returncode
    return Result(args, rc, "", stderr)


def die_with_parent(sig: int) -> Callable[[], None]:
    """A `preexec_fn` that gives the child `sig` when this process dies, however it dies
    (PR_SET_PDEATHSIG): a killed fsbench leaves no QEMU or stress-ng behind."""

    def arm() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, sig)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass

    return arm
