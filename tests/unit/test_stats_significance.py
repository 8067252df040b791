from __future__ import annotations

import pytest
from scipy import stats as sp

from fsbench.stats import (
    holm,
    min_detectable,
    order_effect,
    outliers,
    rank,
    ratio_ci,
    reps_needed,
    welch,
)


def test_welch_matches_scipy() -> None:
    a, b = [10.0, 11.0, 12.0, 10.5], [13.0, 14.5, 13.5, 15.0, 14.0]
    w = welch(a, b)
    ref = sp.ttest_ind(a, b, equal_var=False)
    assert w is not None
    assert w.t == pytest.approx(ref.statistic) and w.p == pytest.approx(ref.pvalue)
    assert welch([1.0], b) is None


def test_welch_constant_groups() -> None:
    same = welch([5.0, 5.0, 5.0], [5.0, 5.0])
    assert same is not None and same.p == 1.0
    diff = welch([5.0, 5.0, 5.0], [6.0, 6.0])
    assert diff is not None and diff.p == 0.0


def test_holm() -> None:
    # Classic example: p = 0.01, 0.04, 0.03 with m = 3 -> 0.03, 0.06, 0.06.
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([None, 0.02]) == [None, 0.02]


def test_outliers_by_modified_z_score() -> None:
    assert outliers([10.0, 10.1, 9.9, 10.05, 30.0]) == [4]
    # MAD 0: the mean-absolute-deviation fallback, each value against the others.
    assert outliers([1.0, 1.0, 1.0, 5.0]) == [3]
    assert outliers([1.0, 1.0, 1.0, 2.0, 9.0]) == [4]
    assert outliers([1.0, 1.0, 1.0, 1.0]) == []
    # A step of the tool's resolution is no outlier: fragments 1, 1, 1, 2.
    assert outliers([1.0, 1.0, 1.0, 2.0], resolution=1) == []
    assert outliers([1.0, 2.0]) == []


def test_rank_calls_only_significant_winners() -> None:
    fast, slow, noisy = [1.0, 1.1, 0.9, 1.0], [2.0, 2.1, 1.9, 2.0], [0.5, 3.0, 1.2, 0.4]
    r = rank([slow, fast], higher_is_better=False)
    assert r is not None and r.best == 1 and r.significant and r.margin == pytest.approx(0.5)
    r = rank([fast, noisy], higher_is_better=False)
    assert r is not None and not r.significant  # "no clear difference"
    r = rank([[100.0, 101.0, 99.0], [50.0, 51.0, 49.0]], higher_is_better=True)
    assert r is not None and r.best == 0 and r.margin == pytest.approx(1.0)
    assert rank([fast], higher_is_better=False) is None


def test_ratio_ci_contains_ratio() -> None:
    ratio, ci = ratio_ci([10.0, 10.5, 9.5], [20.0, 21.0, 19.0])
    assert ratio == pytest.approx(2.0)
    assert ci is not None and ci[0] < 2.0 < ci[1]


def test_min_detectable_difference_matches_the_textbook_formula() -> None:
    # CV 5%, n = 3 per config: (t(0.975, 4) + t(0.80, 4)) * 0.05 * sqrt(2/3)
    assert min_detectable(0.05, 1.0, 3) == pytest.approx((2.776 + 0.941) * 0.05 * 0.8165, 1e-3)
    assert min_detectable(5.0, 100.0, 10) == pytest.approx(min_detectable(0.05, 1.0, 10))
    assert min_detectable(None, 1.0, 3) is None and min_detectable(0.1, 1.0, 1) is None
    # More repetitions see smaller differences.
    assert min_detectable(0.05, 1, 10) < min_detectable(0.05, 1, 5) < min_detectable(0.05, 1, 3)


def test_reps_needed_is_the_first_n_that_detects_it() -> None:
    n = reps_needed(0.05, 0.05)
    assert n is not None
    assert min_detectable(0.05, 1.0, n) <= 0.05 < min_detectable(0.05, 1.0, n - 1)
    assert reps_needed(0.0, 0.05) == 2
    assert reps_needed(None, 0.05) is None
    assert reps_needed(2.0, 0.01) is None  # beyond any sane number of repetitions


def test_order_effect_finds_a_place_trend_and_a_carry_over() -> None:
    import random

    rng = random.Random(2)
    positions = [1, 2, 3] * 6
    previous = ["a", "b", "c"] * 6
    flat = order_effect([rng.gauss(0, 0.02) for _ in positions], positions, previous)
    assert flat.p is not None and flat.p > 0.01
    trend = order_effect(
        [0.05 * (p - 2) + rng.gauss(0, 0.01) for p in positions], positions, previous
    )
    assert trend.position_p is not None and trend.position_p < 0.001
    assert trend.position_change == pytest.approx(0.10, abs=0.03)
    carried = order_effect(
        [(0.1 if prev == "a" else 0.0) + rng.gauss(0, 0.01) for prev in previous],
        [1, 2, 3, 3, 1, 2] * 3,
        previous,
    )
    assert carried.carryover_p is not None and carried.carryover_p < 0.001
    assert carried.size == pytest.approx(0.1, abs=0.02)
    assert order_effect([0.0] * 4, [1, 2, 1, 2], ["a", "b", "a", "b"]).p is None  # too few


def test_a_difference_within_the_resolution_is_no_winner() -> None:
    # postmark prints whole seconds: 3 s every time against 4 s every time.
    r = rank([[3.0, 3.0, 3.0], [4.0, 4.0, 4.0]], higher_is_better=False, resolution=1.0)
    assert r is not None and not r.significant and r.within_resolution
    r = rank([[3.0, 3.0, 3.0], [5.0, 5.0, 5.0]], higher_is_better=False, resolution=1.0)
    assert r is not None and r.significant
    r = rank([[3.0, 3.0, 3.0], [4.0, 4.0, 4.0]], higher_is_better=False)
    assert r is not None and r.significant  # no resolution declared: a real difference


def test_the_p_shown_is_the_one_that_decided() -> None:
    # Best beats the runner-up clearly but not a noisy third: no winner, and the p shown
    # is the one against the third.
    r = rank([[1.0, 1.01, 0.99], [1.2, 1.21, 1.19], [0.8, 1.9, 1.5]], higher_is_better=False)
    assert r is not None and not r.significant
    assert r.decisive == 2 and r.p_decisive is not None and r.p_decisive >= 0.05
    assert r.p_adjusted is not None and r.p_adjusted < 0.05
