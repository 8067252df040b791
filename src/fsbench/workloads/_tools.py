"""Helpers shared by the workloads that drive an external tool (fs_mark, dbench, postmark,
gzip): running it with our own monotonic clock, and turning its failure into a
TrialFailed that carries the tool's own words."""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from fsbench.system import proc
from fsbench.system.errors import TrialFailed

MB = 1_000_000  # rates are MB/s in SI units, as dbench prints them
# Words that mark the line of a tool's output that says what went wrong.
_ERROR_WORDS = ("error", "fail", "cannot", "can't", "unable", "no space", "denied", "invalid")


def tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def first_error_line(result: proc.Result) -> str:
    """The line of a failed run that best says why: the first one naming an error (stderr
    first), else the first line of stderr, else the exit status."""
    for stream in (result.stderr, result.stdout):
        for line in stream.splitlines():
            if any(word in line.lower() for word in _ERROR_WORDS):
                return line.strip()
    for line in result.stderr.splitlines():
        if line.strip():
            return line.strip()
    return f"exit status {result.returncode}"


def tool_failed(tool: str, result: proc.Result, why: str = "") -> TrialFailed:
    """A TrialFailed for a tool run: its first error line in the message, the command,
    exit status and the tails of stderr and stdout in the detail."""
    message = f"{tool}: {why or first_error_line(result)}"
    parts = [f"$ {result.command()}", f"exit status {result.returncode}"]
    if result.stderr.strip():
        parts += ["--- stderr (tail)", tail(result.stderr)]
    if result.stdout.strip():
        parts += ["--- stdout (tail)", tail(result.stdout)]
    return TrialFailed(message, "\n".join(parts))


def run_in(argv: Sequence[str], cwd: Path, *, timeout: float) -> proc.Result:
    """proc.run in another working directory (for tools that want short relative paths)."""
    return proc.run(argv, cwd=cwd, timeout=timeout)


def run_to_file(argv: Sequence[str], stdout_path: Path, *, timeout: float) -> proc.Result:
    """Standard output into a file we open (no shell redirection); stderr captured."""
    with stdout_path.open("wb") as out:
        return proc.run_to_file(argv, out, timeout=timeout)


def run_watching(
    argv: Sequence[str],
    markers: Sequence[str],
    *,
    input_text: str = "",
    timeout: float,
) -> tuple[proc.Result, dict[str, float]]:
    """Run argv (its stdin fed with input_text), and note the monotonic time at which each
    marker first appears in its stdout: phase boundaries measured with our clock, for tools
    that flush their progress messages but print only whole seconds (postmark).

    Returns the Result and {marker: time.monotonic() when first seen} for the markers seen.
    A run that outlives `timeout` is killed and reported as exit status 124."""
    args = tuple(str(a) for a in argv)
    try:
        child = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # killed as a group, like proc.run
        )
    except FileNotFoundError:
        return proc.Result(args, 127, "", f"{args[0]}: command not found"), {}
    deadline = time.monotonic() + timeout
    try:
        return _watch(child, args, markers, input_text, timeout, deadline)
    except BaseException:
        proc.kill_group(child)  # a per-trial timeout or Ctrl-C: no orphan left behind
        raise


def _watch(
    child: subprocess.Popen[bytes],
    args: tuple[str, ...],
    markers: Sequence[str],
    input_text: str,
    timeout: float,
    deadline: float,
) -> tuple[proc.Result, dict[str, float]]:
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    out, err = bytearray(), bytearray()
    seen: dict[str, float] = {}
    wanted = [(m, m.encode()) for m in markers]
    pending = memoryview(input_text.encode())
    timed_out = False
    with child, selectors.DefaultSelector() as sel:
        for stream in (child.stdout, child.stderr):
            os.set_blocking(stream.fileno(), False)
            sel.register(stream, selectors.EVENT_READ)
        if pending:
            os.set_blocking(child.stdin.fileno(), False)
            sel.register(child.stdin, selectors.EVENT_WRITE)
        else:
            child.stdin.close()
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            for key, _ in sel.select(left):
                if key.fileobj is child.stdin:
                    try:
                        n = os.write(child.stdin.fileno(), pending)
                    except BrokenPipeError:  # the tool quit before reading everything
                        n = len(pending)
                    pending = pending[n:]
                    if not pending:
                        sel.unregister(child.stdin)
                        child.stdin.close()
                    continue
                chunk = os.read(key.fd, 65536)
                now = time.monotonic()
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                if key.fileobj is child.stderr:
                    err += chunk
                    continue
                start = max(0, len(out) - max((len(b) for _, b in wanted), default=0))
                out += chunk
                for name, raw in wanted:
                    if name not in seen and out.find(raw, start) >= 0:
                        seen[name] = now
        if timed_out:
            proc.kill_group(child)
        try:
            returncode = child.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill_group(child)
            timed_out = True
            returncode = 124
    stdout = out.decode(errors="replace")
    stderr = err.decode(errors="replace")
    if timed_out:
        stderr = f"{args[0]}: timed out after {timeout:.0f} s\n{stderr}"
        return proc.Result(args, 124, stdout, stderr), seen
    return proc.Result(args, returncode, stdout, stderr), seen
