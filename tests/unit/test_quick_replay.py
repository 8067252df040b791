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
