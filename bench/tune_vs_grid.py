"""`fsbench tune` against the full grid it replaces: one space of at least 12 configs, run
both ways on this machine: the grid (`fsbench run`, every config at a fixed n) and the race
(`fsbench tune`, up to the same n rounds). Reports whether the race's winner is the grid's
winner, or equivalent to it, or at least not told apart from it by the grid's own trials,
and the ratio of trials (race / grid, counted trials; warm-ups given beside), and of the
time spent (the trials' own time, and each command's wall time).

    python3 bench/tune_vs_grid.py [--space clear|ties] [--n 10] [--files 2000] [--seed 1]
        [--image-size 2G] [--workdir /var/tmp/fsbench-bench]

Results: bench/results/tune_vs_grid.json (clear), tune_vs_grid-ties.json (ties).

Needs root (mkfs, mount, losetup). Not part of the test run.

**The spaces** (12 configs each, fs_mark at --scale tiny without fsync, 2,000 files: each
trial a fresh mkfs), chosen with `--space`:

- `clear` (the default; the issue's "a fixed n large enough for a clear winner"): one fast
  config per filesystem (ext4, xfs and btrfs mounted `noatime`) and nine that make every
  write (`sync`) or every namespace operation (`dirsync`, xfs `wsync`) synchronous. The
  grid's n is large enough when its best is ahead of its runner-up on its own trials (the
  ratio's 95% CI, paired by round, above 1): `grid.clear_winner` says whether it was.
- `ties`: ext4 `data={ordered,writeback,journal}` with `noatime` or `sync`, xfs with
  `noatime`, `wsync` or `sync`, btrfs with `noatime`, `sync` or `compress=zstd`: six fast
  configs within 25% of each other, which neither the grid nor the race separates in 10
  rounds on a shared machine. It shows what a race costs when the top is a tie: it runs the
  tied configs to the last round, as the grid does.

A race should drop the synchronous configs early and spend its rounds on the fast ones.

**The grid's answer**: the config of the highest geometric mean over its n rounds. The
race's answer (decided: its winner, or every member of its equally good group; undecided at
the last round: its leader, for what it is worth) is compared with it
on the grid's own trials, paired by round on the log scale: `same` (the grid's best),
`equivalent` (the ratio's 90% CI inside 1 ± 5%: two one-sided tests), `not told apart`
(the 95% CI of the ratio holds 1), else `worse`; and whether the grid's best is among the
configs the race kept (`grid_best_survived`): the property a race must have.

**Order**: the grid first, then the race, on one loop image size; both with the same seed.
The machine drifts between them (a shared VM), which is why the comparison is made on the
grid's trials only.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from results_file import save, trial_conditions  # noqa: E402

from fsbench.analysis.stats import t_quantile  # noqa: E402
from fsbench.execute.race.trials import seconds  # noqa: E402
from fsbench.plan.space import describe, expand_space  # noqa: E402
from fsbench.store.results import Store  # noqa: E402

SPACES = {
    "clear": [
        "ext4:mount={noatime,sync,dirsync}",
        "ext4:mount=data={writeback,journal},{sync,dirsync}",
        "xfs:mount={noatime,wsync,sync}",
        "btrfs:mount={noatime,sync}",
    ],
    "ties": [
        "ext4:mount=data={ordered,writeback,journal},{noatime,sync}",
        "xfs:mount={noatime,wsync,sync}",
        "btrfs:mount={noatime,sync,compress=zstd}",
    ],
}
WORKLOAD = ["--workload", "fs_mark", "--scale", "tiny", "--set", "sync=0"]
METRIC = "files_per_s"
MARGIN = 0.05


def fsbench(*args: str) -> subprocess.CompletedProcess[str]:
    """The command, with its wall time in `.wall` (seconds)."""
    argv = [sys.executable, "-m", "fsbench.cli", *args]
    clock = time.monotonic()
    print("$ fsbench " + " ".join(args), file=sys.stderr, flush=True)
    res = subprocess.run(argv, capture_output=True, text=True, check=False)
    if res.returncode not in (0, 3):  # 3: some config unsupported, a result
        sys.stderr.write(res.stderr)
        raise SystemExit(f"fsbench {args[0]} failed ({res.returncode})")
    WALL[args[0]] = time.monotonic() - clock
    return res


WALL: dict[str, float] = {}  # command -> its wall time


def trial_seconds(store: Store, run_id: int) -> float:
    """The stored trials' own time (start to end, warm-ups included)."""
    return sum(seconds(t) for t in store.get_trials(run_id) if t.step == 0)


def grid_values(store: Store, run_id: int) -> dict[str, dict[int, float]]:
    """config -> {round: value} of the grid's counted trials."""
    out: dict[str, dict[int, float]] = {}
    for t in store.get_trials(run_id):
        if t.rep == 0 or t.status != "ok":
            continue
        for m in t.metrics:
            if m.name == METRIC:
                out.setdefault(t.config, {})[t.rep] = m.value
    return out


def ratio_ci(a: dict[int, float], b: dict[int, float], level: float) -> tuple[float, float, float]:
    """a / b, paired by round on logs: the geometric mean ratio and its CI."""
    rounds = sorted(set(a) & set(b))
    d = [math.log(a[r] / b[r]) for r in rounds]
    n = len(d)
    mean = sum(d) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1)) if n > 1 else math.inf
    half = t_quantile(n - 1, level) * sd / math.sqrt(n)
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def verdict(winner: str, best: str, values: dict[str, dict[int, float]]) -> dict[str, Any]:
    if winner == best:
        return {"config": winner, "verdict": "same", "ratio": 1.0}
    ratio, lo90, hi90 = ratio_ci(values[winner], values[best], 0.90)
    _, lo95, hi95 = ratio_ci(values[winner], values[best], 0.95)
    if 1 - MARGIN <= lo90 and hi90 <= 1 + MARGIN:
        found = "equivalent"
    elif lo95 <= 1 <= hi95:
        found = "not told apart"
    else:
        found = "worse"
    return {
        "config": winner,
        "verdict": found,
        "ratio": round(ratio, 4),
        "ci90": [round(lo90, 4), round(hi90, 4)],
        "ci95": [round(lo95, 4), round(hi95, 4)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--space", choices=sorted(SPACES), default="clear")
    parser.add_argument("--n", type=int, default=10, help="the grid's repetitions")
    parser.add_argument(
        "--files", type=int, default=2000, help="fs_mark's files per trial (timed ~0.3 s fast)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--image-size", default="2G")
    parser.add_argument("--workdir", type=Path, default=Path("/var/tmp/fsbench-bench"))
    args = parser.parse_args()
    started = datetime.now(UTC)
    workload = [*WORKLOAD, "--set", f"files={args.files}"]
    given = SPACES[args.space]
    space = expand_space(given)
    assert len(space) >= 12, describe(space).lines()
    args.workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        db = Path(tmp) / "results.db"
        common = ["--image-size", args.image_size, "--workdir", tmp, "--db", str(db)]
        common += ["--seed", str(args.seed), "--no-report"]
        fs_args = [a for spec in space.specs for a in ("--fs", spec)]
        with trial_conditions() as grid_conditions:
            fsbench("run", *fs_args, *workload, "--reps", str(args.n), *common)
        store = Store(db)
        grid_id = store.latest_run_id()
        assert grid_id is not None
        grid_trials = store.get_trials(grid_id)
        braces = [a for spec in given for a in ("--fs", spec)]
        with trial_conditions() as race_conditions:
            tune = fsbench(
                "tune", *braces, *workload, "--max-rounds", str(args.n), "--json", *common
            )
        race = json.loads(tune.stdout)
        values = grid_values(store, grid_id)
        geo = {
            c: math.exp(sum(math.log(v) for v in vs.values()) / len(vs)) for c, vs in values.items()
        }
        best, runner_up = sorted(geo, key=lambda c: -geo[c])[:2]
        ahead = ratio_ci(values[best], values[runner_up], 0.95)
        survivors = [w["config"] for w in race["winners"]]
        if race["decided"]:  # the winner, or its group of equally good configs
            answer = [w["config"] for w in race["winners"] if w["equivalent"]]
        else:  # undecided at the last round: its leader, for what it is worth
            answer = survivors[:1]
        checks = [verdict(w, best, values) for w in answer]
        grid_counted = sum(1 for t in grid_trials if t.rep != 0 and t.step == 0)
        grid_warm = sum(1 for t in grid_trials if t.rep == 0 and t.step == 0)
        results = {
            "space_name": args.space,
            "space": given,
            "configs": len(space),
            "workload": " ".join(workload),
            "metric": METRIC,
            "n": args.n,
            "grid": {
                "run": grid_id,
                "best": best,
                "runner_up": runner_up,
                # best / runner-up, paired by round, with its 95% CI: clear when above 1.
                "best_vs_runner_up": [round(x, 4) for x in ahead],
                "clear_winner": ahead[1] > 1,
                "geo_means": {c: round(v, 1) for c, v in sorted(geo.items(), key=lambda x: -x[1])},
                "trials": grid_counted,
                "warmup_trials": grid_warm,
                "conditions": grid_conditions,
            },
            "race": {
                "run": race["run_id"],
                "stop": race["stop"],
                "rounds": race["grid_n"],
                "decided": race["decided"],
                "answer": answer,
                "survivors": survivors,
                "dropped": [
                    {"config": d["config"], "round": d["round"], "reason": d["reason"]}
                    for d in race["dropped"]
                ],
                "trials": race["trials"],
                "warmup_trials": race["warmup_trials"],
                "conditions": race_conditions,
            },
            "winner_checks": checks,
            "winner_matches": all(
                c["verdict"] in ("same", "equivalent", "not told apart") for c in checks
            ),  # fmt: skip
            # Whatever the race decided: it did not drop the grid's best.
            "grid_best_survived": best in survivors,
            "trial_ratio": round(race["trials"] / grid_counted, 3),
            "seconds": {
                "grid_trials": round(trial_seconds(store, grid_id), 1),
                "race_trials": round(trial_seconds(store, race["run_id"]), 1),
                "grid_wall": round(WALL["run"], 1),
                "race_wall": round(WALL["tune"], 1),
            },
            "trial_ratio_with_warmups": round(
                (race["trials"] + race["warmup_trials"]) / (grid_counted + grid_warm), 3
            ),
        }
    print(json.dumps(results, indent=1))
    save(
        "tune_vs_grid" if args.space == "clear" else f"tune_vs_grid-{args.space}",
        results,
        started,
        workloads=["fs_mark"],
        filesystems=sorted({spec.split(":")[0] for spec in given}),
    )


if __name__ == "__main__":
    main()
