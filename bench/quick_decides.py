"""What the default comparison decides: `fsbench run` (the quick preset, repetitions
decided round by round within its budget) against the same preset at a fixed 3
repetitions, each in its own store, one after the other; per run the wall time and how
many pairs of configs its comparisons order, find equivalent or leave undecided (with the
repetitions that would decide them). As root, on an idle machine: other work moves the
numbers (the load average is kept with them).

`--runs N` runs the default N times, each in a fresh store (as a new user's first run:
its plan from the preset's cost priors, or from warm-up trials where it has none);
`decide` is the first, `decide_runs` all of them, and `runs_summary` how many headline
pairs each decided, how many runs reached the goal (quick_replay.GOAL) and how many ended
within the budget + 5%.

    .venv/bin/python bench/quick_decides.py [--runs N] [--skip-fixed] [--keep DIR]

Writes bench/results/quick_decides.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quick_replay import goal  # noqa: E402
from results_file import REPO, kept_dir, save, trial_conditions  # noqa: E402

sys.path.insert(0, str(REPO / "src"))
from fsbench.plan.presets import load_preset  # noqa: E402

FSBENCH = str(Path(sys.executable).with_name("fsbench"))


def run(db: Path, extra: list[str]) -> dict[str, Any]:
    started = time.monotonic()
    res = subprocess.run(
        [FSBENCH, "run", "--db", str(db), "--no-report", "--json", *extra],
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.monotonic() - started
    if res.returncode not in (0, 3):
        raise SystemExit(f"fsbench run failed ({res.returncode}): {res.stderr[-2000:]}")
    doc = json.loads(res.stdout)
    return {"seconds": round(seconds, 1), **tally(doc)}


def tally(doc: dict[str, Any]) -> dict[str, Any]:
    """Pairs per kind over the headline comparisons (what the tables show), and the
    comparisons themselves in a line each."""
    kinds = {"order": 0, "equivalent": 0, "undecided": 0}
    lines = []
    trials = len({(r["config"], r["workload"], json.dumps(r["params"])) for r in doc["rows"]})
    for c in doc["comparisons"]:
        if not c["headline"]:
            continue
        v = c["verdict"]
        for p in v["pairs"]:
            kinds[p["kind"]] += 1
        dims = " ".join(f"{k}={x}" for k, x in sorted(c["dims"].items()) if x is not None)
        needed = [p["needed"] for p in v["pairs"] if p["kind"] == "undecided"]
        lines.append(
            {
                "comparison": f"{c['workload']} {v['metric']} {dims}".strip(),
                "kind": v["kind"],
                "ranking": v["ranking"],
                "decided": v["decided"],
                "pairs": len(v["pairs"]),
                "undecided_needs": needed,
            }
        )
    total = sum(kinds.values())
    return {
        "cells": trials,
        "comparisons": len(lines),
        "pairs": total,
        "pairs_by_kind": kinds,
        "decided": kinds["order"] + kinds["equivalent"],
        "decided_share": round((kinds["order"] + kinds["equivalent"]) / total, 3)
        if total
        else None,
        "reps": sorted({r["n"] for r in doc["rows"] if r["n"]}),
        "lines": lines,
    }


def runs_summary(runs: list[dict[str, Any]], budget: float) -> dict[str, Any]:
    """Headline pairs decided per run, the runs that reached the goal (quick_replay.GOAL),
    and the runs whose whole command (fsbench's start and preflight included) ended
    within the preset's budget + 5%."""
    decided = [r["decided"] for r in runs]
    pairs = runs[0]["pairs"]
    target = goal(pairs)
    return {
        "runs": len(runs),
        "pairs": pairs,
        "decided": decided,
        "decided_min": min(decided),
        "decided_max": max(decided),
        "target": target,
        "runs_reaching_target": sum(d >= target for d in decided),
        "budget_s": budget,
        "runs_within_budget_5pct": sum(r["seconds"] <= 1.05 * budget for r in runs),
        "seconds": [r["seconds"] for r in runs],
        "seconds_max": max(r["seconds"] for r in runs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-fixed", action="store_true", help="only the default run")
    parser.add_argument("--keep", type=Path, help="keep the stores in this directory")
    parser.add_argument("--runs", type=int, default=1, help="runs of the default, each fresh")
    args = parser.parse_args()
    started = datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="fsbench-quick-") as tmp:
        where = kept_dir(args.keep, tmp)
        runs = []
        for i in range(args.runs):
            with trial_conditions() as conditions:
                runs.append(run(where / f"decide-{i + 1}.db", []))
            runs[-1]["conditions"] = conditions
            print(f"run {i + 1}: {runs[-1]['decided']}/{runs[-1]['pairs']}", file=sys.stderr)
        results: dict[str, Any] = {"decide": runs[0]}
        if args.runs > 1:
            results["decide_runs"] = runs
            results["runs_summary"] = runs_summary(runs, float(load_preset("quick").budget or 0))
        if not args.skip_fixed:
            with trial_conditions() as conditions:
                results["fixed_3"] = run(where / "fixed.db", ["--reps", "3"])
            results["fixed_3"]["conditions"] = conditions
    for name in ("decide", "fixed_3"):
        if name not in results:
            continue
        r = results[name]
        print(
            f"{name}: {r['seconds']:.0f} s, {r['decided']}/{r['pairs']} pairs decided "
            f"{r['pairs_by_kind']}",
            file=sys.stderr,
        )
    quick = load_preset("quick")
    save(
        "quick_decides",
        results,
        started,
        workloads=sorted({step for w in quick.workloads for step in w.steps}),
        filesystems=sorted({c.type for c in quick.fs}),
    )


if __name__ == "__main__":
    main()
