"""The decision rule proven by simulation through the real loop (bench/decide_simulated.py):
every scenario's committed figure keeps its bound, and the first draws of every scenario,
run again here through `execute/loop.py` on a replayed machine, give a rate within the
Monte-Carlo error of that figure. A change to the rule that moves a rate beyond its error
fails here until the bench is run again and its figures (and the docs quoting them)
follow."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import decide_simulated as ds  # noqa: E402

RESULTS = json.loads((BENCH / "results" / "decide_simulated.json").read_text())["results"]
# How far a rate may stray from its committed figure: this many standard errors of the
# difference (both are binomial estimates).
Z = 3.5


def test_every_scenario_has_its_committed_figure() -> None:
    assert {s.name for s in ds.SCENARIOS} == set(RESULTS)


@pytest.mark.parametrize("scenario", ds.SCENARIOS, ids=lambda s: s.name)
def test_the_committed_figure_keeps_its_bound(scenario: ds.Scenario) -> None:
    found = RESULTS[scenario.name]
    assert found["draws"] == scenario.draws and found["bound"] == scenario.bound
    if scenario.direction == "at most":
        assert found["rate"] <= scenario.bound, found
    else:
        assert found["rate"] >= scenario.bound, found


@pytest.mark.parametrize("scenario", ds.SCENARIOS, ids=lambda s: s.name)
def test_the_loop_reproduces_the_figure(scenario: ds.Scenario) -> None:
    committed = RESULTS[scenario.name]
    again = ds.measure(scenario, scenario.test_draws, first_seed=committed["seed"])
    p = committed["rate"]
    se = math.sqrt(
        max(p * (1 - p), 1 / committed["trials"]) * (1 / again["trials"] + 1 / committed["trials"])
    )
    assert abs(again["rate"] - p) <= Z * se, (again, committed)
