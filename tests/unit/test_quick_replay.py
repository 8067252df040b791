"""What the default run decides, replayed (bench/quick_replay.py) and run for real
(bench/quick_decides.py): the committed replays are held to the goal (quick_replay.GOAL:
42 of the quick preset's 57 headline pairs in nine replays of ten within the preset's
budget), docs/statistics.md saying when they miss it, each replay within its budget
+ 5%; the committed real runs, five or more each in a fresh store, all end within the
budget + 5%, and docs/statistics.md says whether they reach it in nine of ten; and a
few replays of the committed models, run again here through the real loop, fall within
the committed range."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import quick_replay  # noqa: E402

from fsbench.plan.presets import load_preset  # noqa: E402

RESULT = BENCH / "results" / "quick_replay.json"


def test_the_replays_are_held_to_the_goal_and_the_docs_say_when_they_miss_it() -> None:
    """The goal: the target share of pairs decided in nine replays of ten within the
    preset's budget. docs/statistics.md says it is not met in the replays exactly when it
    is not (they missed it on 2026-12-08, while five real runs of five reached it)."""
    budgets = json.loads(RESULT.read_text())["results"]["budgets"]
    preset = f"{load_preset('quick').budget:g}"
    found = budgets[preset]
    assert found["target"] == quick_replay.goal(found["pairs"])
    met = found["decided_p10"] >= found["target"] and found["share_reaching_target"] >= 0.9
    said = (BENCH.parent / "docs" / "statistics.md").read_text()
    assert ("so the goal is not met in the replays" in said) == (not met), found
    for each in budgets.values():
        assert each["over_budget_5pct"] == 0.0, each


def test_real_fresh_runs_are_counted_against_the_goal_within_the_budget() -> None:
    """The committed real runs: five or more, each within the budget + 5%, and how many
    reached the goal counted from their own decided pairs; docs/statistics.md, where it
    cites that count, says the goal of nine in ten is not met exactly when it is not."""
    doc = json.loads((BENCH / "results" / "quick_decides.json").read_text())["results"]
    found = doc["runs_summary"]
    assert found["runs"] >= 5 and found["runs"] == len(doc["decide_runs"])
    assert found["budget_s"] == load_preset("quick").budget
    assert found["target"] == quick_replay.goal(found["pairs"])
    decided = [run["decided"] for run in doc["decide_runs"]]
    assert found["decided"] == decided
    reaching = sum(d >= found["target"] for d in decided)
    assert found["runs_reaching_target"] == reaching
    assert all(run["seconds"] <= 1.05 * found["budget_s"] for run in doc["decide_runs"])
    said = (BENCH.parent / "docs" / "statistics.md").read_text()
    met = reaching >= 0.9 * len(decided)
    assert ("so the goal is not met in real runs" in said) == (not met), (reaching, decided)


def test_replays_of_the_committed_models_fall_in_the_committed_range() -> None:
    models = quick_replay.load_models(RESULT)
    budget = float(load_preset("quick").budget or 0)
    committed = json.loads(RESULT.read_text())["results"]["budgets"][f"{budget:g}"]
    with tempfile.TemporaryDirectory() as tmp:
        for seed in (1, 2, 3):
            found = quick_replay.replay(models, budget, seed, Path(tmp))
            decided = found["order"] + found["equivalent"]
            assert committed["decided_min"] <= decided <= committed["decided_max"], found
            assert found["seconds"] <= 1.05 * budget


def test_a_plausible_machine_draws_spreads_as_wide_as_n_values_leave_them() -> None:
    """CellModel.plausible: a CV estimated from 3 values is drawn from its sampling law
    (about a quarter of draws below half the estimate's variance or above twice it: a
    chi-square with 2 degrees of freedom); an exact count, a given figure (n = 0) and a
    twin drawn from another metric stay as they are."""
    import math
    import random

    from fsbench.execute.executors.replay import MetricModel

    rng = random.Random(7)
    estimated = MetricModel("seconds", "s", "lower", 10.0, 0.10, n=3)
    ratios = []
    for _ in range(4000):
        drawn = estimated.plausible(rng)
        ratios.append(math.log1p(drawn.cv**2) / math.log1p(0.10**2))
    # sigma^2 / s^2 = 2 / chi2_2: P(< 1/2) = P(chi2_2 > 4) = e^-2; P(> 2) = 1 - e^-1/2.
    below = sum(r < 0.5 for r in ratios) / len(ratios)
    above = sum(r > 2 for r in ratios) / len(ratios)
    assert abs(below - math.exp(-2)) < 0.02, below
    assert abs(above - (1 - math.exp(-0.5))) < 0.025, above
    for fixed in (
        MetricModel("extents", "count", "lower", 3.0, 0.0, n=3),
        MetricModel("seconds", "s", "lower", 10.0, 0.10),
        MetricModel("mb_per_s", "MB/s", "higher", 50.0, 0.10, twin_of="seconds", n=3),
    ):
        assert fixed.plausible(rng) == fixed
