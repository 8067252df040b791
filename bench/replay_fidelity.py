"""Fidelity and cost of `fsbench record` + the `replay` workload (docs/replay.md).

    python3 bench/replay_fidelity.py [--fs ext4,xfs,btrfs] [--programs tar,git,sqlite]
                                     [--reps 3] [--files 4000] [--calls 10000000]
                                     [--cost-pairs 3] [-o FILE]

Fidelity: each program (real programs nobody wrote for this: tar extracting an archive
then sync, git init/add/commit/status over a generated tree, SQLite in WAL mode under
an insert load through Python's sqlite3) is recorded with `fsbench record`, then run in
one `fsbench run` per program on each filesystem three ways, in the same rounds: the
program itself (the `command` workload, its starting tree copied in by the untimed
setup) and its trace replayed (`replay`, timing fast and recorded). Per config the
replay's calls and bytes per kind must equal the trace's (mismatches,
bytes_unlike_recording and calls_not_replayed all 0); its seconds are kept beside the
program's with their ratio (target within 20%), and each pair's verdict on seconds for
the program beside the replays' (target: no pair ordered one way for the program and
the other way for a replay).

Cost: a trace of `--calls` fstats of one cached file, replayed by the engine, against
the engine's native loop making the same calls right after (the replay's rate as a share
of the loop's, target >= 80%: the median of `--cost-pairs` pairs, each pair kept), and
the replay's peak resident memory (target < 200 MiB for 10 million calls).

Writes bench/results/replay_fidelity.json (results_file.py). Needs root (loop devices),
strace, git and the engine built. Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
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
        size = 500 + (i * 1301) % 20000  # 0.5-20 KB, about 10 KB on average
        (d / f"f{i}.txt").write_bytes(bytes((i * 7 + j) % 251 for j in range(size)))


def programs(work: Path, files: int) -> dict[str, tuple[Path, list[str]]]:
    """Each program: the tree it runs in, made ready, and its argv; `files` sizes the
    trees tar and git work on (the default: about a second of work or more each)."""
    tar_dir, git_dir, sql_dir = work / "tar", work / "git", work / "sqlite"
    src = work / "src"
    _tree(src, files)
    tar_dir.mkdir()
    archive = tar_dir / "tree.tar"
    subprocess.run(["tar", "cf", str(archive), "-C", str(src), "."], check=True)
    _tree(git_dir, files)
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


def plan(name: str, fss: list[str], pristine: Path, argv: list[str], trace: Path) -> str:
    """One run per program: the program itself (`command`, its starting tree copied in
    by the untimed setup) and its trace replayed fast and with the recorded gaps, on the
    same configs in the same rounds, so the three meet the same machine."""
    fs = "".join(f'[[fs]]\ntype = "{f}"\n' for f in fss)
    setup = json.dumps(["cp", "-a", f"{pristine}/.", "."])
    return (
        f'name = "replay-fidelity-{name}"\n{fs}\n'
        f'[[workload]]\nname = "command"\n[workload.params]\nsetup = {setup}\n'
        f"run = {json.dumps(argv)}\n\n"
        f'[[workload]]\nname = "replay"\n[workload.params]\ntrace = "{trace}"\n'
        'timing = ["fast", "recorded"]\n'
    )


def measure(plan_text: str, reps: int, work: Path) -> dict[str, Any]:
    """The run's report (JSON) of a plan: rows and verdicts."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "plan.toml").write_text(plan_text)
    db = work / "r.db"
    res = subprocess.run(
        [*FSBENCH, "run", str(work / "plan.toml"), "--workdir", str(work / "run"),
         "--db", str(db), "--image-size", "2G", "--scale", "tiny", "--reps", str(reps),
         "--no-report"],
        capture_output=True,
        text=True,
    )  # fmt: skip
    if res.returncode != 0:
        sys.exit(f"run {work}: exit {res.returncode}: {res.stderr.strip()[-2000:]}")
    doc = subprocess.run(
        [*FSBENCH, "report", "--db", str(db), "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    report: dict[str, Any] = json.loads(doc)
    return report


def variant(params: dict[str, Any]) -> str:
    """command, replay-fast or replay-recorded: which of the three a row measured."""
    return f"replay-{params['timing']}" if "timing" in params else "command"


def orders(report: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Per variant, each pair's verdict on seconds: the better config, 'equivalent' or
    'undecided'."""
    out: dict[str, dict[str, str]] = {}
    for c in report["comparisons"]:
        verdict = c["verdict"]
        if verdict["metric"] != "seconds":
            continue
        name = variant(c["dims"]) if c["workload"] == "replay" else "command"
        for p in verdict["pairs"]:
            key = " vs ".join(p["configs"])
            out.setdefault(name, {})[key] = p["better"] or p["kind"]
    return out


def fidelity(fss: str, names: list[str], reps: int, files: int, work: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    made = programs(work, files)
    for name in names:
        tree, argv = made[name]
        pristine = work / f"{name}-start"
        shutil.copytree(tree, pristine, symlinks=True)  # before the recording changes it
        trace = work / f"{name}.fsbt.gz"
        rep = record(tree, argv, trace)
        report = measure(plan(name, fss.split(","), pristine, argv, trace), reps, work / name)
        values: dict[str, dict[str, dict[str, list[float]]]] = {}
        for row in report["rows"]:
            if row["values"]:
                per = values.setdefault(row["config"], {}).setdefault(variant(row["params"]), {})
                per[row["metric"]] = row["values"]
        configs = {}
        for config, per in values.items():
            program = _mean(per["command"]["seconds"])
            configs[config] = {
                "program_seconds": per["command"]["seconds"],
                **{
                    v: {
                        "seconds": per[v]["seconds"],
                        "replay_seconds": per[v]["replay_seconds"],
                        "calls": per[v]["calls"],
                        "faithful": all(
                            x == 0
                            for k in ("mismatches", "bytes_unlike_recording", "calls_not_replayed")
                            for x in per[v][k]
                        ),
                        "time_ratio_to_program": round(_mean(per[v]["seconds"]) / program, 3),
                    }
                    for v in ("replay-fast", "replay-recorded")
                },
            }
        decided = orders(report)
        out[name] = {
            "argv": argv,
            "recorded_calls": rep["calls"],
            "recorded_by_kind": rep["calls_by_kind"],
            # what the recording measured and kept beside its calls: the replay with the
            # recorded gaps takes strace's cost and the waits off them
            "recording": {
                "tracer_cost_ns": rep["tracer_cost_ns"],
                "cpu_latency_not_held": rep["cpu_latency_not_held"],
                "waits": rep["waits"],
                "waited_s": round(float(rep["waited_s"]), 3),
            },
            "configs": configs,
            "orders": decided,
            # A pair one way for the program and the other way for a replay.
            "contradictions": {
                v: [
                    pair
                    for pair, said in decided.get(v, {}).items()
                    if said in values
                    and decided["command"].get(pair) in values
                    and said != decided["command"][pair]
                ]
                for v in ("replay-fast", "replay-recorded")
            },
        }
    return out


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


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


def cost(calls: int, pairs: int, work: Path) -> dict[str, Any]:
    """The replay's call rate as a share of the loop's, in `pairs` pairs (the replay, then
    the loop right after it): the machine's load moves both, a pair shares its moment."""
    trace = work / "fstat.fsbt.gz"
    engine_json("trace", "fstat-trace", "--calls", str(calls), "-o", str(trace))
    spec: dict[str, Any] = {"schema": 1, "trace": str(trace), "dir": str(work / "fstat-replay")}
    prepared, _ = engine_json("replay", "prepare", "-", spec=spec)
    # as the replay workload does: the thread count prepare read (one: a table of its own)
    spec["threads"] = prepared["trace"]["threads"]
    measured = []
    for _ in range(pairs):
        with results_file.trial_conditions() as replay_conditions:
            replayed, peak_kib = engine_json("replay", "run", "-", spec=spec)
        with results_file.trial_conditions() as loop_conditions:
            loop, _ = engine_json("trace", "fstat-loop", "--calls", str(calls), "--dir", str(work))
        rate = float(replayed["measured"]["calls_per_s"])
        loop_rate = float(loop["calls_per_s"])
        measured.append(
            {
                "replay_calls_per_s": rate,
                "loop_calls_per_s": loop_rate,
                "share_of_loop": round(rate / loop_rate, 3),
                "replay_peak_rss_mib": round(peak_kib / 1024, 1),
                "replay_conditions": replay_conditions,
                "loop_conditions": loop_conditions,
            }
        )
    return {
        "calls": calls,
        "share_of_loop": statistics.median(p["share_of_loop"] for p in measured),
        "replay_peak_rss_mib": max(p["replay_peak_rss_mib"] for p in measured),
        "pairs": measured,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fs", default="ext4,xfs,btrfs")
    ap.add_argument("--programs", default="tar,git,sqlite")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--files", type=int, default=4000, help="the tar and git trees' files")
    ap.add_argument("--calls", type=int, default=10_000_000)
    ap.add_argument("--cost-pairs", type=int, default=3, help="replay and loop pairs of the cost")
    ap.add_argument("-o", "--output", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="replay-fidelity-", dir="/var/tmp") as tmp:
        work = Path(tmp)
        results = {
            "fidelity": fidelity(args.fs, args.programs.split(","), args.reps, args.files, work),
            "cost": cost(args.calls, args.cost_pairs, work),
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
