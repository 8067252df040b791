"""What `--cpu-idle shallow` changes in the quick preset's measurements on this machine.

Three of the quick preset's workloads (fs_mark's files each written and fsynced,
untar+tree-read's 40,000 files unpacked and read back cold, fileserver's four threads),
at the preset's sizes, on ext4, in `fsbench run`s that alternate: one with the CPUs free
to idle (`--cpu-idle any`, the default), one holding them out of deep idle (`shallow`),
`--pairs` times, each run in its own store with `--reps` repetitions and no warm-up. Per
workload metric and mode: every run's mean and coefficient of variation, and over the
pairs, the mean of the runs' means and of their CVs, and the ratio of the means (shallow
over any).

    .venv/bin/python bench/cpu_idle.py [--pairs 2] [--reps 3] [--keep DIR]

As root, on an idle machine. Writes bench/results/cpu_idle.json. Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_file import kept_dir, save, trial_conditions  # noqa: E402

FSBENCH = str(Path(sys.executable).with_name("fsbench"))
MODES = ("any", "shallow")
PLAN = """name = "cpu-idle"
scale = "quick"
[[fs]]
type = "ext4"

[[workload]]
name = "fs_mark"

[[workload]]
name = "untar+tree-read"
[workload.params]
source = "synthetic"
[workload.params_at.quick]
files = 40000

[[workload]]
name = "fileserver"
[workload.params_at.quick]
threads = 4
duration = 5
"""
# The metric each workload is compared on (its headline), by workload.
METRICS = {
    "fs_mark": "files_per_s",
    "untar": "seconds",
    "tree-read": "seconds",
    "fileserver": "ops_per_s",
}


def one_run(work: Path, mode: str, reps: int) -> dict[str, Any]:
    work.mkdir(parents=True)
    (work / "plan.toml").write_text(PLAN)
    db = work / "r.db"
    argv = [FSBENCH, "run", str(work / "plan.toml"), "--cpu-idle", mode, "--reps", str(reps),
            "--warmup", "0", "--db", str(db), "--workdir", str(work / "run"),
            "--no-report"]  # fmt: skip
    with trial_conditions() as conditions:
        res = subprocess.run(argv, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise SystemExit(f"fsbench run ({mode}) failed ({res.returncode}): {res.stderr[-2000:]}")
    doc = json.loads(
        subprocess.run(
            [FSBENCH, "report", "--db", str(db), "--format", "json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    rows = {
        r["workload"]: r
        for r in doc["rows"]
        if r["metric"] == METRICS.get(r["workload"]) and r["n"]
    }
    return {
        "mode": mode,
        "cpu_latency_us": doc["host"].get("cpu_latency_us"),
        "metrics": {
            w: {"values": rows[w]["values"], "mean": rows[w]["mean"], "cv": rows[w]["cv"]}
            for w in METRICS
        },
        **conditions,
    }


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for w, metric in METRICS.items():
        by_mode = {}
        for mode in MODES:
            mine = [r["metrics"][w] for r in runs if r["mode"] == mode]
            by_mode[mode] = {
                "mean": statistics.fmean(m["mean"] for m in mine),
                "mean_cv": statistics.fmean(m["cv"] for m in mine),
            }
        out[w] = {
            "metric": metric,
            **by_mode,
            "ratio_shallow_to_any": round(by_mode["shallow"]["mean"] / by_mode["any"]["mean"], 3),
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--keep", type=Path, default=None, help="keep the runs' stores here")
    args = ap.parse_args()
    runs = []
    with tempfile.TemporaryDirectory(prefix="fsbench-cpu-idle-", dir="/var/tmp") as scratch:
        where = kept_dir(args.keep, scratch)
        for pair in range(args.pairs):
            for mode in MODES:
                got = one_run(where / f"{pair}-{mode}", mode, args.reps)
                print(json.dumps({k: got[k] for k in ("mode", "metrics")}), file=sys.stderr)
                runs.append(got)
    save(
        "cpu_idle",
        {"pairs": args.pairs, "reps": args.reps, "runs": runs, "summary": summary(runs)},
        workloads=["fs_mark", "untar", "tree-read", "fileserver"],
        filesystems=["ext4"],
    )


if __name__ == "__main__":
    main()
