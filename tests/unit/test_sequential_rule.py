"""The sequential rule, proven by simulation: the repetition loop looks after every round
and stops a comparison once every pair is ordered or equivalent. Looking that often must
not make false orders likelier than the 5% a single look allows, must keep nearly the
power of a fixed design at the same maximum n, and must save repetitions where the
answer is plain. The loop's own rule (decisions.decide, `complete`) is what runs here."""

from __future__ import annotations

import random
from collections.abc import Sequence

from fsbench.analysis.decisions import Decision, Side, decide
from fsbench.analysis.design import ALPHA, Design
from fsbench.analysis.family import control_run
from fsbench.analysis.null_law import PAIR

N_MAX = 10
CV = 0.05
SEQUENTIAL = Design(True, 3, N_MAX)


def _draws(rng: random.Random, means: Sequence[float]) -> list[list[float]]:
    return [[rng.gauss(m, CV * m) for _ in range(N_MAX)] for m in means]


def _sides(values: list[list[float]], n: int) -> list[Side]:
    return [Side(f"c{i}", tuple(v[:n]), tuple(range(1, n + 1))) for i, v in enumerate(values)]


def run_to_decision(values: list[list[float]], design: Design = SEQUENTIAL) -> tuple[Decision, int]:
    """What the loop does with one comparison group: a look after every round from n_min,
    stop when every pair is decided or at the maximum."""
    n = design.n_min
    while True:
        found = decide(_sides(values, n), better="higher", unit="s", design=design, explain=False)
        assert found is not None
        if found.complete or n == N_MAX:
            return found, n
        n += 1


def test_looking_after_every_round_keeps_false_orders_at_5_percent() -> None:
    rng = random.Random(20261125)
    runs = 10_000
    false_orders = sum(
        run_to_decision(_draws(rng, (100.0, 100.0)))[0].kind == "order" for _ in range(runs)
    )
    assert false_orders / runs <= ALPHA, false_orders


def test_an_aa_run_of_twenty_comparisons_owes_no_false_order_to_their_number() -> None:
    rng = random.Random(7)
    runs = 1_000
    with_any = 0
    for _ in range(runs):
        drafts = []
        for k in range(20):
            decision, _ = run_to_decision(_draws(rng, (100.0, 100.0)))
            drafts.append(decision.__class__(**{**decision.__dict__, "key": (str(k),)}))
        controlled = control_run(drafts)
        with_any += any(d.kind == "order" for d in controlled)
    assert with_any / runs <= ALPHA, with_any


def test_a_true_ten_percent_difference_is_found_with_fewer_repetitions() -> None:
    rng = random.Random(11)
    runs = 10_000
    found = 0
    reps = 0
    fixed_found = 0
    for _ in range(runs):
        values = _draws(rng, (100.0, 110.0))
        decision, n = run_to_decision(values)
        found += decision.kind == "order" and decision.best == "c1"
        reps += n
        fixed = decide(_sides(values, N_MAX), better="higher", unit="s", design=Design())
        assert fixed is not None
        fixed_found += fixed.kind == "order" and fixed.best == "c1"
    power, fixed_power = found / runs, fixed_found / runs
    assert power >= 0.9 * fixed_power, (power, fixed_power)
    assert reps / runs <= 0.7 * N_MAX, reps / runs


def test_the_looks_are_the_rounds_and_a_fixed_design_looks_once() -> None:
    assert SEQUENTIAL.looks(5) == [3, 4, 5] and SEQUENTIAL.looks(12) == list(range(3, 11))
    assert Design().looks(7) == [7]
    # One look spends all of alpha; many looks cost each of them some.
    assert Design().p_value(PAIR, 0.01, 5) == 0.01
    assert SEQUENTIAL.p_value(PAIR, 0.01, 5) > 0.01
    assert 0.9 < SEQUENTIAL.equivalence_level(5) < 0.99
    # The looks a design was planned with, and no others, are paid for.
    assert Design(True, 3, 3).p_value(PAIR, 0.01, 3) == 0.01
    assert Design(True, 3, 4).p_value(PAIR, 0.01, 3) < SEQUENTIAL.p_value(PAIR, 0.01, 3)
