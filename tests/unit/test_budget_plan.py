"""The plan said before the counted rounds (analysis/budget.py): what each group's looks
are, and, when the minimum does not fit, by how much and where the projection came from."""

from __future__ import annotations

from dataclasses import replace

import pytest

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
    found = budget.plan(_costs(60.0), 150.0, 25.0, 10, warmed=6)
    assert [g.n_max for g in found.groups] == [2, 3]  # the minimum only
    lines = found.lines()
    assert "this run is projected to go over its budget by about 77 s" in lines[-2]
    assert "(--budget 239 would fit them)" in lines[-2]
    assert lines[-1].startswith("  (projected in part from warm-up trials")
    # Every warm-up trial it spends: the projection's six and one per group, 25.3 + 20 s.
    assert lines[0] == (
        "plan: budget 150 s, 8 warm-up trials (45 s, 6 of them run for the projection), "
        "227 s planned"
    )
    assert found.record().warmup_trials == 8 and found.record().projection_warmups == 6


def test_a_projection_from_the_store_does_not_blame_warm_ups() -> None:
    # A projection from earlier trials spends a moment too: what it came from says it.
    found = budget.plan(_costs(60.0), 150.0, 0.02, 10)
    assert "projected to go over" in found.lines()[-1]
    assert found.lines()[0].startswith("plan: budget 150 s, 2 warm-up trials (20 s), ")


def test_the_plan_counts_a_warm_up_before_each_group_s_extra_rounds() -> None:
    """A group given looks past its minimum is taken up again after other work, behind a
    warm-up trial of its own: the plan counts it, in trials and seconds."""
    found = budget.plan(_costs(30.0), 400.0, 0.0, 10)
    assert [g.n_max > g.n_min for g in found.groups] == [True, True]
    assert [g.warmups for g in found.groups] == [2, 2]
    assert found.warmups == 4 and found.warmups_s == pytest.approx(2 * 0.3 + 2 * 10.0)
    assert "4 warm-up trials (21 s)" in found.lines()[0]
    # Without warm-ups (a plan with warmup = 0: no warm-up cost), none are counted.
    bare = [GroupCost("fio", 3, 30.0)]
    assert budget.plan(bare, 400.0, 0.0, 10).warmups == 0


def test_a_replan_shares_out_what_the_warm_ups_overstated_and_says_what_changed() -> None:
    # Warm-ups projected fio at 60 s a round: the minimum only. Its counted rounds took
    # 30 s, so after them the budget left buys more looks.
    first = budget.plan(_costs(60.0), 300.0, 25.0, 10, warmed=6)
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


def _replanned(left: float, n_max: int = 5) -> budget.BudgetPlan:
    """Two timing groups after their minimum (n = 3, 60 s spent), `left` seconds of the
    budget to go, each given looks up to `n_max` by the re-plan."""
    groups = tuple(budget.GroupPlan(GroupCost(name, 3, 10.0), n_max) for name in ("fs_mark", "fio"))
    return budget.BudgetPlan(60.0 + left, 0.0, groups, replanned_at=60.0)


def test_looks_a_settled_group_will_not_spend_go_to_an_open_group_that_needs_them() -> None:
    """fs_mark was answered at its minimum: the two rounds the re-plan gave it will not be
    spent. fio's open pair would settle at n = 6, past its looks: it gets them."""
    replanned = _replanned(40.0)
    raised = budget.raise_by_need(replanned, [3, 3], {1: [6]})
    assert [g.n_max for g in raised.groups] == [5, 6]
    assert raised.groups[1].wanted == 6 and raised.record().groups[1].wanted == 6
    assert "wanted" not in raised.record().groups[0].model_fields_set
    assert budget.raised_lines(replanned, raised) == [
        "looks raised for open pairs that more rounds would settle, from the time the "
        "groups already answered will not spend:",
        "  fio (3 configs, 10 s a round): n up to 6 (looks at 3-6), raised: its open pairs "
        "would settle by then at the noise measured; differences of about 12% at CV 5%, "
        "25% at CV 10% or more",
    ]
    # Kept with the run and read back as it was.
    again = budget.GroupPlan.from_record(raised.record().groups[1])
    assert again == raised.groups[1]


def test_looks_are_raised_only_where_they_fit_and_never_lowered() -> None:
    # Both open: fs_mark settles within its looks (n = 4: one round, 10 s), fio would need
    # n = 9 (four rounds past its looks, 40 s) but only 30 s are left after fs_mark's.
    replanned = _replanned(40.0)
    kept = budget.raise_by_need(replanned, [3, 3], {0: [4], 1: [9]})
    assert [g.n_max for g in kept.groups] == [5, 5]
    assert budget.raised_lines(replanned, kept) == []
    # A need below the looks given lowers nothing; without a budget nothing is raised.
    assert budget.raise_by_need(replanned, [3, 3], {1: [4]}) == replanned
    unbounded = replace(replanned, budget=None)
    assert budget.raise_by_need(unbounded, [3, 3], {1: [9]}) == unbounded


def test_the_raise_that_settles_the_most_pairs_a_second_goes_first() -> None:
    # fio's three open pairs: one settles at n = 6 (three rounds past its minimum: 30 s),
    # two more at n = 9 (30 s past that). With 50 s the first is bought and the rest does
    # not fit; with 60 s, both.
    assert budget.raise_by_need(_replanned(50.0), [3, 3], {1: [6, 9, 9]}).groups[1].n_max == 6
    assert budget.raise_by_need(_replanned(60.0), [3, 3], {1: [6, 9, 9]}).groups[1].n_max == 9
    # Two open groups, room for one raise: the one settling more pairs a second wins
    # (fio's two for three rounds, not fs_mark's one for four).
    both = budget.raise_by_need(_replanned(40.0), [3, 3], {0: [7], 1: [6, 6]})
    assert [g.n_max for g in both.groups] == [5, 6]


def test_a_run_over_its_budget_after_a_raise_names_no_plan_beyond_the_budget() -> None:
    """A raised plan still counts the answered groups' unused looks; the reason a run
    went over says what its rounds were planned to spend, which is within the budget."""
    from fsbench.execute.decide import _over_why

    raised = budget.raise_by_need(_replanned(40.0), [3, 3], {1: [7]})
    assert raised.planned_s > raised.counted_budget  # fs_mark's two unused looks and fio's 7
    assert _over_why(raised, 130.0) == (
        "rounds took longer than projected (130 s spent against 100 s planned)"
    )
