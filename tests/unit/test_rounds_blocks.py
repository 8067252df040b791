"""Rounds as blocks and slow trials that cannot order, proven by simulation through the
real decisions (bench/rounds_blocks.py): every committed A/A figure keeps its bound, the
rounds buy power under shared shocks, and the first runs of every scenario, drawn again,
give a rate within the Monte-Carlo error of the committed one (a doubled level is beyond
it)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import rounds_blocks as rb  # noqa: E402

RESULTS = json.loads((BENCH / "results" / "rounds_blocks.json").read_text())["results"]
Z = 3.5


def test_every_scenario_has_its_committed_figure() -> None:
    assert {s.name for s in rb.SCENARIOS} == set(RESULTS)
    for s in rb.SCENARIOS:
        assert RESULTS[s.name]["runs"] == s.runs and RESULTS[s.name]["bound"] == s.bound


def test_aa_stays_within_its_bound_and_rounds_buy_power_under_shocks() -> None:
    for s in rb.SCENARIOS:
        if s.bound is not None:
            assert RESULTS[s.name]["rate"] <= s.bound, (s.name, RESULTS[s.name])
    rate = {name: found["rate"] for name, found in RESULTS.items()}
    # Shared shocks: the round-paired t orders what Welch's alone cannot.
    assert rate["power_shocks_rounds"] > 4 * rate["power_shocks_welch"]
    # No shocks: the rounds cost a little of Welch's power (its own law, as before them).
    assert rate["power_calm_rounds"] >= rate["power_calm_welch"] - 0.03


@pytest.mark.parametrize("scenario", rb.SCENARIOS, ids=lambda s: s.name)
def test_the_decisions_reproduce_the_figure(scenario: rb.Scenario) -> None:
    committed = RESULTS[scenario.name]
    again = rb.measure(scenario, scenario.test_runs, first_seed=committed["seed"])
    p = committed["rate"]
    se = math.sqrt(
        max(p * (1 - p), 1 / committed["runs"]) * (1 / again["runs"] + 1 / committed["runs"])
    )
    assert abs(again["rate"] - p) <= Z * se, (again, committed)
