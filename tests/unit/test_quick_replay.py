"""What the default run decides, replayed (bench/quick_replay.py): the committed result
shows at least two thirds of the quick preset's headline pairs decided in at least 90% of
replays, within the preset's budget and at 540 s, each replay within its budget + 5%; and
a few replays of the committed models, run again here through the real loop, fall within
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


def test_the_default_run_decides_two_thirds_in_nine_replays_of_ten() -> None:
    budgets = json.loads(RESULT.read_text())["results"]["budgets"]
    preset = f"{load_preset('quick').budget:g}"
    assert {preset, "540"} <= set(budgets)
    for found in budgets.values():
        assert found["target"] * 3 >= found["pairs"] * 2  # two thirds, rounded up
        assert found["share_reaching_target"] >= 0.9, found
        assert found["over_budget_5pct"] == 0.0, found


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
