"""Fidelity and cost of `fsbench record` + the `replay` workload (docs/replay.md).

    python3 bench/replay_fidelity.py [--fs ext4,xfs,btrfs] [--programs tar,git,sqlite]
                                     [--reps 3] [--calls 10000000] [-o FILE]

Fidelity: each program (real programs nobody wrote for this: tar extracting an archive
then sync, git init/add/commit/status over a generated tree, SQLite in WAL mode under
an insert load through Python's sqlite3) is recorded with `fsbench record`, then
replayed on each filesystem by `fsbench run --workload replay`; per config the replay's
calls and bytes per kind must equal the trace's (mismatches, bytes_unlike_recording and
calls_not_replayed all 0) and its seconds are kept. The comparison of the replay's time
with the program's own (the `command` workload) is not made here.

Cost: a trace of `--calls` fstats of one cached file, replayed by the engine, against
the engine's native loop making the same calls (the replay's rate as a share of the
loop's, target >= 80%), and the replay's peak resident memory (target < 200 MiB for 10
million calls).

Writes bench/results/replay_fidelity.json (results_file.py). Needs root (loop devices),
strace, git and the engine built. Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import results_file  # noqa: E402

REPO = results_file.REPO
ENGINE = REPO / "engine/target/release/fsbench-engine"
FSBENCH = [sys.executable, "-m", "fsbench.cli"]

SQLITE = """
import sqlite3
db = sqlite3.connect("app.db")
db.execute("PRAGMA journal_mode=WAL")
db.execute("CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, v TEXT)")
for i in range(2000):
    db.execute("INSERT INTO t (v) VALUES (?)", ("x" * 200,))
    db.commit()
db.close()
"""


def _tree(root: Path, files: int) -> None:
    for i in range(files):
        d = root / f"d{i % 10}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.txt").write_bytes(bytes((i * 7 + j) % 251 for j in range(500 + i * 13)))


def programs(work: Path) -> dict[str, tuple[Path, list[str]]]:
    """Each program: the tree it runs in, made ready, and its argv."""
    tar_dir, git_dir, sql_dir = work / "tar", work / "git", work / "sqlite"
    src = work / "src"
    _tree(src, 400)
    tar_dir.mkdir()
    archive = tar_dir / "tree.tar"
    subprocess.run(["tar", "cf", str(archive), "-C", str(src), "."], check=True)
    _tree(git_dir, 400)
    sql_dir.mkdir()
    git = "git init -q && git add -A && git -c user.name=b -c user.email=b@b commit -qm t"
    return {
        "tar": (tar_dir, ["sh", "-c", "mkdir out && tar xf tree.tar -C out && sync"]),
        "git": (git_dir, ["sh", "-c", f"{git} && git status --porcelain && git gc -q"]),
        "sqlite": (sql_dir, [sys.executable, "-c", SQLITE]),
    }


def record(tree: Path, argv: list[str], out: Path) -> dict[str, Any]:
    res = subprocess.run(
        [*FSBENCH, "record", "-o", str(out), "--dir", str(tree), "--json", "--", *argv],
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        sys.exit(f"record {argv}: {res.stderr.strip()}")
    report: dict[str, Any] = json.loads(res.stdout[res.stdout.index("{") :])
    return report


def replay(trace: Path, fs: str, reps: int, work: Path) -> dict[str, dict[str, Any]]:
    res = subprocess.run(
        [*FSBENCH, "run", "--workdir", str(work / "run"), "--db", str(work / "r.db"),
         "--image-size", "2G", "--scale", "tiny", "--reps", str(reps), "--json",
         "--no-report", "--fs", fs, "--workload", "replay", "--set", f"trace={trace}"],
        capture_output=True,
        text=True,
    )  # fmt: skip
    if res.returncode != 0:
        sys.exit(f"replay {trace}: {res.stderr.strip()}")
    by_fs: dict[str, dict[str, Any]] = {}
    for row in json.loads(res.stdout)["rows"]:
        by_fs.setdefault(row["fs"], {})[row["metric"]] = row["values"]
    return by_fs


def fidelity(fss: str, names: list[str], reps: int, work: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    made = programs(work)
    for name in names:
        tree, argv = made[name]
        trace = work / f"{name}.fsbt.gz"
        rep = record(tree, argv, trace)
        per_fs = replay(trace, fss, reps, work / name)
        out[name] = {
            "argv": argv,
            "recorded_calls": rep["calls"],
            "recorded_by_kind": rep["calls_by_kind"],
            "configs": {
                fs: {
                    "replay_seconds": m["replay_seconds"],
                    "seconds": m["seconds"],
                    "calls": m["calls"],
                    "mismatches": m["mismatches"],
                    "bytes_unlike_recording": m["bytes_unlike_recording"],
                    "calls_not_replayed": m["calls_not_replayed"],
                    "faithful": all(
                        v == 0
                        for k in ("mismatches", "bytes_unlike_recording", "calls_not_replayed")
                        for v in m[k]
                    ),
                }
                for fs, m in per_fs.items()
            },
        }
    return out


def engine_json(*argv: str, spec: dict[str, Any] | None = None) -> tuple[dict[str, Any], int]:
    """The engine's JSON answer, and its own peak resident memory (KiB, from wait4)."""
    child = subprocess.Popen(
        [str(ENGINE), *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    child.stdin.write(json.dumps(spec) if spec else "")
    child.stdin.close()
    out, err = child.stdout.read(), child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        sys.exit(f"fsbench-engine {' '.join(argv)}: {err.strip()}")
    data: dict[str, Any] = json.loads(out)
    return data, usage.ru_maxrss


def cost(calls: int, work: Path) -> dict[str, Any]:
    trace = work / "fstat.fsbt.gz"
    engine_json("trace", "fstat-trace", "--calls", str(calls), "-o", str(trace))
    spec = {"schema": 1, "trace": str(trace), "dir": str(work / "fstat-replay")}
    engine_json("replay", "prepare", "-", spec=spec)
    with results_file.trial_conditions() as replay_conditions:
        replayed, peak_kib = engine_json("replay", "run", "-", spec=spec)
    with results_file.trial_conditions() as loop_conditions:
        loop, _ = engine_json("trace", "fstat-loop", "--calls", str(calls), "--dir", str(work))
    rate = float(replayed["measured"]["calls_per_s"])
    loop_rate = float(loop.get("calls_per_s") or 0)
    return {
        "calls": calls,
        "replay_calls_per_s": rate,
        "loop_calls_per_s": loop_rate,
        "share_of_loop": round(rate / loop_rate, 3) if loop_rate else None,
        "replay_peak_rss_mib": round(peak_kib / 1024, 1),
        "replay_conditions": replay_conditions,
        "loop_conditions": loop_conditions,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fs", default="ext4,xfs,btrfs")
    ap.add_argument("--programs", default="tar,git,sqlite")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--calls", type=int, default=10_000_000)
    ap.add_argument("-o", "--output", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="replay-fidelity-", dir="/var/tmp") as tmp:
        work = Path(tmp)
        results = {
            "fidelity": fidelity(args.fs, args.programs.split(","), args.reps, work),
            "cost": cost(args.calls, work),
        }
    results_file.save(
        "replay_fidelity",
        results,
        path=args.output,
        engine=ENGINE,
        workloads=["replay"],
        filesystems=args.fs.split(","),
        commands={"strace": ["strace", "-V"], "git": ["git", "--version"]},
    )
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
