"""`fsbench ARGV` as a process of its own, forked from one that has imported the CLI already.

Each command a test runs this way is the real `fsbench.cli.app.main()` in a fresh process:
its own pid and session, stdin from /dev/null, stdout and stderr to files, the exit status
the interpreter gives when main() ends (SystemExit, atexit handlers, threads joined), and
nothing it does reaches the next command (the server forks each one from the state it had
after the import). What it saves is the import of fsbench and its dependencies (about a
second of CPU per command), which a test of many short commands would otherwise pay each
time: tests/integration/test_bad_input.py's refusals, which end before anything runs.

    with ForkedCli(env) as cli:
        res = cli.run("run", "--reps", "many", timeout=120)  # a CompletedProcess
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from types import TracebackType

# The server: reads one JSON request a line, forks, and in the child runs main() with the
# request's argv; the parent answers with the child's exit status. The child never returns
# to the loop: main() ends in SystemExit, which ends the child's interpreter as it would
# end `python -m fsbench.cli`.
SERVER = r"""
import json, os, signal, sys, time
from fsbench.cli.app import main

for line in sys.stdin:
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        os.setsid()
        for fd, path, flags in (
            (0, os.devnull, os.O_RDONLY),
            (1, req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
            (2, req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        ):
            opened = os.open(path, flags, 0o600)
            os.dup2(opened, fd)
            os.close(opened)
        sys.stdin = open(0, closefd=False)
        sys.argv = ["fsbench", *req["argv"]]
        main()
        sys.exit(0)
    deadline = time.monotonic() + req["timeout"]
    timed_out = False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline and not timed_out:
            timed_out = True
            os.killpg(pid, signal.SIGKILL)
        time.sleep(0.005)
    code = os.waitstatus_to_exitcode(status)
    sys.stdout.write(json.dumps({"returncode": code, "timed_out": timed_out}) + "\n")
    sys.stdout.flush()
"""


class ForkedCli:
    """A server that forks one `fsbench` per `run`, started with `env`."""

    def __init__(self, env: dict[str, str]) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="fsbench-forkcli-")
        self._server = subprocess.Popen(
            [sys.executable, "-c", SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )

    def run(self, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        out, err = Path(self._dir.name, "stdout"), Path(self._dir.name, "stderr")
        request = {"argv": list(argv), "stdout": str(out), "stderr": str(err), "timeout": timeout}
        assert self._server.stdin is not None and self._server.stdout is not None
        self._server.stdin.write(json.dumps(request) + "\n")
        self._server.stdin.flush()
        line = self._server.stdout.readline()
        if not line:
            raise RuntimeError(f"the fsbench fork server ended (exit {self._server.wait()})")
        answer = json.loads(line)
        stdout, stderr = out.read_text(errors="replace"), err.read_text(errors="replace")
        if answer["timed_out"]:
            raise subprocess.TimeoutExpired(["fsbench", *argv], timeout, stdout, stderr)
        return subprocess.CompletedProcess(["fsbench", *argv], answer["returncode"], stdout, stderr)

    def close(self) -> None:
        if self._server.poll() is None:
            assert self._server.stdin is not None
            self._server.stdin.close()
            try:
                self._server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._server.kill()
                self._server.wait()
        self._dir.cleanup()

    def __enter__(self) -> ForkedCli:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
