"""Short series, spikes and the gate of `fsbench history` (docs/history.md): the eight
nights of issue 50 give one change between runs 4 and 5 naming the mount option, eight
quiet nights none; a series too short says so; the largest t's p against Student's exact
p and the permutation test's against an exact enumeration; each level and Bonferroni step
held by a series that sits between the level and its mutation; seeded simulations of
bench/history_short.py with fewer draws."""

from __future__ import annotations

import itertools
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from fsbench.analysis import changepoints, history, history_gate
from tests.helpers import fsbench
from tests.history_runs import RunSpec, in_memory, stored

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import history_short as hs  # noqa: E402

# What the kernel reported for the nights' mounts (a real run of `fsbench run --fs
# ext4:label=nightly` and `--fs ext4:mount=data=journal:label=nightly`, 2026-12-06).
DEFAULTS = "['rw', 'relatime']"
JOURNAL = "['rw', 'relatime', 'nodioread_nolock', 'nodelalloc', 'data=journal']"


def eight_nights(changed: bool) -> list[RunSpec]:
    return [
        RunSpec(m, mount="data=journal", effective=JOURNAL)
        if changed and i >= 4
        else RunSpec(m if changed else hs.EIGHT_NIGHTS[i % 4], effective=DEFAULTS)
        for i, m in enumerate(hs.EIGHT_NIGHTS)
    ]


def test_eight_nights_find_the_data_journal_change_between_runs_4_and_5(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    stored(db, eight_nights(changed=True), seed=1)
    res = fsbench("history", "--db", str(db), "--tag", "nightly", "-f", "json")
    assert res.returncode == 0, res.stderr
    (series,) = json.loads(res.stdout)["series"]
    (change,) = series["changes"]
    assert (change["before_run"]["run"], change["after_run"]["run"]) == (4, 5)
    assert change["method"] == "largest-t" and change["p"] <= changepoints.ALPHA
    assert change["direction"] == "worse" and change["ratio"] == pytest.approx(0.5, abs=0.05)
    changed = {c["what"]: (c["before"], c["after"]) for c in change["coincident"]}
    assert changed == {
        "mount options": ("", "data=journal"),
        "mount effective": (DEFAULTS, JOURNAL),
    }
    table = fsbench("history", "--db", str(db), "--tag", "nightly").stdout
    assert "#1 worse at point 5" in table and "mount options: - -> data=journal" in table


def test_eight_quiet_nights_find_no_change_and_say_what_they_could_see(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    stored(db, eight_nights(changed=False), seed=1)
    res = fsbench("history", "--db", str(db), "-f", "json")
    (series,) = json.loads(res.stdout)["series"]
    assert series["changes"] == [] and series["sight"]["testable"]
    table = fsbench("history", "--db", str(db)).stdout
    runs = series["sight"]["step_runs"]
    said = f"no change in 8 runs; the shortest series that finds a 20% step at this noise: {runs}"
    assert said in " ".join(table.split())


def test_a_series_too_short_to_test_says_so() -> None:
    (series,) = history.build(in_memory([RunSpec(1000.0)] * 5, seed=1))
    assert series.sight is not None and not series.sight.testable
    from fsbench.reports.history import sight_lines

    assert sight_lines(series) == ("too short to test: 5 runs; a change needs 6 (3 on each side)",)


def test_the_runs_a_step_needs_grow_with_the_noise() -> None:
    found = [history.step_runs(noise) for noise in (0.01, 0.08, 0.12, 1.0)]
    assert found[0] == changepoints.FEWEST and found[0] < found[1] < found[2]
    assert found[3] is None
    # At the noise found, the step's t reaches the critical value; a run fewer, it does not.
    n = found[1]
    assert n is not None
    shift = abs(math.log(1 - history.STEP))

    def t(k: int) -> float:
        return shift / (0.08 * math.sqrt(1 / (k // 2) + 1 / (k - k // 2)))

    assert t(n) >= changepoints.critical_t(min(n, changepoints.SHORT))
    assert t(n - 1) < changepoints.critical_t(min(n - 1, changepoints.SHORT))


def test_the_largest_t_of_six_runs_is_students_exact_p() -> None:
    """Six runs have one split (3 | 3): the largest t is Student's t, its p Student's."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        x = rng.standard_normal(6) + np.r_[0, 0, 0, 1, 1, 1] * rng.uniform(0, 4)
        tau, p = changepoints.largest_t(x)
        exact = stats.ttest_ind(x[:3], x[3:]).pvalue
        err = 4 * math.sqrt(exact * (1 - exact) / changepoints.NULL_DRAWS) + 2e-5
        assert tau == 3 and abs(p - exact) <= err, (p, exact)


def test_the_permutation_p_agrees_with_an_exact_enumeration() -> None:
    """E-divisive's p over shuffles against the share of all 7! orders that split as
    well as the observed one."""
    x = np.asarray([1.0, 1.2, 0.9, 1.1, 1.9, 1.6, 2.2])
    _, q = changepoints._energy(x)
    orders = [changepoints._energy(x[list(o)])[1] for o in itertools.permutations(range(7))]
    exact = float(np.mean(np.asarray(orders) >= q - changepoints.TIE * abs(q)))
    shuffles = 4000
    _, p = changepoints.permuted(x, np.random.default_rng(1), shuffles=shuffles)
    assert abs(p - exact) <= 4 * math.sqrt(exact * (1 - exact) / shuffles) + 1 / shuffles
    assert 0.01 < exact < 0.2  # a p that says something about the agreement


def _split_p_between(lo: float, hi: float) -> list[float]:
    """A 10-run series whose largest t's p lies between lo and hi."""
    for shift in np.linspace(0.5, 3.0, 400):
        x = [0.1, -0.3, 0.4, -0.2, 0.0, shift + 0.2, shift - 0.4, shift + 0.1, shift, shift - 0.1]
        if lo < changepoints.largest_t(np.asarray(x))[1] < hi:
            return x
    raise AssertionError("no such series")


def test_the_split_is_held_at_its_level() -> None:
    """A series at p between ALPHA and 3 x ALPHA is no change (a level of 0.03 would call
    it); one below ALPHA is."""
    assert changepoints.e_divisive(_split_p_between(0.012, 0.025)) == []
    (found,) = changepoints.e_divisive(_split_p_between(0.001, 0.008))
    assert found.method == "largest-t"


def _newest(block_p: float) -> list[float]:
    """Twelve runs whose last two each sit at two-sided prediction p `block_p`."""
    before = [0.1, -0.3, 0.4, -0.2, 0.0, 0.3, -0.1, 0.2, -0.4, 0.0]
    m, mean, sd = len(before), float(np.mean(before)), float(np.std(before, ddof=1))
    off = stats.t.isf(block_p / 2, m - 1) * sd * math.sqrt(1 + 1 / m)
    return [*before, mean - off, mean - off]


def test_the_newest_runs_are_held_at_their_level_with_bonferroni() -> None:
    """Blocks of 2..TAIL runs: 3 tried, each block's p the largest of its runs'. A block
    at p = 0.005 is 0.015 after Bonferroni: no change (without the Bonferroni step, or at
    a level of 0.03, it would be one); at 0.002 it is 0.006: a change, p reported x 3."""
    blocks = changepoints.TAIL - changepoints.CONFIRM + 1
    assert blocks == 3
    assert changepoints.newest(_newest(0.005)) is None
    found = changepoints.newest(_newest(0.002))
    assert found is not None and found.at == 10
    assert found.p == pytest.approx(0.002 * blocks, rel=1e-6)


def test_one_run_alone_is_no_change_and_a_second_confirms_it() -> None:
    flat = [0.1, -0.3, 0.4, -0.2, 0.0, 0.3, -0.1, 0.2, -0.4, 0.0]
    assert changepoints.newest([*flat, -5.0]) is None
    assert changepoints.pending([*flat, -5.0]) is not None  # said: a next run would confirm
    assert changepoints.newest([*flat, -5.0, 0.1]) is None  # a spike, then back: none
    assert changepoints.newest([*flat, -5.0, -5.1]) is not None


def _series(p_split: float, runs: int = 10) -> history.Series:
    """A series whose newest runs start a change for the worse, found by the largest t."""
    x = _split_p_between(p_split / 3, p_split)
    specs = [RunSpec(1000 * math.exp(-v / 20)) for v in x]
    (s,) = history.build(in_memory(specs, seed=1, cv=1e-4))
    return s


def test_the_gate_holds_each_series_at_its_level_over_the_series_checked() -> None:
    s = _series(0.008)
    (change,) = s.changes
    assert change.index == 5 and change.worse
    quiet = history.build(in_memory([RunSpec(1000.0)] * 10, seed=2))
    # Alone, the gate checks one series: 0.008 < 0.01 fails it. Among 57, the level is
    # 0.01 / 57 and the same change passes.
    (alarm,) = history_gate.regressions([s], newer_than=s.points[4].created_at)
    assert alarm.checked == 1 and alarm.p == change.p
    assert history_gate.regressions([s, *quiet * 56], newer_than=s.points[4].created_at) == []


@pytest.mark.slow
@pytest.mark.parametrize("scenario", [s for s in hs.SHORT if s.direction != "report"],
                         ids=lambda s: s.name)  # fmt: skip
def test_the_short_series_claims_hold_on_seeded_series(scenario: hs.Scenario) -> None:
    found = hs.measure(scenario, 150, first_seed=20_000)
    rate = found["rate"]
    assert isinstance(rate, float)
    assert rate <= scenario.bound if scenario.direction == "at most" else rate >= scenario.bound


def test_a_level_of_three_times_alpha_shows_in_the_false_alarms() -> None:
    """A/A on 10 runs through the split alone, 3,000 normal series: at ALPHA = 0.01 about
    30 changes (sd 5.5); 0.03 would give about 90."""
    rng = np.random.default_rng(3)
    found = sum(bool(changepoints.e_divisive(rng.standard_normal(10))) for _ in range(3000))
    assert 10 <= found <= 50
