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


def _replayed_on_ext4_and_xfs(workdir: Path, trace: Path) -> list[dict[str, Any]]:
    """The rows of one `fsbench run` replaying `trace` on ext4 and xfs, once each."""
    res = fsbench(
        "run", "--workdir", str(workdir / "work"), "--db", str(workdir / "r.db"),
        "--image-size", "1G", "--scale", "tiny", "--reps", "1", "--json",
        "--fs", "ext4,xfs", "--workload", "replay", "--set", f"trace={trace}",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    rows: list[dict[str, Any]] = json.loads(res.stdout)["rows"]
    return rows


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
    rows = _replayed_on_ext4_and_xfs(workdir, trace)
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


def _without_tracer_cost(trace: Path, out: Path) -> None:
    """`trace` as a trace recorded before strace's cost was measured: its header's costs 0
    (docs/replay.md, the trace format), every record as it was."""
    with gzip.open(trace, "rt") as src:
        magic, version, header = src.readline().rstrip("\n").split("\t", 2)
        records = src.read().splitlines()
    held = json.loads(header) | {"tracer_overhead_ns": 0, "gap_overhead_ns": 0}
    _trace(out, [f"{magic}\t{version}\t{json.dumps(held)}", *records])


def _quickest_recorded_replay(trace: Path, calls: int, work: Path, times: int) -> float:
    """The shortest of `times` replays of `trace` with its recorded gaps, each on a tree
    made afresh and making every one of its `calls` with its recorded result: the least
    the machine's other work added to the waits."""
    elapsed = []
    for time in range(times):
        spec = {"schema": _engine.SCHEMA, "trace": str(trace), "dir": str(work / str(time)),
                "timing": "recorded", "speed": 1.0}  # fmt: skip
        _engine.replay_prepare(spec, timeout=600)
        replayed = _engine.replay_run(spec, timeout=600)
        assert replayed["mismatches"]["total"] == 0
        assert replayed["measured"]["calls"] == calls
        elapsed.append(float(replayed["measured"]["elapsed_s"]))
    return min(elapsed)


def test_recorded_timing_waits_the_program_s_gaps_not_strace_s(tmp_path: Path) -> None:
    """The recording measures strace's cost per call beside the command and keeps it in
    the trace; a replay with timing=recorded takes it off the recorded gaps. Against the
    same trace without the cost (as a trace recorded before it was measured), the replay
    of 3,000 cheap calls is shorter by at least half the measured cost of its gaps, or
    half its wait where the cost is more than the gaps hold (before:
    it waited nearly the whole recorded span). How close the result comes to the program's
    own time depends on the machine being as quiet during the recording as during the
    measurement beside it: that is bench/replay_fidelity.py's, on a quiet machine."""
    tree = tmp_path / "tree"
    tree.mkdir()
    trace = tmp_path / "dense.fsbt.gz"
    cost = _recorded(tree, trace, DENSE)["tracer_cost_ns"]
    assert 0 < cost["gap"] <= cost["per_call"]
    held = _engine.trace_summary(trace)
    assert held["header"]["tracer_overhead_ns"] == cost["per_call"]
    assert held["header"]["gap_overhead_ns"] == cost["gap"]
    assert held["calls"] >= 3000
    uncosted = tmp_path / "uncosted.fsbt.gz"
    _without_tracer_cost(trace, uncosted)
    assert _engine.trace_summary(uncosted)["header"]["gap_overhead_ns"] == 0
    calls = held["calls"]
    costed_s = _quickest_recorded_replay(trace, calls, tmp_path / "replay", times=3)
    uncosted_s = _quickest_recorded_replay(uncosted, calls, tmp_path / "replay-uncosted", times=3)
    # What the cost takes off cannot exceed the gaps there are to wait: when the loop
    # beside the recording met a busier moment than the recording did, the measured cost
    # is more than the gaps hold and nearly all of the wait goes. Not against the recorded
    # span: under load the replay's waits overshoot, and in one suite the uncosted replay
    # took longer than a span recorded while strace ran quicker.
    taken_off_s = min(held["calls"] * cost["gap"] / 1e9, uncosted_s)
    assert costed_s < uncosted_s - taken_off_s / 2, (costed_s, uncosted_s, cost, held["span_s"])


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


# Copies the kernel makes (cp uses copy_file_range), with and without offsets, and the
# two half-inside cases: data arriving from a file outside the tree, data leaving to one.
COPIES = """
import os, subprocess, sys
outside = sys.argv[1]
subprocess.run(["cp", "data/input.bin", "copy.bin"], check=True)
src = os.open("data/input.bin", os.O_RDONLY)
dst = os.open("parts.bin", os.O_WRONLY | os.O_CREAT, 0o644)
assert os.copy_file_range(src, dst, 10_000, 95_000, 5_000) == 7_400  # to the end
assert os.copy_file_range(src, dst, 7_000) == 7_000
assert os.sendfile(dst, src, None, 4_096) == 4_096
assert os.sendfile(dst, src, 100_000, 3_000) == 2_400  # to the end
far = os.open(f"{outside}/far.bin", os.O_RDONLY)
assert os.copy_file_range(far, dst, 2_000) == 2_000  # arrives from outside: a write
away = os.open(f"{outside}/away.bin", os.O_WRONLY | os.O_CREAT, 0o644)
assert os.sendfile(away, src, 0, 1_500) == 1_500  # leaves the tree: a read
"""


def test_copies_by_the_kernel_replay_as_copies(workdir: Path) -> None:
    """copy_file_range and sendfile between the tree's files are replayed as the same
    calls, at the recorded offsets (two copies stop at the end of the file: the counts
    differ if an offset is lost); on xfs a copy may share blocks, which is the
    filesystem's difference to keep; with one side outside the tree, as the write or
    read of the bytes that crossed."""
    tree, outside = workdir / "tree", workdir / "outside"
    (tree / "data").mkdir(parents=True)
    outside.mkdir()
    (tree / "data" / "input.bin").write_bytes(bytes(range(256)) * 400)  # 102,400 bytes
    (outside / "far.bin").write_bytes(b"f" * 2_000)
    trace = workdir / "copies.fsbt.gz"
    res = fsbench(
        "record", "-o", str(trace), "--dir", str(tree), "--json", "--", sys.executable, "-c",
        COPIES, str(outside),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    kinds = json.loads(res.stdout[res.stdout.index("{") :])["calls_by_kind"]
    # cp's copy_file_range calls (the data, then 0 at the end), and the program's two.
    assert kinds["copy_file_range"] >= 3 and kinds["sendfile"] == 2, kinds
    summary = _engine.trace_summary(trace)["kinds"]
    copied = summary["copy_file_range"]["bytes"]
    assert copied == 102_400 + 7_400 + 7_000
    assert summary["sendfile"]["bytes"] == 4_096 + 2_400
    assert kinds["write"] >= 1 and kinds["pread"] >= 1  # the half-inside copies
    rows = _replayed_on_ext4_and_xfs(workdir, trace)
    for fs in ("ext4", "xfs"):
        got = {r["metric"]: r["mean"] for r in rows if r["fs"] == fs}
        assert got["mismatches"] == 0 and got["calls_not_replayed"] == 0, (fs, got)
        assert got["bytes_unlike_recording"] == 0, fs
        assert got["copy_file_range_calls"] == kinds["copy_file_range"], fs
        assert got["copy_file_range_bytes"] == copied, fs
        assert got["sendfile_bytes"] == 4_096 + 2_400, fs
    assert ours(workdir) == ([], [])


# Thread a takes a lock, writes its file, then sleeps 0.3 s holding it; thread b, which
# needs the lock to write its own file, waits for it in a futex wait a's release ends.
HELD_LOCK = """
import os, threading, time
lock, taken = threading.Lock(), threading.Event()
def a():
    with lock:
        taken.set()
        with open("a", "wb") as f:
            f.write(b"a")
        time.sleep(0.3)
def b():
    taken.wait()
    os.stat("data")
    with lock:
        with open("b", "wb") as f:
            f.write(b"b")
threads = [threading.Thread(target=f) for f in (a, b)]
for t in threads: t.start()
for t in threads: t.join()
"""


def test_a_wait_for_another_thread_s_lock_is_recorded_and_not_replayed_as_think_time(
    tmp_path: Path,
) -> None:
    """Thread b's gap between its stat and its open holds a 0.3 s wait for a's lock: it is
    recorded as a wait, and the replay with the recorded gaps does not wait it again (a's
    sleep is the program's own time, but a makes no call after it)."""
    tree = tmp_path / "tree"
    (tree / "data").mkdir(parents=True)
    trace = tmp_path / "lock.fsbt.gz"
    report = _recorded(tree, trace, HELD_LOCK)
    assert report["waits"] >= 1
    assert report["waited_s"] >= 0.25
    spec = {"schema": _engine.SCHEMA, "trace": str(trace), "dir": str(tmp_path / "replay"),
            "timing": "recorded", "speed": 1.0}  # fmt: skip
    _engine.replay_prepare(spec, timeout=600)
    replayed = _engine.replay_run(spec, timeout=600)
    assert replayed["mismatches"]["total"] == 0
    assert float(replayed["measured"]["elapsed_s"]) < 0.2


def test_the_recording_holds_the_cpus_out_of_deep_idle(tmp_path: Path) -> None:
    """While the recorded command runs, the CPUs' wake-up latency is held at 0 (strace's
    cost per call steady, docs/replay.md); the trace's header says so, and the recording
    reports strace's cost measured before the command and after it, whose mean it keeps."""
    tree = tmp_path / "tree"
    tree.mkdir()
    program = """
import struct
with open("/dev/cpu_dma_latency", "rb") as f:
    value = struct.unpack("=i", f.read(4))[0]
open("latency", "w").write(str(value))
"""
    trace = tmp_path / "latency.fsbt.gz"
    report = _recorded(tree, trace, program)
    assert (tree / "latency").read_text() == "0"
    assert report["cpu_latency_not_held"] is None
    assert _engine.trace_summary(trace)["header"]["cpu_latency_held"] is True
    cost = report["tracer_cost_ns"]
    for when in ("before", "after"):
        assert 0 < cost[when]["gap"] <= cost[when]["per_call"]
    mean_gap = (cost["before"]["gap"] + cost["after"]["gap"]) / 2
    assert abs(cost["gap"] - mean_gap) <= 1
