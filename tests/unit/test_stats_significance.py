from __future__ import annotations

import pytest
from scipy import stats as sp

from fsbench.stats import holm, outliers, rank, ratio_ci, welch


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
    assert outliers([1.0, 1.0, 1.0, 5.0]) == []  # MAD 0: nothing flagged
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
