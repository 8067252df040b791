"""Information per second: how the spread of a trial changes with its length, per workload
of the quick preset, and so which length buys a decision the most per second of a run.

Each workload of the quick preset runs at three lengths (its quick size halved, as shipped,
doubled, through its length parameter: LENGTHS), on one filesystem, --reps times each
(a fixed design: every length once a round, in the run's own order), by `fsbench run` in
a fresh store. Per workload, length and headline timing metric: the values' mean and
coefficient of variation (CV), the trial's timed steps and its slot (what it cost the run,
mkfs and unmount included: store.records.slot_seconds), and the information a second of
run buys, 1 / (CV^2 x slot seconds): the number of such seconds a comparison needs to
tell a given difference is proportional to its inverse. Per workload and metric, the slope
of log(CV) against log(trial seconds): -0.5 where the noise is per second of work and
averages out in longer trials, 0 where it is per trial (a longer trial then buys nothing).
The length each workload should run at is the one with the most information per second
(the geometric mean over its metrics) among those whose every timed step lasts 2 s or
more: no trial flagged `short` by the runner, which times the phase itself, and no step's
wall time under it.

    .venv/bin/python bench/trial_length.py [--fs ext4 ...] [--workload NAME ...] [--reps 5]
                                           [--keep DIR] [-o NAME]
    .venv/bin/python bench/trial_length.py --store DB   # analyse a kept store again

Writes bench/results/trial_length.json. As root, on an idle machine.
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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_file import kept_dir, save, trial_conditions  # noqa: E402

from fsbench.analysis.costs import headline_of  # noqa: E402
from fsbench.analysis.design import EXACT_UNITS  # noqa: E402
from fsbench.plan import model as planning  # noqa: E402
from fsbench.plan.presets import load_preset  # noqa: E402
from fsbench.store import trialfacts  # noqa: E402
from fsbench.store.records import TrialRecord, slot_seconds  # noqa: E402
from fsbench.store.results import Store  # noqa: E402

FSBENCH = str(Path(sys.executable).with_name("fsbench"))
# Each workload's length parameter and its three values: half the quick preset's, the
# preset's, twice it (fio at most 6 GiB: the default loop image is 8 GiB).
LENGTHS: dict[str, tuple[str, list[Any]]] = {
    "alloc": ("size", ["1G", "2G", "4G"]),
    "untar+tree-read": ("files", [32000, 64000, 128000]),
    "fs_mark": ("files", [2500, 5000, 10000]),
    "fio": ("size", ["2G", "4G", "6G"]),
    "fileserver": ("duration", [2.5, 5, 10]),
}
# Only the timed allocation: the syscalls' layouts are counts, whatever the size.
FIXED = {"alloc": {"method": "write-4k"}}
SHORTEST_STEP_S = 2.0


def plan_toml(filesystems: Sequence[str], reps: int, workloads: Sequence[str]) -> str:
    """The quick preset's workloads (those named; all when none) at three lengths each."""
    quick = load_preset("quick")
    lines = ['name = "trial-length"', f"reps = {reps}", 'scale = "quick"']
    for fs in filesystems:
        lines += ["", "[[fs]]", f'type = "{fs}"']
    for spec in quick.workloads:
        if workloads and spec.name not in workloads:
            continue
        knob, values = LENGTHS[spec.name]
        params = {**spec.params, **spec.params_at.get(quick.scale, {}), **FIXED.get(spec.name, {})}
        params[knob] = values
        lines += ["", "[[workload]]", f'name = "{spec.name}"', "[workload.params]"]
        lines += [f"{k} = {json.dumps(v)}" for k, v in params.items()]
    return "\n".join(lines) + "\n"


def shipped(workload: str, knob: str) -> Any:
    """The quick preset's value of a workload's length parameter, as its run resolves it
    (the workload's own default at the preset's scale where the preset gives none)."""
    return next(
        c.params[knob] for c in planning.expand(load_preset("quick")) if c.workload == workload
    )


def step_seconds(t: TrialRecord) -> float:
    return (
        datetime.fromisoformat(t.finished_at) - datetime.fromisoformat(t.started_at)
    ).total_seconds()


def cv(values: Sequence[float]) -> float:
    return statistics.stdev(values) / abs(statistics.fmean(values))


def slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of log(y) on log(x)."""
    return statistics.linear_regression([math.log(x) for x in xs], [math.log(y) for y in ys]).slope


def cells(trials: Sequence[TrialRecord]) -> list[dict[str, Any]]:
    """Per workload, config and length: its counted trials' timing headline values, timed
    steps and slots."""
    ok = [t for t in trials if t.status == "ok" and not t.warmup]
    slots = slot_seconds(list(trials))
    by_seq: dict[int, list[TrialRecord]] = {}
    for t in ok:
        by_seq.setdefault(t.seq, []).append(t)
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    for seq, steps in by_seq.items():
        if seq not in slots:
            continue
        workload = steps[0].chain or steps[0].workload
        knob = LENGTHS[workload][0]
        length = steps[0].params[knob]
        config = steps[0].config
        cell = found.setdefault(
            (workload, config, json.dumps(length)),
            {
                **{"workload": workload, "config": config, knob: length},
                **{"slot_s": [], "steps_s": {}, "metrics": {}, "short_steps": 0},
            },
        )
        cell["slot_s"].append(slots[seq])
        for step in steps:
            cell["steps_s"].setdefault(step.workload, []).append(step_seconds(step))
            # The runner's own check of the timed phase (execute/checks.py): a step's wall
            # time includes its sync and unmount, and once let a 1.5 s extraction pass.
            cell["short_steps"] += "short" in trialfacts.flags(step.provenance)
            headline = headline_of(step)
            for m in step.metrics:
                if m.name in headline and m.unit not in EXACT_UNITS:
                    cell["metrics"].setdefault(f"{step.workload}.{m.name}", []).append(m.value)
    return list(found.values())


def summarize(cell: dict[str, Any]) -> dict[str, Any]:
    slot = statistics.fmean(cell["slot_s"])
    steps = {name: statistics.fmean(s) for name, s in cell["steps_s"].items()}
    metrics = {}
    for name, values in cell["metrics"].items():
        if len(values) < 2 or not statistics.fmean(values):
            continue
        spread = cv(values)
        metrics[name] = {
            "values": values,
            "mean": statistics.fmean(values),
            "cv": spread,
            "info_per_s": 1 / (spread**2 * slot) if spread else None,
        }
    infos = [m["info_per_s"] for m in metrics.values() if m["info_per_s"]]
    return {
        **{k: v for k, v in cell.items() if k not in ("slot_s", "steps_s", "metrics")},
        "n": len(cell["slot_s"]),
        "slot_s": slot,
        "trial_s": sum(steps.values()),
        "steps_s": steps,
        "shortest_step_s": min(steps.values()),
        "metrics": metrics,
        "info_per_s": statistics.geometric_mean(infos) if infos else None,
    }


def per_workload(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """Per workload: per config its lengths and each metric's slope of log(CV) on
    log(trial seconds); per length the information per second over the configs
    (geometric mean); and the length with the most of it among those whose every timed
    step in every config lasts SHORTEST_STEP_S or more."""
    out: dict[str, Any] = {}
    for workload, (knob, values) in LENGTHS.items():
        mine = [s for s in summaries if s["workload"] == workload]
        if not mine:
            continue
        configs: dict[str, Any] = {}
        for config in sorted({s["config"] for s in mine}):
            rows = sorted(
                (s for s in mine if s["config"] == config), key=lambda s: values.index(s[knob])
            )
            names = sorted(set.intersection(*(set(r["metrics"]) for r in rows)))
            configs[config] = {
                "lengths": rows,
                "cv_slope": {
                    name: slope(
                        [r["trial_s"] for r in rows], [r["metrics"][name]["cv"] for r in rows]
                    )
                    for name in names
                    if len(rows) > 1 and all(r["metrics"][name]["cv"] for r in rows)
                },
            }
        lengths = []
        for value in values:
            rows = [s for s in mine if s[knob] == value]
            infos = [r["info_per_s"] for r in rows]
            lengths.append(
                {
                    knob: value,
                    "configs": len(rows),
                    "info_per_s": statistics.geometric_mean(infos) if all(infos) else None,
                    "long_enough": all(
                        r["shortest_step_s"] >= SHORTEST_STEP_S and not r.get("short_steps")
                        for r in rows
                    ),
                }
            )
        best = max(
            (row for row in lengths if row["long_enough"] and row["info_per_s"]),
            key=lambda row: row["info_per_s"],
            default=None,
        )
        out[workload] = {
            "knob": knob,
            "configs": configs,
            "lengths": lengths,
            "best": best[knob] if best else None,
            "shipped": shipped(workload, knob),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fs", action="append", help="a filesystem (repeat; default ext4)")
    parser.add_argument("--workload", action="append", default=[], help="only these")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("-o", "--out", default="trial_length", help="the result's name")
    parser.add_argument("--keep", type=Path, help="keep the store in this directory")
    parser.add_argument(
        "--store", type=Path, help="analyse the last run of this store (kept with --keep)"
    )
    args = parser.parse_args()
    started = datetime.now(UTC)
    filesystems = args.fs or ["ext4"]
    conditions: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="fsbench-length-") as tmp:
        if args.store:
            db = args.store
        else:
            db = kept_dir(args.keep, tmp) / "length.db"
            plan = Path(tmp) / "trial-length.toml"
            plan.write_text(plan_toml(filesystems, args.reps, args.workload))
            with trial_conditions() as conditions:
                subprocess.run(
                    [FSBENCH, "run", str(plan), "--db", str(db), "--no-report"],
                    check=True,
                    stdout=subprocess.DEVNULL,
                )
        store = Store(db)
        run = store.list_runs()[-1]
        run_meta = {"id": run.id, "created_at": run.created_at, "plan": run.plan}
        filesystems = [fs["type"] for fs in run.plan["fs"]]
        reps = run.plan["reps"]
        summaries = [summarize(c) for c in cells(store.get_trials(run.id))]
        store.close()
    found = per_workload(summaries)
    for name, w in found.items():
        lengths = ", ".join(
            f"{row[w['knob']]}: info/s {row['info_per_s'] or 0:.3g}"
            + ("" if row["long_enough"] else " (a step under 2 s)")
            for row in w["lengths"]
        )
        print(f"{name}: {lengths}; best {w['best']} (shipped {w['shipped']})")
        for config, mine in w["configs"].items():
            slopes = ", ".join(f"{k} {v:+.2f}" for k, v in mine["cv_slope"].items())
            times = ", ".join(f"{r['trial_s']:.1f} s" for r in mine["lengths"])
            print(f"  {config}: trials {times}; CV slopes {slopes}")
    save(
        args.out,
        {
            **{"fs": filesystems, "reps": reps, "conditions": conditions},
            "shortest_step_s": SHORTEST_STEP_S,
            **{"store": str(args.store) if args.store else None, "run": run_meta},
            "workloads": found,
        },
        started,
        workloads=sorted(found),
        filesystems=filesystems,
    )


if __name__ == "__main__":
    main()
