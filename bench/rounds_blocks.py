"""Rounds as blocks, and slow trials that cannot order (issue 50, items 1 and 2): what the
round-paired t beside Welch's buys when a shock slows every config of a round, what it
costs when none does, and the false orders of A/A runs whose machine is sometimes slow.

Every run is decided by fsbench's own code (analysis/decisions.evidence for each
comparison, analysis/family.control_run over the run; decisions.decide for a single pair),
on values drawn here: lognormal noise of the metric's CV, and where asked a round shock
(every config of a round multiplied by one lognormal factor) or a share of slow trials
(each trial independently). The configs of one run share rounds (Side.rounds), so the
round-paired t is used; "rounds unknown" draws the same values with the rounds not
recorded, so Welch's t alone decides, by its own law (the rule before the rounds). Every
look from n = 3 to the design's last is made: the loop's early stops are not simulated.

    .venv/bin/python bench/rounds_blocks.py [--runs N]

Writes bench/results/rounds_blocks.json. tests/unit/test_rounds_blocks.py draws the first
runs of every scenario again and holds them to these figures within their Monte-Carlo
error.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fsbench.analysis.decisions import Side, decide, evidence  # noqa: E402
from fsbench.analysis.design import Design  # noqa: E402
from fsbench.analysis.family import control_run  # noqa: E402

# The quick preset's twelve timing comparisons, their CVs (decide_simulated.QUICK_CVS).
QUICK_CVS = (0.05, 0.06, 0.06, 0.08, 0.08, 0.15, 0.2, 0.2, 0.3, 0.08, 0.08, 0.15)
CONFIGS = ("ext4", "xfs", "btrfs")
ROUNDS = "run 1"


@dataclass(frozen=True)
class Machine:
    """How values are drawn: each trial's CV, a round shock's CV (every config of a round
    alike), a share of trials slowed by `slow` (times)."""

    shock: float = 0.0
    slow_share: float = 0.0
    slow: float = 1.0


def _sigma(cv: float) -> float:
    return math.sqrt(math.log(1 + cv * cv))


def draw_sides(
    rng: random.Random,
    means: Sequence[float],
    cv: float,
    machine: Machine,
    n: int,
    rounds: bool = True,
) -> list[Side]:
    """One comparison's configs over n rounds (seconds: lower is better)."""
    shocks = [rng.lognormvariate(0, _sigma(machine.shock)) for _ in range(n)]
    reps = tuple(range(1, n + 1))
    sides = []
    for label, mean in zip(CONFIGS, means, strict=False):
        values = []
        for r in range(n):
            v = mean * shocks[r] * rng.lognormvariate(0, _sigma(cv))
            if machine.slow_share and rng.random() < machine.slow_share:
                v *= machine.slow
            values.append(v)
        sides.append(Side(label, tuple(values), reps, rounds=ROUNDS if rounds else ""))
    return sides


def quick_run(seed: int, machine: Machine, n_max: int) -> int:
    """One A/A run of the quick preset's shape (twelve comparisons of three identical
    configs, looks 3..n_max), judged by the run's control: its false orders."""
    rng = random.Random(seed)
    design = Design(True, 3, n_max)
    drafts = []
    for i, cv in enumerate(QUICK_CVS):
        sides = draw_sides(rng, (1.0, 1.0, 1.0), cv, machine, n_max)
        found = evidence(sides, better="lower", unit="s", design=design, key=(str(i),))
        assert found is not None
        drafts.append(found)
    return sum(p.kind == "order" for d in control_run(drafts) for p in d.pairs)


def pair_run(seed: int, ratio: float, cv: float, machine: Machine, rounds: bool) -> bool:
    """One comparison of two configs (b `ratio` times a's seconds), looks 3..10 at the
    full level: ordered, and the right way when they differ."""
    rng = random.Random(seed)
    sides = draw_sides(rng, (1.0, ratio), cv, machine, 10, rounds)[:2]
    found = decide(sides, better="lower", unit="s", design=Design(True, 3, 10))
    assert found is not None
    (p,) = found.pairs
    return p.kind == "order" and (ratio == 1.0 or p.winner == ("ext4" if ratio > 1 else "xfs"))


@dataclass(frozen=True)
class Scenario:
    name: str
    what: str
    kind: str  # quick | pair
    machine: Machine
    n_max: int = 10
    ratio: float = 1.0
    cv: float = 0.05
    rounds: bool = True
    bound: float | None = None  # an A/A rate that may not exceed it
    runs: int = 2000
    test_runs: int = 300

    def once(self, seed: int) -> bool:
        if self.kind == "quick":
            return quick_run(seed, self.machine, self.n_max) > 0
        return pair_run(seed, self.ratio, self.cv, self.machine, self.rounds)


SHOCK = Machine(shock=0.10)


def _power_what(machine: Machine, rounds: bool) -> str:
    shocked = "rounds shocked (CV 10%)" if machine.shock else "no shocks"
    used = "rounds used" if rounds else "rounds unknown (Welch alone)"
    return f"a true 10% difference at CV 5%, {shocked}, {used}, looks 3-10: ordered the right way"


SLOW = Machine(slow_share=0.25, slow=1.4)

SCENARIOS = [
    Scenario(
        "aa_pair",
        "two identical configs (CV 5%), no shocks, looks 3-10: false orders",
        "pair",
        Machine(),
        bound=0.05,
        runs=4000,
        test_runs=1000,
    ),
    Scenario(
        "aa_pair_shocks",
        "two identical configs (CV 5%), rounds shocked (CV 10%), looks 3-10: false orders",
        "pair",
        SHOCK,
        bound=0.05,
        runs=4000,
        test_runs=1000,
    ),
    Scenario(
        "aa_quick_slow_n3",
        "the quick preset's shape all A/A, a quarter of trials 1.4x slower, n = 3: "
        "runs with any false order",
        "quick",
        SLOW,
        n_max=3,
        bound=0.05,
        runs=1000,
        test_runs=150,
    ),
    Scenario(
        "aa_quick_slow_n10",
        "the same, looks 3-10: runs with any false order",
        "quick",
        SLOW,
        bound=0.05,
        runs=400,
        test_runs=60,
    ),
    Scenario(
        "aa_quick_shocks_n10",
        "the quick preset's shape all A/A, rounds shocked (CV 10%), looks 3-10: "
        "runs with any false order",
        "quick",
        SHOCK,
        bound=0.05,
        runs=400,
        test_runs=60,
    ),
    *(
        Scenario(
            f"power_{'shocks' if machine.shock else 'calm'}_{'rounds' if rounds else 'welch'}",
            _power_what(machine, rounds),
            "pair",
            machine,
            ratio=1.1,
            rounds=rounds,
            runs=2000,
            test_runs=400,
        )
        for machine in (Machine(), SHOCK)
        for rounds in (True, False)
    ),
]


def measure(scenario: Scenario, runs: int, first_seed: int = 1) -> dict[str, Any]:
    events = sum(scenario.once(seed) for seed in range(first_seed, first_seed + runs))
    rate = events / runs
    return {
        "what": scenario.what,
        "seed": first_seed,
        "runs": runs,
        "events": events,
        "rate": rate,
        "se": math.sqrt(max(rate * (1 - rate), 1e-12) / runs),
        "bound": scenario.bound,
    }


def main() -> None:
    from results_file import save

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, help="runs per scenario (default: each its own)")
    parser.add_argument("--only", nargs="*", help="scenario names (a trial: not saved)")
    args = parser.parse_args()
    started = datetime.now(UTC)
    results = {}
    for scenario in SCENARIOS:
        if args.only and scenario.name not in args.only:
            continue
        found = measure(scenario, args.runs or scenario.runs)
        results[scenario.name] = found
        print(f"{scenario.name}: {found['rate']:.4f} ± {found['se']:.4f}", flush=True)
    if not args.only and not args.runs:
        save("rounds_blocks", results, started)


if __name__ == "__main__":
    main()
