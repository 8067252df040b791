"""`fsbench record`: a command run under strace in a directory (a scratch one, or the
user's tree), its filesystem calls and those of its children turned into a trace by
fsbench-engine (docs/replay.md), with the starting tree it touched.

The tree is snapshotted before the command runs (paths, types, sizes, modes; contents
only `with_data`); strace writes its output to a file beside the trace, which the engine
reads streaming and deletes with the snapshot once the trace is written.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsbench.system import cpu_latency, engine, proc
from fsbench.system.errors import FsbenchError, TrialFailed

TRACER = proc.Tool("strace", "strace")
# Calls of the loop that measures strace's cost per call before each recording: about a
# second under strace, a few milliseconds without.
CALIBRATION_CALLS = 20_000


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


def tracer_cost(work: Path, calls: int, options: list[str]) -> engine.StraceCost:
    """strace's cost per recorded call, measured with the recording's `options`: the
    engine's loop of fstats of one cached file, its own seconds without strace and under
    it, and the gap strace recorded between its calls. A replay with the recorded timing
    waits the recorded gaps less this (docs/replay.md): without it, a recording of many
    cheap calls replayed with its gaps several times slower than the program ran."""
    loop = work / "calibration"
    loop.mkdir(exist_ok=True)
    native = float(engine.fstat_loop(loop, calls)["seconds"])
    strace_out = work / "calibration.strace"
    argv = ["strace", *options, "-o", str(strace_out), "--"]
    res = proc.run([*argv, str(engine.engine()), *engine.fstat_loop_args(loop, calls)], timeout=600)
    if not res.ok:
        raise FsbenchError(f"record: strace's cost per call not measured: {res.output}")
    traced = float(json.loads(res.stdout)["seconds"])
    per_call = max(0, round((traced - native) / calls * 1e9))
    gap = int(engine.strace_gaps(strace_out, calls)["gap_ns"])
    strace_out.unlink()
    return engine.StraceCost(per_call_ns=per_call, gap_ns=min(gap, per_call))


def _mean(before: engine.StraceCost, after: engine.StraceCost) -> engine.StraceCost:
    per_call = round((before.per_call_ns + after.per_call_ns) / 2)
    gap = min(round((before.gap_ns + after.gap_ns) / 2), per_call)
    return engine.StraceCost(per_call_ns=per_call, gap_ns=gap)


def record(command: list[str], out: Path, *, directory: Path | None, with_data: bool) -> Recording:
    """Run `command` in `directory` (None: an empty scratch directory, removed after)
    under strace and write its trace to `out`."""
    try:
        return _record(command, out, directory=directory, with_data=with_data)
    except TrialFailed as exc:  # the engine's refusal: outside a trial, one line
        raise FsbenchError(f"record: {exc}") from None


def _record(command: list[str], out: Path, *, directory: Path | None, with_data: bool) -> Recording:
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
        options = engine.strace_args()
        argv = ["strace", *options, "-o", str(strace_out), "--", *command]
        # strace's cost, measured just before and just after the command and taken as
        # their mean, all three with the CPUs held out of deep idle (system/cpu_latency.py)
        with cpu_latency.shallow_idle() as not_held:
            before = tracer_cost(Path(work), CALIBRATION_CALLS, options)
            started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
            status = _run_traced(argv, root)
            if status < 0:
                status = 128 + abs(status)  # killed by a signal, as a shell says it
            if not strace_out.is_file():
                raise FsbenchError(f"record: strace wrote nothing (exit status {status})")
            after = tracer_cost(Path(work), CALIBRATION_CALLS, options)
        cost = _mean(before, after)
        header = {
            "command": command,
            "tracer": version,
            "recorded_at": started,
            "exit_status": status,
            "tree": "scratch" if directory is None else str(root),
            "cpu_latency_held": not_held is None,
        }
        report = engine.trace_import(strace_out, root, out, snapshot, header, cost)
        report["tracer_cost_ns"] = {
            "per_call": cost.per_call_ns,
            "gap": cost.gap_ns,
            "before": {"per_call": before.per_call_ns, "gap": before.gap_ns},
            "after": {"per_call": after.per_call_ns, "gap": after.gap_ns},
        }
        report["cpu_latency_not_held"] = not_held
        shutil.rmtree(scratch, ignore_errors=True)
    return Recording(out, status, report)
