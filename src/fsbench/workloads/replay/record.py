"""`fsbench record`: a command run under strace in a directory (a scratch one, or the
user's tree), its filesystem calls and those of its children turned into a trace by
fsbench-engine (docs/replay.md), with the starting tree it touched.

The tree is snapshotted before the command runs (paths, types, sizes, modes; contents
only `with_data`); strace writes its output to a file beside the trace, which the engine
reads streaming and deletes with the snapshot once the trace is written.
"""

from __future__ import annotations

import datetime
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsbench.system import engine, proc
from fsbench.system.errors import FsbenchError

TRACER = proc.Tool("strace", "strace")


@dataclass(frozen=True)
class Recording:
    trace: Path
    exit_status: int
    # The engine's import report: calls, threads, paths, calls per kind, the starting
    # tree, what was not recorded.
    report: dict[str, Any]


def _run_traced(argv: list[str], cwd: Path) -> int:
    """The command under strace, its output on ours; Ctrl-C stops its whole group."""
    child = proc.spawn(argv, stdout=None, stderr=None, preexec_fn=lambda: os.chdir(cwd))
    try:
        return child.wait()
    except BaseException:
        proc.kill_group(child)
        child.wait()
        raise


def record(command: list[str], out: Path, *, directory: Path | None, with_data: bool) -> Recording:
    """Run `command` in `directory` (None: an empty scratch directory, removed after)
    under strace and write its trace to `out`."""
    if not command:
        raise FsbenchError("record needs a command after --: fsbench record -o FILE -- CMD ...")
    if (why := proc.missing_tools([TRACER])) is not None:
        raise FsbenchError(f"record: {why}")
    if directory is not None and not directory.is_dir():
        raise FsbenchError(f"record: --dir {directory}: not a directory")
    out = out.resolve()
    if not out.parent.is_dir():
        raise FsbenchError(f"record: {out.parent}: no such directory for the trace")
    version = proc.tool_version(["strace", "-V"]) or "strace"
    with tempfile.TemporaryDirectory(prefix=".fsbench-record-", dir=out.parent) as work:
        scratch = Path(work) / "tree"
        root = (directory if directory is not None else scratch).resolve()
        root.mkdir(exist_ok=True)
        snapshot = Path(work) / "snapshot.gz"
        engine.trace_snapshot(root, snapshot, with_data=with_data)
        strace_out = Path(work) / "strace.txt"
        argv = ["strace", *engine.strace_args(), "-o", str(strace_out), "--", *command]
        started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        status = _run_traced(argv, root)
        if status < 0:
            status = 128 + abs(status)  # killed by a signal, as a shell says it
        if not strace_out.is_file():
            raise FsbenchError(f"record: strace wrote nothing (exit status {status})")
        header = {
            "command": command,
            "tracer": version,
            "recorded_at": started,
            "exit_status": status,
            "tree": "scratch" if directory is None else str(root),
        }
        report = engine.trace_import(strace_out, root, out, snapshot, header)
        shutil.rmtree(scratch, ignore_errors=True)
    return Recording(out, status, report)
