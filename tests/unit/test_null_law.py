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
from fsbench.analysis.null_law import GATE, PAIR
from fsbench.analysis.pairs import Side, draft, gate_p
from fsbench.analysis.stats import moments, welch, welch_anova_from_moments, welch_from_moments

SEQUENTIAL = Design(True, 3, 10)


def test_the_looks_are_the_rounds_and_a_fixed_design_looks_once() -> None:
    assert SEQUENTIAL.looks(5) == [3, 4, 5] and SEQUENTIAL.looks(12) == list(range(3, 11))
    assert Design().looks(7) == [7]
    # One look of one pair spends all of alpha; many looks cost each of them some.
    assert Design().p_value(PAIR, 0.01, 5) == 0.01
    assert SEQUENTIAL.p_value(PAIR, 0.01, 5) > 0.01
    assert 0.9 < SEQUENTIAL.equivalence_level(5) < 0.99
    # The looks a design was planned with, and no others, are paid for.
    assert Design(True, 3, 3).p_value(PAIR, 0.01, 3) == 0.01
    assert Design(True, 3, 4).p_value(PAIR, 0.01, 3) < SEQUENTIAL.p_value(PAIR, 0.01, 3)


@pytest.mark.parametrize("kind,looks", [(PAIR, (3, 4, 5)), (GATE, (3,)), (GATE, (3, 4, 5, 6))])
def test_a_calibrated_p_is_at_most_a_level_exactly_below_its_boundary(
    kind: str, looks: tuple[int, ...]
) -> None:
    rng = random.Random(3)
    for _ in range(300):
        level = rng.choice([0.05, 0.01, 0.02 * rng.random() + 0.001])
        boundary = null_law.threshold(kind, looks, level)
        observed = boundary * rng.choice([0.5, 0.999, 1.0, 1.001, 2.0])
        calibrated = null_law.calibrated(kind, looks, observed)
        assert (calibrated <= level) == (observed < boundary), (level, boundary, observed)


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


def test_the_laws_statistic_is_the_one_the_decisions_compute() -> None:
    """Draws of three configs: the gate statistic of the law's sample (vectorised over
    draws) is the one pairs.gate_p computes from the same values, look by look."""
    rng = np.random.default_rng(11)
    looks = (3, 4, 5)
    design = Design(True, 3, 5)
    for _ in range(50):
        x = rng.lognormal(0.0, 0.1, size=(3, 5))
        logs = np.log(x)
        smallest = np.ones(1)
        for n in looks:
            part = logs[None, :, :n]
            means, variances = part.mean(axis=2), part.var(axis=2, ddof=1)
            smallest = np.minimum(smallest, null_law.look_statistic(GATE, means, variances, n))
        sides = [Side(f"c{i}", tuple(x[i]), tuple(range(1, 6))) for i in range(3)]
        pairs = [
            draft(a, b, True, design, False, 0.0, "log")
            for k, a in enumerate(sides)
            for b in sides[k + 1 :]
        ]
        found = gate_p(sides, pairs, design, "log")
        assert found == pytest.approx(
            null_law.calibrated(GATE, looks, float(smallest[0])), rel=1e-12
        )
        assert moments(list(logs[0]))[1] == pytest.approx(float(logs[0].mean()))
