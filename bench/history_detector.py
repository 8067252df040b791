"""The change-point detector of `fsbench history` proven by simulation, through the real
code path: each series is 30 runs of one cell as the store hands them to history (records
of a warm-up and 3 counted repetitions per run, tests/history_runs.py), built into series
and searched by `analysis/history.build`, the function the command calls.

    .venv/bin/python bench/history_detector.py [--draws N] [--only NAME ...]

Writes bench/results/history_detector.json: per scenario its seed, draws, rate, Monte-
Carlo standard error and the bound it must keep; and how many runs after a change it
takes to see it (`visibility`). tests/unit/test_history_detector.py runs the first draws
of every scenario again and holds them to the bounds.

CV is the repetitions' (what a report prints per row); a run's mean of 3 has CV/sqrt(3).
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fsbench.analysis import history  # noqa: E402
from tests.history_runs import RunSpec, in_memory  # noqa: E402

RUNS = 30
MEAN = 1000.0


@dataclass(frozen=True)
class Scenario:
    name: str
    cv: float
    lognormal: bool = False
    shift: float = 0.0  # relative change of the mean
    at: int = 15  # the first run (1-based) with the change
    fsbench_changes: bool = False  # fsbench's version changes at the same run
    reps: int = 3
    runs: int = RUNS
    draws: int = 1000
    measure: str = "any"  # any: a change reported; near: one within a run of `at`; harness
    direction: str = "at most"
    bound: float = 0.05


SCENARIOS = (
    Scenario("aa-normal-cv5", 0.05),
    Scenario("aa-normal-cv20", 0.20),
    Scenario("aa-lognormal-cv5", 0.05, lognormal=True),
    Scenario("aa-lognormal-cv20", 0.20, lognormal=True),
    Scenario("shift10-at15-cv5", 0.05, shift=-0.10, measure="near", direction="at least",
             bound=0.90),
    Scenario("shift10-at15-cv5-fsbench", 0.05, shift=-0.10, fsbench_changes=True,
             measure="harness", direction="at least", bound=0.90),
)  # fmt: skip
# How many runs after a change it takes to see it: the change enters at run RUNS - k + 1.
VISIBLE_AFTER = (1, 2, 3, 4, 5, 8, 15)
VISIBILITY = tuple(
    Scenario(f"visible-shift{round(-shift * 100)}-cv{round(cv * 100)}-after{k}", cv, shift=shift,
             at=RUNS - k + 1, measure="near", direction="report", bound=0.0, draws=400)
    for cv, shift in ((0.05, -0.10), (0.20, -0.10), (0.20, -0.25))
    for k in VISIBLE_AFTER
)  # fmt: skip


def specs(s: Scenario) -> list[RunSpec]:
    out = []
    for run in range(1, s.runs + 1):
        changed = s.shift != 0 and run >= s.at
        out.append(
            RunSpec(MEAN * (1 + s.shift) if changed else MEAN,
                    fsbench="0.2.0" if s.fsbench_changes and run >= s.at else "0.1.0")
        )  # fmt: skip
    return out


def hit(s: Scenario, series: history.Series) -> bool:
    if s.measure == "any":
        return bool(series.changes)
    near = [c for c in series.changes if abs(c.index - (s.at - 1)) <= 1]
    if s.measure == "near":
        return bool(near)
    return any(c.harness for c in near)  # harness: found near, and flagged


def measure(s: Scenario, draws: int, first_seed: int = 0) -> dict[str, float | int | str]:
    """The scenario's rate over `draws` seeded series (seeds first_seed, first_seed + 1...)."""
    events = 0
    for seed in range(first_seed, first_seed + draws):
        runs = in_memory(specs(s), seed, s.cv, s.reps, s.lognormal)
        (series,) = history.build(runs)
        events += hit(s, series)
    rate = events / draws
    return {
        "rate": rate,
        "se": math.sqrt(max(rate * (1 - rate), 1 / draws) / draws),
        "events": events,
        "draws": draws,
        "seed": first_seed,
        "direction": s.direction,
        "bound": s.bound,
        "cv": s.cv,
        "shift": s.shift,
        "at": s.at,
        "runs": s.runs,
        "reps": s.reps,
        "lognormal": s.lognormal,
    }


def main() -> None:
    from results_file import save

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--draws", type=int, help="series per scenario (default: each its own)")
    parser.add_argument("--only", nargs="*", help="scenario names")
    args = parser.parse_args()
    started = datetime.now(UTC)
    results: dict[str, dict[str, object]] = {"scenarios": {}, "visibility": {}}
    for group, scenarios in (("scenarios", SCENARIOS), ("visibility", VISIBILITY)):
        for s in scenarios:
            if args.only and s.name not in args.only:
                continue
            found = measure(s, args.draws or s.draws)
            results[group][s.name] = found
            print(f"{s.name}: {found['rate']:.3f} ± {found['se']:.3f}", flush=True)
    results["method"] = {
        "alpha": history.changepoints.ALPHA,
        "permutations": history.changepoints.PERMUTATIONS,
        "tail": history.changepoints.TAIL,
        "tail_alpha": history.changepoints.TAIL_ALPHA,
    }
    save("history_detector", results, started)


if __name__ == "__main__":
    main()
