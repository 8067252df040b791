"""`fsbench record` of a real program, replayed by the `replay` workload on real loop
devices (ext4, xfs): the replay makes the recorded calls, moves the recorded bytes and
gets the recorded results; a bad trace is refused in one line with nothing stored."""

from __future__ import annotations

import gzip
import json
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from fsbench import workloads
from fsbench.system import engine as _engine
from tests.helpers import cli_env, fsbench, ours

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(_engine.find_engine() is None, reason="fsbench-engine not built"),
]

# Two threads each write, fsync and rename files of their own directory; the main thread
# then lists, stats, reads back and removes some: a program nobody wrote for the replayer.
PROGRAM = """
import os, threading
def work(name):
    os.mkdir(name)
    for i in range(20):
        with open(f"{name}/tmp{i}", "wb") as f:
            f.write(os.urandom(1000 + 37 * i))
            f.flush()
            os.fsync(f.fileno())
        os.rename(f"{name}/tmp{i}", f"{name}/f{i}")
threads = [threading.Thread(target=work, args=(n,)) for n in ("a", "b")]
for t in threads: t.start()
for t in threads: t.join()
total = 0
for name in ("a", "b"):
    for entry in sorted(os.listdir(name)):
        os.stat(f"{name}/{entry}")
        with open(f"{name}/{entry}", "rb") as f:
            total += len(f.read())
for i in range(0, 20, 2):
    os.unlink(f"a/f{i}")
with open("data/input.bin", "rb") as f:
    total += len(f.read())
print(total)
"""


def _recorded(tree: Path, trace: Path, program: str) -> dict[str, Any]:
    """`fsbench record` of a Python program run in `tree`: its JSON report."""
    res = fsbench(
        "record", "-o", str(trace), "--dir", str(tree), "--json", "--", sys.executable, "-c",
        program,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    report: dict[str, Any] = json.loads(res.stdout[res.stdout.index("{") :])
    return report


def _record(tmp: Path) -> tuple[Path, dict[str, object]]:
    tree = tmp / "tree"
    (tree / "data").mkdir(parents=True)
    (tree / "data" / "input.bin").write_bytes(b"x" * 50_000)
    trace = tmp / "program.fsbt.gz"
    return trace, _recorded(tree, trace, PROGRAM)


def test_a_recorded_program_replays_its_calls_on_ext4_and_xfs(workdir: Path) -> None:
    trace, recorded = _record(workdir)
    kinds = recorded["calls_by_kind"]
    assert isinstance(kinds, dict)
    # What the program did on its tree is in the trace, both threads' part of it.
    assert kinds["write"] == 40 and kinds["fsync"] == 40 and kinds["rename"] == 40
    assert kinds["unlink"] == 10 and kinds["mkdir"] == 2
    assert recorded["tree"] == {
        "files": 1, "dirs": 2, "symlinks": 0, "bytes": 50_000, "data_bytes": 0
    }  # fmt: skip
    summary = _engine.trace_summary(trace)
    res = fsbench(
        "run", "--workdir", str(workdir / "work"), "--db", str(workdir / "r.db"),
        "--image-size", "1G", "--scale", "tiny", "--reps", "1", "--json",
        "--fs", "ext4,xfs", "--workload", "replay", "--set", f"trace={trace}",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)["rows"]
    for fs in ("ext4", "xfs"):
        got = {r["metric"]: r["mean"] for r in rows if r["fs"] == fs}
        assert got["calls"] == recorded["calls"], fs
        assert got["mismatches"] == 0 and got["calls_not_replayed"] == 0, fs
        assert got["bytes_unlike_recording"] == 0, fs
        for kind, count in kinds.items():
            assert got[f"{kind}_calls"] == count, (fs, kind)
        written = summary["kinds"]["write"]["bytes"]
        assert got["write_bytes"] == written == sum(1000 + 37 * i for i in range(20)) * 2
        assert got["read_bytes"] == summary["kinds"]["read"]["bytes"] >= written + 50_000
        assert got["calls_per_s"] > 0 and got["write_p99_us"] >= got["write_p50_us"] > 0
        assert not any(r["flags"] for r in rows if r["fs"] == fs), fs
    assert ours(workdir) == ([], [])


def _trace(path: Path, lines: list[str]) -> str:
    with gzip.open(path, "wt") as f:
        f.write("".join(line + "\n" for line in lines))
    return str(path)


def test_a_bad_trace_is_refused_in_one_line_with_nothing_stored(tmp_path: Path) -> None:
    """Each refusal is the workload's one line (the preflight asks `refuses` before anything
    runs); one goes through the command line, which stores nothing."""
    head = "fsbench-trace\t1\t{}"
    cases = {
        "truncated": (
            _trace(tmp_path / "cut.gz", [head, "p\t0\t0\t."]),
            "trace is truncated",
        ),
        "another version": (
            _trace(tmp_path / "v9.gz", ["fsbench-trace\t9\t{}", "end\t0\t0\t0"]),
            "trace version 9 is not supported",
        ),
        "outside its tree": (
            _trace(tmp_path / "out.gz", [head, "p\t0\t0\t.", "p\t1\t0\t../etc", "end\t0\t2\t0"]),
            "names a path outside its tree",
        ),
        "no such file": (str(tmp_path / "absent.gz"), "no such file"),
    }
    replay = workloads.get("replay")
    said_by = {}
    for what, (trace, said) in cases.items():
        why = replay().refuses(replay.params_model.model_validate({"trace": trace}))
        assert why is not None and said in why and "\n" not in why, (what, why)
        said_by[trace] = why
    db = tmp_path / "r.db"
    cut = cases["truncated"][0]
    res = fsbench(
        "run", "--workdir", str(tmp_path / "work"), "--db", str(db), "--scale", "tiny",
        "--fs", "ext4", "--workload", "replay", "--set", f"trace={cut}",
    )  # fmt: skip
    assert res.returncode == 2, res.stderr
    assert res.stderr.splitlines() == [f"fsbench: error: workload replay: {said_by[cut]}"]
    with closing(sqlite3.connect(db)) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        stored = conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] if "runs" in tables else 0
    assert stored == 0


# A program of many cheap calls and nothing else between them: strace's cost per call is
# most of its recorded time.
DENSE = """
import os
open("f", "w").close()
for i in range(3000):
    os.stat("f")
"""


def test_recorded_timing_waits_the_program_s_gaps_not_strace_s(tmp_path: Path) -> None:
    """The recording measures strace's cost per call beside the command and keeps it in
    the trace; a replay with timing=recorded takes it off each recorded gap, so a program
    of cheap calls does not replay at strace's pace (before: the replay waited nearly the
    whole recorded span)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    trace = tmp_path / "dense.fsbt.gz"
    cost = _recorded(tree, trace, DENSE)["tracer_cost_ns"]
    assert 0 < cost["gap"] <= cost["per_call"]
    held = _engine.trace_summary(trace)
    assert held["header"]["tracer_overhead_ns"] == cost["per_call"]
    assert held["header"]["gap_overhead_ns"] == cost["gap"]
    span = float(held["span_s"])
    spec = {"schema": _engine.SCHEMA, "trace": str(trace), "dir": str(tmp_path / "replay"),
            "timing": "recorded", "speed": 1.0}  # fmt: skip
    _engine.replay_prepare(spec, timeout=600)
    replayed = _engine.replay_run(spec, timeout=600)
    assert replayed["mismatches"]["total"] == 0
    assert held["calls"] >= 3000 and replayed["measured"]["calls"] == held["calls"]
    # The 3,000 stats' recorded gaps are mostly strace's: taken off, well under half the span.
    assert replayed["measured"]["elapsed_s"] < span / 2, (replayed["measured"], span, cost)


def test_an_engine_that_fails_is_one_line_for_record(tmp_path: Path) -> None:
    """An engine that refuses (a stale build without the trace commands) makes `fsbench
    record` fail in one line, not a traceback."""
    env = {**cli_env(), "FSBENCH_ENGINE": "/bin/false"}
    res = subprocess.run(
        [sys.executable, "-m", "fsbench.cli", "record", "-o", str(tmp_path / "t.fsbt.gz"),
         "--", "true"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("fsbench: error: record: fsbench-engine ")
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
    assert not (tmp_path / "t.fsbt.gz").exists()
