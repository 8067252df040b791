"""The bisection's gate on simulated samples: it picks the side the step came from, stays
undecided when the step cannot be told apart from either, and refuses endpoints that do
not differ beyond the noise."""

from __future__ import annotations

import random

from fsbench.analysis import bisect_gate as bg


def sample(mean: float, cv: float, n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.gauss(mean, mean * cv) for _ in range(n)]


GOOD = sample(10.0, 0.03, 8, 1)
BAD = sample(12.0, 0.03, 8, 2)


def test_step_like_bad_is_bad_and_like_good_is_good() -> None:
    for seed in range(20):
        bad = bg.gate(GOOD, BAD, sample(12.0, 0.03, 5, 100 + seed), better="lower", n_max=8)
        good = bg.gate(GOOD, BAD, sample(10.0, 0.03, 5, 200 + seed), better="lower", n_max=8)
        assert bad.verdict == bg.BAD, bad
        assert good.verdict == bg.GOOD, good


def test_direction_does_not_matter() -> None:
    """A throughput that fell (higher is better) bisects like a time that grew."""
    v = bg.gate(BAD, GOOD, sample(12.0, 0.03, 5, 7), better="higher", n_max=8)
    assert v.verdict == bg.GOOD


def test_halfway_step_is_undecided_not_guessed() -> None:
    """A step at the endpoints' midpoint (a partial change) is closer to neither."""
    mid = (sum(GOOD) / len(GOOD) + sum(BAD) / len(BAD)) / 2
    v = bg.gate(GOOD, BAD, sample(mid, 0.03, 8, 3), better="lower", n_max=8)
    assert v.verdict == bg.UNDECIDED
    assert "both" in v.note


def test_drift_does_not_block_a_clear_side() -> None:
    """Endpoints measured when the machine was quiet, the step when it was busier (+30%):
    ordered against both, but far closer to one side: that side, with a note."""
    v = bg.gate(GOOD, BAD, sample(12.0 * 1.3, 0.03, 4, 9), better="lower", n_max=8)
    assert v.verdict == bg.BAD
    v = bg.gate(GOOD, BAD, sample(10.0 * 1.05, 0.01, 4, 9), better="lower", n_max=8)
    assert v.verdict == bg.GOOD


def test_noisy_step_stays_undecided() -> None:
    wrong = 0
    for seed in range(40):
        v = bg.gate(GOOD, BAD, sample(11.0, 0.3, 3, 300 + seed), better="lower", n_max=8)
        wrong += v.verdict != bg.UNDECIDED
    assert wrong <= 4


def test_false_verdicts_are_rare() -> None:
    """A step from the good endpoint's law is almost never called bad."""
    bad_calls = sum(
        bg.gate(GOOD, BAD, sample(10.0, 0.03, n, 400 + s), better="lower", n_max=8).verdict
        == bg.BAD
        for s in range(100)
        for n in (3, 5)
    )
    assert bad_calls == 0


def test_refuses_endpoints_within_noise_in_one_line() -> None:
    r = bg.refusal(
        sample(10.0, 0.05, 5, 11), sample(10.1, 0.05, 5, 12), better="lower", n_max=5, unit="s"
    )
    assert r is not None
    assert "\n" not in r.line
    assert r.line.startswith("refusing to bisect:")
    assert "n=5" in r.line and "detect" in r.line and "CV" in r.line


def test_refuses_a_small_ordered_difference_the_budget_cannot_detect() -> None:
    # Ordered with many endpoint reps, but a step measured 3 times cannot tell 2% at 3% CV.
    good, bad = sample(10.0, 0.03, 60, 21), sample(10.2, 0.03, 60, 22)
    r = bg.refusal(good, bad, better="lower", n_max=3)
    assert r is not None and "below what the noise" in r.line


def test_accepts_a_clear_regression_and_refuses_an_improvement() -> None:
    assert bg.refusal(GOOD, BAD, better="lower", n_max=8) is None
    r = bg.refusal(BAD, GOOD, better="lower", n_max=8)
    assert r is not None and "better one" in r.line
