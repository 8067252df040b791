"""filebench personalities through fsbench-engine, on real filesystems (tiny scale)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fsbench.store.results import Store
from fsbench.system import engine as _engine
from tests.helpers import TEST_DATA_HOME, fsbench, ours

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(_engine.find_engine() is None, reason="fsbench-engine not built"),
]


def _run(workdir: Path, *args: str) -> tuple[int, list[dict[str, object]], str]:
    res = fsbench(
        "run",
        "--workdir",
        str(workdir / "work"),
        "--db",
        str(workdir / "r.db"),
        "--image-size",
        "1G",
        "--scale",
        "tiny",
        "--reps",
        "1",
        "--json",
        *args,
    )
    return res.returncode, json.loads(res.stdout)["rows"] if res.stdout.strip() else [], res.stderr


def test_fileserver_thread_sweep_gives_ops_and_percentiles(workdir: Path) -> None:
    rc, rows, err = _run(
        workdir,
        "--fs",
        "ext4,xfs",
        "--workload",
        "fileserver",
        "--set",
        "threads=1,4",
        "--set",
        "duration=1",
    )
    assert rc == 0, err
    for fs in ("ext4", "xfs"):
        for threads in (1, 4):
            cell = {
                r["metric"]: r for r in rows if r["fs"] == fs and r["params"]["threads"] == threads
            }
            assert cell["ops_per_s"]["mean"] > 0
            p = [cell[f"lat_{q}_us"]["mean"] for q in ("p50", "p95", "p99", "p99_9", "max")]
            assert all(x > 0 for x in p) and p == sorted(p)
            assert cell["write_amplification"]["mean"] > 0
            assert cell["prepare_seconds"]["mean"] >= 0
    assert ours(workdir) == ([], [])


@pytest.mark.parametrize("name", ["varmail", "webserver"])
def test_other_personalities(workdir: Path, name: str) -> None:
    rc, rows, err = _run(workdir, "--fs", "ext4", "--workload", name, "--set", "duration=1")
    assert rc == 0, err
    ops = next(r for r in rows if r["metric"] == "ops_per_s")
    assert ops["status"] == "ok" and ops["mean"] > 0


def _engine_running(parent: int) -> int | None:
    """The pid of the engine's `run` (a trial's timed phase) that `parent` started."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            argv = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError):
            continue
        if int(fields[1]) == parent and argv[0].endswith(b"fsbench-engine") and b"run" in argv:
            return int(stat.parent.name)
    return None


def test_an_engine_killed_mid_trial_is_a_failed_trial_and_the_run_goes_on(workdir: Path) -> None:
    """The engine SIGKILLed in a counted trial's timed phase (the OOM killer): that trial is
    recorded failed with the signal, the run goes on with the next, and nothing is left."""
    db = workdir / "r.db"
    args = ["--workdir", str(workdir / "work"), "--db", str(db), "--image-size", "1G"]
    args += ["--scale", "tiny", "--reps", "2", "--fs", "ext4", "--workload", "varmail"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "fsbench.cli", "run", *args, "--set", "duration=3", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "XDG_DATA_HOME": str(TEST_DATA_HOME)},
    )
    try:
        killed = None
        deadline = time.monotonic() + 240
        while killed is None and time.monotonic() < deadline and proc.poll() is None:
            stored = len(Store(db).get_trials(1)) if db.exists() else 0
            pid = _engine_running(proc.pid) if stored >= 1 else None  # past the warm-up
            if pid is not None:
                time.sleep(0.5)  # in its timed phase
                os.kill(pid, signal.SIGKILL)
                killed = pid
            time.sleep(0.1)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert killed is not None, err
    assert proc.returncode == 4, err  # some trials failed
    trials = Store(db).get_trials(1)
    failed = [t for t in trials if t.status == "failed"]
    assert len(failed) == 1 and "killed by SIGKILL" in failed[0].message, failed
    assert failed[0].rep > 0  # a counted trial
    assert sorted(t.seq for t in trials) == list(range(len(trials))) and len(trials) == 3
    assert any(t.status == "ok" and t.seq > failed[0].seq for t in trials) or failed[0].seq == 2
    assert ours(workdir) == ([], [])
