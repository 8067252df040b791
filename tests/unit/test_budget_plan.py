"""The plan said before the counted rounds (analysis/budget.py): what each group's looks
are, and, when the minimum does not fit, by how much and where the projection came from."""

from __future__ import annotations

from fsbench.analysis import budget
from fsbench.analysis.budget import GroupCost


def _costs(round_s: float) -> list[GroupCost]:
    return [
        GroupCost("alloc method=fallocate", 3, 1.0, counts_only=True, warmup_s=0.3),
        GroupCost("fio", 3, round_s, warmup_s=round_s / 3),
    ]


def test_a_budget_with_room_gives_the_timing_group_more_looks_and_says_so() -> None:
    found = budget.plan(_costs(30.0), 400.0, 20.0, 10)
    fio = found.groups[1]
    assert fio.n_max > 3
    assert found.planned_s <= 400.0
    assert any(
        line.startswith(f"  fio (3 configs, 30 s a round): n up to {fio.n_max}")
        for line in found.lines()
    )
    assert not any("over its budget" in line for line in found.lines())


def test_a_minimum_past_the_budget_says_by_how_much_and_that_warm_ups_projected_it() -> None:
    # 25 + (2 * 1 + 0.3) + (3 * 60 + 20) = 227.3
    found = budget.plan(_costs(60.0), 150.0, 25.0, 10, from_warmups=True)
    assert [g.n_max for g in found.groups] == [2, 3]  # the minimum only
    lines = found.lines()
    assert "this run is projected to go over its budget by about 77 s" in lines[-2]
    assert "(--budget 239 would fit them)" in lines[-2]
    assert lines[-1].startswith("  (projected from one warm-up trial a group")


def test_a_projection_from_the_store_does_not_blame_warm_ups() -> None:
    # A projection from earlier trials spends a moment too: what it came from says it.
    found = budget.plan(_costs(60.0), 150.0, 0.02, 10)
    assert "projected to go over" in found.lines()[-1]


def test_a_replan_shares_out_what_the_warm_ups_overstated_and_says_what_changed() -> None:
    # Warm-ups projected fio at 60 s a round: the minimum only. Its counted rounds took
    # 30 s, so after them the budget left buys more looks.
    first = budget.plan(_costs(60.0), 300.0, 25.0, 10, from_warmups=True)
    assert [g.n_max for g in first.groups] == [10, 3]  # what fio could not use
    measured = [g.cost for g in budget.plan(_costs(30.0), 300.0, 25.0, 10).groups]
    spent = 25.0 + (2 * 1.0 + 0.3) + (3 * 30.0 + 10.0)  # 127.3 s: the minimum as it went
    again = budget.replan(first, measured, [2, 3], spent, 10)
    fio = again.groups[1]
    # 172.7 s left: a warm-up trial (10 s) and five rounds of 30 s (160 s).
    assert fio.n_max == 8
    assert again.record().replanned_s == 127.3
    lines = again.lines(first)
    assert lines[0] == "re-plan after the minimum rounds: 127 s spent, 173 s left:"
    assert lines[1].startswith("  fio (3 configs, 30 s a round): n up to 8")
    assert len(lines) == 2  # the count group's looks did not change: not repeated


def test_a_replan_takes_back_looks_the_minimum_overran_and_keeps_the_rest() -> None:
    first = budget.plan(_costs(30.0), 140.0, 25.0, 10)
    assert [g.n_max for g in first.groups] == [10, 3]
    costs = [g.cost for g in first.groups]
    again = budget.replan(first, costs, [2, 3], 139.0, 10)  # 1 s left: no round fits
    assert [g.n_max for g in again.groups] == [2, 3]
    assert again.lines(first) == [
        "re-plan after the minimum rounds: 139 s spent, 1 s left:",
        "  alloc method=fallocate (3 configs, 1 s a round): n = 2 (exact counts)",
    ]
    same = budget.replan(first, costs, [2, 3], 127.3, 10)
    assert same.lines(first) == [
        "re-plan after the minimum rounds: 127 s spent, 13 s left; the looks stay as planned"
    ]


def test_an_instrumented_pass_is_reserved_before_the_looks_are_shared_out() -> None:
    """`run --explain`: three instrumented trials of every cell, each a counted trial's
    cost and the tracers' start, kept from the budget; the looks share out the rest."""
    pass_ = budget.Instrumented(reps=3, tracer_start_s=5.0)
    # alloc: 3 x (1 + 3 x 5) = 48; fio: 3 x (30 + 3 x 5) = 135.
    assert pass_.cost_s(_costs(30.0)) == 183.0
    free = budget.plan(_costs(30.0), 400.0, 20.0, 10)
    kept = budget.plan(_costs(30.0), 400.0, 20.0, 10, instrumented=pass_)
    assert kept.reserved == 183.0 and kept.record().reserved_s == 183.0
    assert kept.planned_s + kept.reserved <= 400.0 < free.planned_s + kept.reserved
    assert kept.groups[1].n_max < free.groups[1].n_max
    assert kept.lines()[0].endswith(", 183 s reserved for the instrumented pass after it")
    # A minimum that fits the budget but not beside the pass says so, the pass included.
    short = budget.plan(_costs(60.0), 300.0, 25.0, 10, instrumented=pass_)
    # 25 + 2.3 + 200 + 3 x (1 + 15) + 3 x (60 + 15) = 500.3: 200.3 over.
    assert "projected to go over its budget by about 200 s" in short.lines()[-1]
    assert budget.BudgetPlan.from_record(kept.record()).reserved == 183.0
