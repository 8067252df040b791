"""`contention=busy`: a busy machine beside the trial (stress-ng), stopped afterwards and
never left running: it dies with fsbench, stops by itself after the trial's limit, and its
process group is written down (`WORKDIR/contention-<pid>.json`) so that the next `fsbench
run` or `fsbench doctor` stops what a run killed with -9 left (targets/stale.py)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fsbench.system import memcap, proc, stepgroup
from fsbench.system.errors import Unsupported

LOAD_RE = re.compile(r"^contention-(\d+)\.json$")


def load_path(directory: Path, pid: int | None = None) -> Path:
    """`DIR/contention-<pid>.json`: the stress-ng process group process <pid> started and
    has not stopped yet. A killed run's is stopped by the next run or `fsbench doctor`."""
    return Path(directory) / f"contention-{os.getpid() if pid is None else pid}.json"


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22): with
    the pid, what tells a process apart from a later one that reused its pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


_die = proc.die_with_parent(signal.SIGTERM)  # SIGTERM: stress-ng stops its stressors itself


def _outside_the_workload() -> None:
    """In stress-ng before it runs: dies with fsbench, and is no part of a `mem` cap (the
    busy machine beside the workload does not eat the workload's memory) nor of a traced
    step's group (its threads are not the workload's)."""
    _die()
    memcap.leave()
    stepgroup.leave()


def stop_load(path: Path, why: str) -> list[str]:
    """Stop the stress-ng group a load file names (a dead run's), if it is still that
    process (same start time); the file goes. One line per action."""
    try:
        doc = json.loads(Path(path).read_text())
        pgid, started = int(doc["pgid"]), str(doc["start_time"])
    except (OSError, ValueError, KeyError, TypeError):
        pgid, started = 0, ""
    lines: list[str] = []
    if pgid > 0 and _start_time(pgid) == started:
        try:
            os.killpg(pgid, signal.SIGKILL)
            lines.append(f"stopped stress-ng (process group {pgid}, {why})")
        except ProcessLookupError:
            pass
        except OSError as exc:
            lines.append(f"could not stop stress-ng group {pgid} ({why}): {exc.strerror}")
            return lines
    try:
        Path(path).unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        lines.append(f"could not delete {path}: {exc.strerror}")
    return lines


@contextmanager
def contention(
    kind: str, scratch_dir: Path, load_file: Path, limit_s: float | None = None
) -> Iterator[dict[str, Any]]:
    """`busy`: a busy desktop beside the trial (stress-ng: CPU, memory and I/O on the
    host's own disk, not the target), stopped afterwards; `idle`: nothing.

    stress-ng never outlives the run: it gets SIGTERM when fsbench dies, it stops by
    itself after `limit_s` (the trial's limit, plus a minute), and its process group is
    written down in `load_file` first, so that a run killed with -9 leaves something the
    next run or `fsbench doctor` stops (targets/stale.py)."""
    if kind != "busy":
        yield {"contention": kind}
        return
    if proc.which("stress-ng") is None:
        raise Unsupported("contention=busy needs stress-ng: apt-get install stress-ng")
    scratch_dir.mkdir(parents=True, exist_ok=True)
    cpus = max(1, (os.cpu_count() or 2) // 2)
    load = [
        "--cpu",
        str(cpus),
        "--cpu-load",
        "60",
        "--vm",
        "1",
        "--vm-bytes",
        "256M",
        "--hdd",
        "1",
        "--hdd-bytes",
        "128M",
    ]
    timeout = f"{int(limit_s) + 60}s" if limit_s else "0"
    argv = ["stress-ng", *load, "--temp-path", str(scratch_dir), "--timeout", timeout, "--quiet"]
    child = proc.spawn(argv, preexec_fn=_outside_the_workload)
    try:
        _write_load(load_file, child.pid)
        yield {"contention": kind, "load": " ".join(load)}
    finally:
        try:
            os.killpg(child.pid, signal.SIGTERM)
            child.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            child.wait()
        load_file.unlink(missing_ok=True)


def _write_load(path: Path, pgid: int) -> None:
    doc = {"pid": os.getpid(), "pgid": pgid, "start_time": _start_time(pgid)}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as f:
        f.write(json.dumps(doc) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
