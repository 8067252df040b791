"""The benches' own arithmetic that their committed verdicts rest on: the fidelity benches'
paired equivalence, and engine_vs_filebench's re-count of old engine trials to their
deadline (docs/engine.md quotes both)."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from engine_vs_filebench import recount_at_deadline  # noqa: E402
from fio_fidelity import equivalence, unpaired  # noqa: E402


def test_pairing_by_rep_cancels_the_machines_drift() -> None:
    # the machine slows down by a third over the run; within a rep fsbench is 1% ahead
    hand = [1000.0 * (1 - 0.03 * i) for i in range(12)]
    fsb = [h * (1.01 if i % 2 else 1.005) for i, h in enumerate(hand)]
    word, ratio, (low, high) = equivalence(fsb, hand)
    assert word.startswith("EQUIVALENT") and 1.005 < ratio < 1.01 and low > 0.97
    # the ratio of the means keeps the drift as noise: not shown equivalent
    u_word, _, (u_low, u_high) = unpaired(fsb, hand)
    assert not u_word.startswith("EQUIVALENT") and u_high - u_low > high - low


def test_a_paired_difference_beyond_the_bound_is_not_equivalent() -> None:
    hand = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1000.0]
    fsb = [h * r for h, r in zip(hand, [1.05, 1.06, 1.05, 1.07, 1.06, 1.05], strict=True)]
    word, ratio, (low, _) = equivalence(fsb, hand)
    assert word == "DIFFERENT" and low > 1.03 and ratio > 1.05


def test_an_engine_trial_past_its_deadline_is_recounted_to_it() -> None:
    # 64 threads, 10 s nominal, the phase ran to 10.5 s: 1,050,000 ops counted
    old = {"tool": "engine", "threads": 64, "seconds": 10, "ops": 1_050_000}
    old["ops_per_s"] = old["ops"] / 10.5
    new = recount_at_deadline(old)
    assert new["ops"] == 1_050_000 - 64
    assert new["ops_per_s"] == (1_050_000 - 64) / 10
    assert new["ops_per_s_as_run"] == old["ops_per_s"]
    assert abs(new["measured_s_as_run"] - 10.5) < 1e-9


def test_trials_on_the_nominal_phase_and_filebench_trials_are_left_alone() -> None:
    exact = {"tool": "engine", "threads": 16, "seconds": 10, "ops": 500, "ops_per_s": 50.0}
    assert recount_at_deadline(exact) is exact
    fb = {"tool": "filebench", "threads": 16, "seconds": 10, "ops": 500, "ops_per_s": 40.0}
    assert recount_at_deadline(fb) is fb
    failed = {"tool": "engine", "threads": 16, "error": "boom"}
    assert recount_at_deadline(failed) is failed
