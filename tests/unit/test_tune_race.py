"""The race of `fsbench tune`: drops, equivalence, constraints, safety, and simulations
that check it keeps the true best and drops nothing when nothing differs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import friedmanchisquare

from fsbench.execute.race.checks import Constraint, friedman_p, parse_requirements
from fsbench.execute.race.rule import (
    AT_MAX,
    BUDGET,
    CONSTRAINT,
    EQUIVALENT,
    FRIEDMAN_TEST,
    ONE_LEFT,
    PAIRED_TEST,
    UNSAFE,
    UNSUPPORTED,
    WORSE,
    Drop,
    Race,
    RaceResult,
    RaceSettings,
    race,
)
from fsbench.system.errors import FsbenchError


def noisy(rng: np.random.Generator, means: list[float], cv: float, rounds: int) -> np.ndarray:
    """rounds x configs values: each mean times lognormal noise of this CV, and a common
    drift per round (a block effect the race's blocks cancel)."""
    sigma = math.sqrt(math.log(1 + cv**2))
    noise = rng.standard_normal((rounds, len(means))) * sigma - sigma**2 / 2
    drift = rng.standard_normal((rounds, 1)) * 0.05
    return np.asarray(means) * np.exp(noise + drift)


def run(names: list[str], values: np.ndarray, settings: RaceSettings) -> RaceResult:
    rounds = [{c: float(v) for c, v in zip(names, row, strict=True)} for row in values]
    return race(names, rounds, settings)


# --------------------------------------------------------------------------- parts


def test_constraints_parse() -> None:
    assert Constraint.parse("lat_p99_us<5000") == Constraint("lat_p99_us", "<", 5000.0)
    assert Constraint.parse(" tps >= 1e3 ") == Constraint("tps", ">=", 1000.0)
    found = Constraint.parse("lat_p99_us<=5000")
    assert found.upper and found.holds(5000) and not found.holds(5001)
    assert str(found) == "lat_p99_us<=5000"
    assert parse_requirements(["safe", "lat_p99_us<5000"]) == (
        (Constraint("lat_p99_us", "<", 5000.0),),
        True,
    )
    for bad in ("lat_p99_us", "lat<fast", "<5000", "lat<inf", "lat==5"):
        with pytest.raises(FsbenchError, match="--require"):
            Constraint.parse(bad)


def test_one_level_for_every_look_counted_from_the_race() -> None:
    """A Pocock boundary: one level for every look, below alpha (there are many looks) and
    above alpha shared evenly over them (a union bound wastes the looks' correlation);
    stricter when there are more looks. That it holds alpha is the A/A test below."""
    settings = RaceSettings(alpha=0.05, min_rounds=3, max_rounds=12)
    looks = 12 - 3 + 1
    for k in (2, 3, 12):
        assert 0.05 / looks < settings.level(k) < 0.05
    assert RaceSettings(max_rounds=20).level(12) < settings.level(12)
    assert 0.9 < settings.equivalence_level < 0.99
    with pytest.raises(FsbenchError):
        RaceSettings(max_rounds=2)
    with pytest.raises(FsbenchError):
        RaceSettings(margin=0)


def test_friedman_is_scipys() -> None:
    rng = np.random.default_rng(11)
    for shape in ((3, 3), (5, 12), (20, 4)):
        x = rng.standard_normal(shape)
        for y in (x, np.round(x)):  # with ties too
            assert friedman_p(y) == pytest.approx(friedmanchisquare(*y.T).pvalue, rel=1e-9)
    assert friedman_p(np.ones((4, 3))) == 1.0


# --------------------------------------------------------------------------- races


def test_a_clearly_worse_config_is_dropped_with_its_evidence() -> None:
    rng = np.random.default_rng(1)
    names = [f"c{i}" for i in range(6)]
    values = noisy(rng, [1.0, 0.98, 0.97, 0.99, 0.96, 0.5], 0.03, 20)
    state = Race(names, RaceSettings(max_rounds=20))
    dropped = []
    for row in values:
        dropped += state.record(dict(zip(names, map(float, row), strict=True)))
        if "c5" not in state.alive:
            break
    first = dropped[0]
    assert first.config == "c5"
    assert first.reason == WORSE
    assert first.test == FRIEDMAN_TEST
    assert first.p is not None and first.level is not None and first.p < first.level
    assert first.p_omnibus is not None and first.p_omnibus < first.level
    assert first.round == state.rounds <= 8
    assert first.versus in names[:5]
    assert first.means["c5"] == pytest.approx(0.5, rel=0.1)
    assert first.mean_ranks["c5"] == min(first.mean_ranks.values())
    assert "worse than" in first.detail


def test_two_configs_use_a_paired_test_and_stop_with_one_left() -> None:
    rng = np.random.default_rng(2)
    result = run(["a", "b"], noisy(rng, [100.0, 80.0], 0.05, 20), RaceSettings())
    assert result.stop == ONE_LEFT and result.decided
    assert result.leader == "a"
    (drop,) = result.dropped
    assert drop.config == "b" and drop.test == PAIRED_TEST
    assert result.trials == 2 * result.rounds
    assert result.grid_trials() == result.trials
    assert result.grid_trials(10) == 20


def test_equally_good_configs_end_the_race_together() -> None:
    rng = np.random.default_rng(3)
    names = ["a", "b", "c", "d"]
    result = run(names, noisy(rng, [1.0, 1.004, 0.6, 0.62], 0.005, 20), RaceSettings())
    assert result.stop == EQUIVALENT and result.decided
    assert {w.config for w in result.winners} == {"a", "b"}
    assert all(w.equivalent for w in result.winners)
    lo, hi = result.winners[1].ratio_ci or (0.0, 0.0)
    assert 0.95 <= lo <= hi <= 1.05
    assert {d.config for d in result.dropped} == {"c", "d"}


def test_lower_is_better() -> None:
    rng = np.random.default_rng(4)
    names = ["fast", "slow", "slower"]
    settings = RaceSettings(higher_is_better=False, max_rounds=20)
    result = run(names, noisy(rng, [1.0, 1.5, 2.0], 0.04, 20), settings)
    assert result.leader == "fast"
    assert {d.config for d in result.dropped} == {"slow", "slower"}
    winner = result.winners[0]
    assert winner.mean == pytest.approx(1.0, rel=0.1)
    assert winner.ci is not None and winner.mean is not None
    assert winner.ci[0] < winner.mean < winner.ci[1]


def test_max_rounds_and_the_grid() -> None:
    rng = np.random.default_rng(5)
    names = ["a", "b", "c"]
    result = run(names, noisy(rng, [1.0, 1.0, 1.0], 0.2, 10), RaceSettings(max_rounds=6))
    assert result.stop == AT_MAX and not result.decided
    assert result.rounds == 6
    assert result.alive_per_round == (3,) * 6
    assert result.trials == result.grid_trials() == 18
    assert len(result.winners) == 3


def test_a_failed_trial_leaves_its_round_out_of_the_tests() -> None:
    state = Race(["a", "b", "c"], RaceSettings(max_rounds=5))
    state.record({"a": 1.0, "b": 2.0, "c": 3.0})
    state.record({"a": 1.1, "b": None, "c": 3.1})  # b's trial failed
    state.record({"a": 1.0, "c": 3.0})  # b absent: failed too
    state.record({"a": 1.2, "b": 2.2, "c": 3.2})
    assert state.rounds == 4 and state.alive == ["a", "b", "c"]
    result = state.result()
    assert result.trials == 11
    b = next(w for w in result.winners if w.config == "b")
    assert b.n == 2


def test_a_constraint_drops_a_config_whose_mean_is_clearly_past_it() -> None:
    rng = np.random.default_rng(6)
    names = ["ok", "borderline", "too-slow"]
    settings = RaceSettings(constraints=(Constraint.parse("lat_p99_us<5000"),), max_rounds=10)
    tps = noisy(rng, [1.0, 1.0, 1.0], 0.3, 10)
    lat = noisy(rng, [3000.0, 4950.0, 7000.0], 0.1, 10)
    state = Race(names, settings)
    for r in range(10):
        if state.done:
            break
        alive = state.alive
        state.record(
            {c: float(tps[r, i]) for i, c in enumerate(names) if c in alive},
            {"lat_p99_us": {c: float(lat[r, i]) for i, c in enumerate(names) if c in alive}},
        )
    result = state.result()
    (drop,) = [d for d in result.dropped if d.reason == CONSTRAINT]
    assert drop.config == "too-slow"
    assert drop.p is not None and drop.level is not None and drop.p < drop.level
    assert "breaks lat_p99_us<5000" in drop.detail
    # Near its bound but inside it: never dropped for it (the objective alike in all
    # three, a drop for being worse is an A/A drop, at most alpha of races: not this one).
    assert {d.config for d in result.dropped if d.reason == CONSTRAINT} == {"too-slow"}


def test_unsafe_configs_are_reported_with_their_evidence() -> None:
    state = Race(["fast", "safe"])
    assert state.safety("safe", True, "0 of 20 crashes lost an acknowledged write") is None
    drop = state.safety("fast", False, "3 of 20 crashes lost acknowledged writes")
    assert drop is not None and drop.reason == UNSAFE
    assert state.done and state.alive == ["safe"]
    result = state.result()
    assert result.unsafe == (drop,)
    assert result.unsafe[0].detail == "3 of 20 crashes lost acknowledged writes"
    assert result.safety["safe"].startswith("0 of 20")
    assert result.stop == ONE_LEFT


def test_an_unsupported_config_costs_the_grid_one_trial() -> None:
    state = Race(["a", "b", "c"], RaceSettings(max_rounds=3))
    state.drop("c", UNSUPPORTED, "mount: Unknown parameter 'nomballoc'")
    for a, b in ((1.0, 1.3), (1.2, 1.0), (1.0, 1.1)):
        state.record({"a": a, "b": b})
    result = state.result()
    assert result.stop == AT_MAX
    assert result.grid_trials() == 2 * 3 + 1


def test_the_budget_stops_the_race() -> None:
    state = Race(["a", "b"])
    state.record({"a": 1.0, "b": 2.0})
    state.stop()
    assert state.done and state.result().stop == BUDGET
    with pytest.raises(FsbenchError, match="stopped"):
        state.record({"a": 1.0, "b": 2.0})


def test_bad_input_is_refused() -> None:
    with pytest.raises(FsbenchError):
        Race(["a", "a"])
    state = Race(["a", "b"])
    with pytest.raises(FsbenchError, match="not in the race"):
        state.record({"a": 1.0, "z": 2.0})


# --------------------------------------------------------------------------- simulation

RACES = 1000
CONFIGS = 12
MAX_ROUNDS = 20
GAP = (0.05, 0.10)  # how far the best is ahead of the next, drawn per race
LOWEST = 0.6  # the slowest config's mean, the best's being 1
CV = (0.05, 0.10)  # each config's noise, drawn per race (A/A: one CV for all)
KEPT = 0.95  # the share of races that must keep the best or one within the margin


def test_the_race_keeps_the_true_best_and_spends_less_than_a_grid() -> None:
    """1,000 seeded races of 12 configs: the best 5-10% ahead of the next, the rest
    spread below, every config's noise lognormal with a CV of 5-10% and a drift per
    round. The true best (or a config within the margin of it) survives in at least 95%
    of races, and the races spend fewer trials than a grid at the same final n."""
    rng = np.random.default_rng(20261126)
    names = [f"c{i}" for i in range(CONFIGS)]
    settings = RaceSettings(max_rounds=MAX_ROUNDS)
    kept = 0
    trials = grid = 0
    for _ in range(RACES):
        gap = rng.uniform(*GAP)
        means = np.concatenate([[1.0], np.linspace(1 / (1 + gap), LOWEST, CONFIGS - 1)])
        cv = rng.uniform(*CV, CONFIGS)
        sigma = np.sqrt(np.log(1 + cv**2))
        noise = rng.standard_normal((MAX_ROUNDS, CONFIGS)) * sigma - sigma**2 / 2
        drift = rng.standard_normal((MAX_ROUNDS, 1)) * 0.05
        order = rng.permutation(CONFIGS)  # the best is not always the first config
        values = (means * np.exp(noise + drift))[:, order]
        true_means = means[order]
        result = run(names, values, settings)
        survivors = [names.index(w.config) for w in result.winners]
        kept += any(true_means[i] >= 1 - settings.margin for i in survivors)
        assert result.trials <= result.grid_trials()
        trials += result.trials
        grid += result.grid_trials()
    assert kept / RACES >= KEPT
    assert trials < grid
    assert trials / grid < 0.75  # about 0.4-0.5 in practice


def aa_false_drops(configs: int, races: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    names = [f"c{i}" for i in range(configs)]
    settings = RaceSettings(max_rounds=MAX_ROUNDS)
    dropped = 0
    for _ in range(races):
        values = noisy(rng, [1.0] * configs, rng.uniform(*CV), MAX_ROUNDS)
        result = run(names, values, settings)
        dropped += bool(result.dropped)
    return dropped / races


@pytest.mark.parametrize(("configs", "races"), [(12, 1000), (3, 500), (2, 1000)])
def test_equal_configs_are_dropped_no_more_often_than_alpha(configs: int, races: int) -> None:
    """A/A: with every config alike, a race drops any config at all in at most alpha
    (5%) of races: the looks share alpha, the Friedman gate (the paired test with two)
    keeps the post-hoc comparisons from firing on noise."""
    assert aa_false_drops(configs, races, seed=configs) <= RaceSettings().alpha


def test_a_metric_that_can_be_zero_is_compared_on_its_own_scale() -> None:
    rng = np.random.default_rng(7)
    values = np.column_stack(
        [rng.normal(10.0, 0.5, 20), rng.normal(10.1, 0.5, 20), rng.normal(0.0, 0.5, 20)]
    )
    result = run(["a", "b", "zero"], values, RaceSettings())
    assert "zero" in {d.config for d in result.dropped}
    b = next(w for w in result.winners if w.config != result.leader)
    assert b.ratio == pytest.approx(1.0, abs=0.05)


def look_levels_not_the_code(text: str) -> list[tuple[str, int]]:
    """The (configs, max rounds) of docs/tune.md's table of levels per look (`text`) that
    race_bounds.look_level does not give, to the printed digits; a table of fewer than four
    rows is wrong whole."""
    import re

    from fsbench.execute.race.bounds import look_level

    rows = re.findall(r"^\| (\d+) \| ([\d.]+)% \| ([\d.]+)% \|$", text, re.MULTILINE)
    wrong = [] if len(rows) >= 4 else [("rows", len(rows))]
    for k, at_10, at_20 in rows:
        for printed, rounds in ((at_10, 10), (at_20, 20)):
            digits = len(printed.split(".")[1]) if "." in printed else 0
            if round(100 * look_level(int(k), 3, rounds, 0.05), digits) != float(printed):
                wrong.append((k, rounds))
    return wrong


def test_the_guides_table_of_look_levels_is_the_code() -> None:
    """docs/tune.md's levels per look are what race_bounds.look_level gives (to the
    printed digits), so the guide cannot drift from the boundary the race uses."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "tune.md").read_text()
    assert look_levels_not_the_code(text) == []


def test_conover_against_the_best_is_bonferroni_over_the_others() -> None:
    """Conover's comparisons with the best, against the textbook formula written out here
    (Conover 1999, 5.8: t on rank sums with the pooled rank variance, (b-1)(k-1) df),
    one-sided, times the k-1 comparisons: the race and its counted boundary
    (race_bounds) share this one implementation, so neither can lose the factor alone."""
    from scipy.stats import rankdata, t

    from fsbench.execute.race.checks import conover_vs_best, conover_vs_best_many, ranks_within

    rng = np.random.default_rng(7)
    for _ in range(20):
        b, k = int(rng.integers(3, 9)), int(rng.integers(3, 7))
        scores = rng.normal(size=(b, k)) + np.linspace(0, 1, k)
        ranks = np.array([rankdata(row) for row in scores])
        sums = ranks.sum(axis=0)
        top = int(np.argmax(sums))
        var = 2 * (b * (ranks**2).sum() - (sums**2).sum()) / ((b - 1) * (k - 1))
        expected = np.minimum(
            1.0, (k - 1) * t.sf((sums[top] - sums) / np.sqrt(var), (b - 1) * (k - 1))
        )
        expected[top] = 1.0
        mean_ranks, p, best = conover_vs_best(scores)
        assert best == top and p == pytest.approx(expected, rel=1e-9)
        many, tops = conover_vs_best_many(ranks_within(scores)[None])
        assert tops[0] == top and many[0] == pytest.approx(expected, rel=1e-9)


def test_the_runner_up_is_the_second_left_or_the_best_of_the_last_dropped() -> None:
    """What `fsbench tune --explain` explains the winner against."""
    rng = np.random.default_rng(2)
    pair = run(["a", "b"], noisy(rng, [100.0, 80.0], 0.05, 20), RaceSettings())
    assert (pair.leader, pair.runner_up) == ("a", "b")  # dropped by the paired test
    rng = np.random.default_rng(3)
    names = ["a", "b", "c", "d"]
    tied = run(names, noisy(rng, [1.0, 1.004, 0.6, 0.62], 0.005, 20), RaceSettings())
    assert tied.runner_up == tied.winners[1].config  # equally good: the second left
    # Dropped at one look together: the best of them by mean rank (higher is better).
    late = RaceResult(
        ("a", "b", "c", "d"),
        tied.winners[:1],
        (
            Drop("d", 3, WORSE, FRIEDMAN_TEST, mean_ranks={"b": 2.0, "c": 2.5, "d": 1.0}),
            Drop("b", 5, WORSE, FRIEDMAN_TEST, mean_ranks={"b": 1.5, "c": 2.0}),
            Drop("c", 5, WORSE, FRIEDMAN_TEST, mean_ranks={"b": 1.5, "c": 2.0}),
            Drop("x", 6, UNSUPPORTED, "refused"),
        ),
        ONE_LEFT, 6, 20, (4, 4, 4, 3, 3, 1), "",
    )  # fmt: skip
    assert late.runner_up == "c"
    assert RaceResult(("a",), tied.winners[:1], (), ONE_LEFT, 3, 3, (1,), "").runner_up is None
