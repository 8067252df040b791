"""Is the first counted trial of a comparison group slower than its others? The question
behind the warm-up: `fsbench run` (the quick preset) runs --runs times into one store (the
first run projects from warm-up trials, the later ones from the store), and for every
group of every run the first counted trial (round 1, first place) is set against the
other counted trials of its cell: how much worse its headline value is (in the metric's
worse direction) and how much longer it took. The second trial of round 1 is measured the
same way, as a control. A store given with --store is analysed instead (its runs as
they are).

    .venv/bin/python bench/warmup_effect.py [--runs 2] [--keep DIR] [--store DB] [-- RUN ARGS]

Writes bench/results/warmup_effect.json (or --out NAME).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_file import kept_dir, save  # noqa: E402

from fsbench.analysis.stats import t_quantile  # noqa: E402
from fsbench.store import trialfacts  # noqa: E402
from fsbench.store.records import TrialRecord  # noqa: E402
from fsbench.store.results import Store  # noqa: E402

FSBENCH = str(Path(sys.executable).with_name("fsbench"))


def seconds(steps: Sequence[TrialRecord]) -> float:
    began = min(datetime.fromisoformat(t.started_at) for t in steps)
    ended = max(datetime.fromisoformat(t.finished_at) for t in steps)
    return (ended - began).total_seconds()


def worse_by(value: float, others: Sequence[float], better: str) -> float | None:
    """How much worse `value` is than the others' mean, relative (0.2: 20% worse)."""
    mean = statistics.fmean(others)
    if not mean or not value:
        return None
    return mean / value - 1 if better == "higher" else value / mean - 1


def first_trials(store: Store, run_id: int) -> list[dict[str, Any]]:
    """Per group of the run: its first and second counted slot against their cells."""
    trials = [t for t in store.get_trials(run_id) if t.status == "ok"]
    slots: dict[int, list[TrialRecord]] = {}
    for t in trials:
        slots.setdefault(t.seq, []).append(t)
    counted = {seq: steps for seq, steps in slots.items() if not steps[0].warmup}
    by_group: dict[tuple[str, str], list[int]] = {}
    for seq, steps in counted.items():
        first = steps[0]
        group = (first.chain or first.workload, json.dumps(first.params, sort_keys=True))
        by_group.setdefault(group, []).append(seq)
    out = []
    for (workload, _), seqs in by_group.items():
        ordered = sorted(seqs, key=lambda s: (counted[s][0].rep, counted[s][0].position))
        for which, seq in (
            ("first", ordered[0]),
            ("second", ordered[1] if len(ordered) > 1 else None),
        ):
            if seq is None:
                continue
            steps = counted[seq]
            cell = steps[0].cell_key
            others = [s for s in counted if s != seq and counted[s][0].cell_key == cell]
            if not others:
                continue
            step = steps[0]
            headline = (trialfacts.headline(step.provenance) or [m.name for m in step.metrics])[0]
            metric = next((m for m in step.metrics if m.name == headline), None)
            other_values = [
                m.value for s in others for m in counted[s][0].metrics if m.name == headline
            ]
            row: dict[str, Any] = {
                "run": run_id,
                "group": workload,
                "trial": which,
                "config": step.config,
                "previous": step.previous_cell.split("|")[1] if step.previous_cell else "",
                "metric": headline,
                "worse_by": None,
                "slower_by": seconds(steps) / statistics.fmean(seconds(counted[s]) for s in others)
                - 1,
            }
            if metric is not None and other_values:
                row["worse_by"] = worse_by(metric.value, other_values, metric.better)
            out.append(row)
    return out


def pooled(values: Sequence[float]) -> dict[str, Any]:
    """Mean with its 95% interval and the one-sided p that it is above 0 (t-test)."""
    from scipy.special import stdtr

    n = len(values)
    mean = statistics.fmean(values)
    if n < 2:
        return {"n": n, "mean": mean}
    se = statistics.stdev(values) / math.sqrt(n)
    half = t_quantile(n - 1, 0.95) * se
    p = float(stdtr(n - 1, -mean / se)) if se else (0.0 if mean > 0 else 1.0)
    return {"n": n, "mean": mean, "ci95": [mean - half, mean + half], "p_above_0": p}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="keep the store in this directory")
    parser.add_argument("--store", type=Path, help="analyse this store's runs instead")
    parser.add_argument("--out", default="warmup_effect")
    parser.add_argument("run_args", nargs="*", help="given to fsbench run (after --)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fsbench-warmup-") as tmp:
        if args.store:
            db = args.store
        else:
            db = kept_dir(args.keep, tmp) / "warmup.db"
            for _ in range(args.runs):
                cmd = [FSBENCH, "run", "--db", str(db), "--no-report", *args.run_args]
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        store = Store(db)
        rows = [row for run in store.list_runs() for row in first_trials(store, run.id)]
        store.close()
    summary = {}
    for which in ("first", "second"):
        mine = [r for r in rows if r["trial"] == which]
        summary[which] = {
            "worse_by": pooled([r["worse_by"] for r in mine if r["worse_by"] is not None]),
            "slower_by": pooled([r["slower_by"] for r in mine]),
        }
        for name, found in summary[which].items():
            p = found.get("p_above_0", math.nan)
            print(f"{which} counted trial {name}: {found['mean']:+.1%} (n={found['n']}, p={p:.3g})")
    save(
        args.out,
        {"store": str(args.store) if args.store else None, "trials": rows, "summary": summary},
    )


if __name__ == "__main__":
    main()
