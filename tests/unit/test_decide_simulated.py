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


PARTIAL = json.loads((BENCH / "results" / "decide_partial_null.json").read_text())["results"]
# The rate the run's control holds (analysis/design.CONTROLLED), in every partial null.
HELD = "selected_with_false_order"


def test_every_partial_null_has_its_committed_figures() -> None:
    assert {s.name for s in ds.PARTIAL_NULLS} == set(PARTIAL)


@pytest.mark.parametrize("shape", ds.PARTIAL_NULLS, ids=lambda s: s.name)
def test_the_run_wide_promise_holds_where_some_configs_differ(shape: ds.PartialNull) -> None:
    """The stated rate (of the comparisons a run selects, the share with a false order)
    stays within 5% in every partial null, as committed; and the shape's first runs,
    drawn again, give every published rate (the held one, the share of runs with any
    false order, the share of false orders among the orders) within its Monte-Carlo
    error."""
    committed = PARTIAL[shape.name]
    assert committed["runs"] == shape.runs
    assert committed[HELD]["rate"] <= 0.05, committed
    again = ds.measure_partial_null(shape, shape.test_runs, first_seed=committed["seed"])
    for name in (HELD, "runs_with_false_order", "false_share_of_orders"):
        c, a = committed[name], again[name]
        se = math.sqrt(c["se"] ** 2 * (1 + committed["runs"] / shape.test_runs))
        assert abs(a["rate"] - c["rate"]) <= Z * max(se, 0.01), (name, a, c)
