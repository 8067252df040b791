"""The one calculator of what a p is worth when it is the smallest of several
(analysis/null_law.py), and the designs built on it: a boundary and a calibrated p agree
at every level; the law's statistic, vectorised over draws, is the scalar one the
decisions compute; a design pays only for the looks it planned."""

from __future__ import annotations

import random

import numpy as np
import pytest

from fsbench.analysis import null_law
from fsbench.analysis.design import Design
from fsbench.analysis.lookstats import (
    blocked_anova_from_moments,
    paired_from_moments,
    statistics_from_moments,
)
from fsbench.analysis.null_law import GATE, GATE_WELCH, PAIR, PAIR_WELCH
from fsbench.analysis.pairs import Side, draft, gate_p
from fsbench.analysis.stats import moments, welch, welch_anova_from_moments, welch_from_moments

SEQUENTIAL = Design(True, 3, 10)


def test_the_looks_are_the_rounds_and_a_fixed_design_looks_once() -> None:
    assert SEQUENTIAL.looks(5) == [3, 4, 5] and SEQUENTIAL.looks(12) == list(range(3, 11))
    assert Design().looks(7) == [7]
    # One look of one pair: the smaller p of two tests is worth a little less than
    # either's; many looks cost each of them more.
    one = Design().p_value(PAIR, {5: 0.01}, 5)
    assert 0.01 < one < 0.02
    assert SEQUENTIAL.p_value(PAIR, {5: 0.01}, 5) > 2 * one
    assert 0.9 < SEQUENTIAL.equivalence_level(5) < 0.995
    # The looks a design was planned with, and no others, are paid for.
    assert Design(True, 3, 3).p_value(PAIR, {3: 0.01}, 3) == Design().p_value(PAIR, {3: 0.01}, 3)
    assert Design(True, 3, 4).p_value(PAIR, {3: 0.01}, 3) < SEQUENTIAL.p_value(PAIR, {3: 0.01}, 3)


@pytest.mark.parametrize(
    "kind,looks",
    [
        (PAIR, (3,)),
        (PAIR, (3, 4, 5)),
        (GATE, (3,)),
        (GATE, (3, 4, 5, 6)),
        (PAIR_WELCH, (3,)),
        (PAIR_WELCH, (3, 4, 5)),
        (GATE_WELCH, (3, 4)),
    ],
)
def test_a_calibrated_p_is_at_most_a_level_exactly_below_its_boundary(
    kind: str, looks: tuple[int, ...]
) -> None:
    """At any level, a look's statistic below that look's boundary (the others giving no
    evidence) is exactly a calibrated p at most the level."""
    rng = random.Random(3)
    for _ in range(300):
        level = rng.choice([0.05, 0.01, 0.02 * rng.random() + 0.001])
        bounds = null_law.boundaries(kind, looks, level)
        j = rng.randrange(len(looks))
        if bounds[j] <= 0:
            continue
        observed = bounds[j] * rng.choice([0.5, 0.999, 1.0, 1.001, 2.0])
        per_look = [1.0] * len(looks)
        per_look[j] = observed
        calibrated = null_law.calibrated(kind, looks, per_look)
        assert (calibrated <= level) == (observed < bounds[j]), (level, bounds, observed)


def test_the_vectorised_welch_and_anova_are_the_scalar_ones() -> None:
    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(3, 9))
        x = rng.lognormal(0.0, rng.uniform(0.01, 0.5), size=(3, n)) * rng.uniform(0.5, 2, (3, 1))
        m, v = x.mean(axis=1), x.var(axis=1, ddof=1)
        for i, j in ((0, 1), (0, 2), (1, 2)):
            scalar = welch(list(x[i]), list(x[j]))
            assert scalar is not None
            t, df, p = welch_from_moments(
                m[i : i + 1], v[i : i + 1], n, m[j : j + 1], v[j : j + 1], n
            )
            assert (t[0], df[0], p[0]) == pytest.approx((scalar.t, scalar.df, scalar.p), rel=1e-9)
        one = welch_anova_from_moments(list(m), list(v), [n] * 3)
        many = welch_anova_from_moments(m[None, :], v[None, :], np.full((1, 3), float(n)))
        assert float(many[0]) == pytest.approx(float(one), rel=1e-12)


def _look_moments(logs: np.ndarray, n: int) -> tuple[np.ndarray, ...]:
    """The moments null_law's draws keep, of configs x rounds log values, over n rounds."""
    part = logs[:, :n]
    pairs = [(i, j) for i in range(3) for j in range(i + 1, 3)]
    d = np.stack([part[j] - part[i] for i, j in pairs])
    differences = np.stack([d.mean(axis=1), d.var(axis=1, ddof=1)], axis=1)[None]
    return (
        part.mean(axis=1)[None],
        part.var(axis=1, ddof=1)[None],
        differences,
        np.array([part.mean(axis=0).var(ddof=1)]),
    )


def test_configs_without_shared_rounds_are_judged_by_welchs_law() -> None:
    """Sides of no common rounds (two runs): Welch's t alone, its own law; a one-look
    design's p is Welch's own (as before the rounds)."""
    rng = np.random.default_rng(12)
    design = Design(True, 3, 5)
    for _ in range(20):
        x = rng.lognormal(0.0, 0.1, size=(3, 5))
        sides = [
            Side(f"c{i}", tuple(x[i]), tuple(range(1, 6)), rounds=f"run {i}") for i in range(3)
        ]
        pairs = [draft(a, b, True, design, False, 0.0, "log") for a, b in (sides[:2], sides[1:])]
        assert all(p.law == PAIR_WELCH and len(p.looked[0].tests) == 1 for p in pairs)
        for p in pairs:
            assert p.p == null_law.calibrated(PAIR_WELCH, (3, 4, 5), list(p.per_look.values()))
        one = draft(sides[0], sides[1], True, Design(), False, 0.0, "log")
        assert one.p is not None and one.p == one.looked[0].p


def test_the_laws_statistic_is_the_one_the_decisions_compute() -> None:
    """Draws of three configs over shared rounds (with round shocks): the statistics the
    law computes from moments (lookstats, vectorised over draws) are those pairs.draft and
    pairs.gate_p compute from the same values, look by look and pair by pair."""
    rng = np.random.default_rng(11)
    looks = (3, 4, 5)
    design = Design(True, 3, 5)
    for _ in range(50):
        shocks = rng.normal(0.0, rng.uniform(0, 0.2), size=(1, 5))
        x = np.exp(rng.normal(0.0, 0.1, size=(3, 5)) + shocks)
        logs = np.log(x)
        sides = [Side(f"c{i}", tuple(x[i]), tuple(range(1, 6)), rounds="r") for i in range(3)]
        pairs = [
            draft(a, b, True, design, False, 0.0, "log")
            for k, a in enumerate(sides)
            for b in sides[k + 1 :]
        ]
        gates = []
        for n in looks:
            means, variances, differences, rounds = _look_moments(logs, n)
            stats, gate = statistics_from_moments(means, variances, n, differences, rounds)
            assert gate is not None
            for index, pair in enumerate(pairs):
                assert pair.per_look[n] == pytest.approx(float(stats[0, index]), rel=1e-9)
            gates.append(float(gate[0]))
        found = gate_p(sides, pairs, design, "log")
        assert found == pytest.approx(null_law.calibrated(GATE, looks, gates), rel=1e-12)
        assert moments(list(logs[0]))[1] == pytest.approx(float(logs[0].mean()))


def test_the_blocked_anova_is_statsmodels_two_way_anova() -> None:
    """The rounds-blocked ANOVA from moments against statsmodels' additive two-way OLS
    ANOVA (config + round) on random data sets."""
    pd = pytest.importorskip("pandas")
    smf = pytest.importorskip("statsmodels.formula.api")
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(21)
    for _ in range(30):
        n = int(rng.integers(3, 8))
        x = rng.normal(0, 1, (3, n)) + rng.normal(0, 2, (1, n)) + rng.normal(0, 0.5, (3, 1))
        frame = pd.DataFrame(
            [(f"c{i}", f"r{r}", x[i, r]) for i in range(3) for r in range(n)],
            columns=["config", "round", "y"],
        )
        table = sm.stats.anova_lm(smf.ols("y ~ C(config) + C(round)", frame).fit(), typ=2)
        found = blocked_anova_from_moments(
            x.mean(axis=1), x.var(axis=1, ddof=1), n, x.mean(axis=0).var(ddof=1)
        )
        assert float(found) == pytest.approx(table.loc["C(config)", "PR(>F)"], rel=1e-7)


def test_the_paired_t_is_scipys() -> None:
    from scipy import stats

    rng = np.random.default_rng(22)
    for _ in range(100):
        n = int(rng.integers(2, 10))
        a, b = rng.normal(0, 1, n), rng.normal(0.3, 1, n)
        d = b - a
        _, _, _, p = paired_from_moments(d.mean(), d.var(ddof=1), n)
        assert float(p) == pytest.approx(stats.ttest_rel(b, a).pvalue, rel=1e-9)
