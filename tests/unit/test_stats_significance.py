from __future__ import annotations

import pytest
from scipy import stats as sp

from fsbench.analysis.stats import (
    holm,
    min_detectable,
    order_effect,
    outliers,
    outliers_checked,
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
    # MAD 0: the mean-absolute-deviation fallback (Iglewicz & Hoaglin), the value itself
    # in the mean: a tiny step among equal values is no infinite score.
    assert outliers([100.0, 100.0, 100.0, 100.001]) == []
    assert outliers([1.0, 1.0, 1.0, 1.0, 1.0, 5.0]) == [5]
    assert outliers([1.0, 1.0, 1.0, 1.0, 2.0, 9.0]) == [5]
    assert outliers([1.0, 1.0, 1.0, 1.0]) == []
    # A step of the tool's resolution is no outlier: fragments 1, 1, 1, 2.
    assert outliers([1.0, 1.0, 1.0, 2.0], resolution=1) == []
    assert outliers([1.0, 2.0]) == []
    # Three values are not checked: nothing to say, and the rows say so.
    assert outliers([1.0, 1.0, 50.0]) == [] and not outliers_checked([1.0, 1.0, 50.0])
    assert outliers_checked([1.0, 1.0, 1.0, 50.0])


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


def test_shaffer_is_holm_with_the_hypotheses_that_can_be_true_together() -> None:
    from fsbench.analysis.stats import shaffer

    # Three configs: once two differ, at most one pair is equal: alpha/3, then alpha, alpha.
    assert shaffer([0.01, 0.03, 0.04], 3) == pytest.approx([0.03, 0.03, 0.04])
    assert holm([0.01, 0.03, 0.04]) == pytest.approx([0.03, 0.06, 0.06])
    # Four configs: 6 pairs, at most 3 true together after the first rejection.
    assert shaffer([0.001, 0.01, 0.02, 0.5, 0.6, 0.7], 4) == pytest.approx(
        [0.006, 0.03, 0.06, 1.0, 1.0, 1.0]
    )
    assert shaffer([None, 0.02, None], 3) == [None, 0.06, None]


def test_order_effect_finds_a_round_that_moved_every_config() -> None:
    """Three configs over six rounds: round 3 slowed every config 23% (fs_mark's round 3
    in issue 50); the rounds' test finds it and names the round. Without a shock, or with
    rounds not given, it does not fire."""
    import random

    rng = random.Random(4)
    rounds = [r for r in range(1, 7) for _ in range(3)]
    positions = [1, 2, 3, 2, 3, 1, 3, 1, 2] * 2
    previous = ["a", "b", "c"] * 6
    shocked = [(0.23 if r == 3 else 0.0) + rng.gauss(0, 0.02) for r in rounds]
    mean = sum(shocked) / len(shocked)
    residuals = [x - mean for x in shocked]
    found = order_effect(residuals, positions, previous, 3, rounds)
    assert found.round_p is not None and found.round_p < 1e-6 and found.by_round
    assert found.round_moved == "3" and found.round_shift == pytest.approx(0.19, abs=0.03)
    assert found.p is not None and found.p < 1e-5
    assert order_effect(residuals, positions, previous, 3).round_p is None
    false = 0
    for _ in range(400):
        calm = [rng.gauss(0, 0.02) for _ in rounds]
        p = order_effect(calm, positions, previous, 3, rounds).p
        false += p is not None and p < 0.05
    assert false / 400 <= 0.05 + 3.5 * (0.05 * 0.95 / 400) ** 0.5
