"""A grid run's design is typed (store/griddesign.py): the plan writes it and reads it back
for a resumed run, the store keeps the record as fsbench wrote it before it was typed, and
an older store's design reads forward (a key it lacked takes its default, one a later
fsbench added is kept)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from fsbench.analysis import budget
from fsbench.analysis.budget import BudgetPlan, GroupCost
from fsbench.reports.tables import budget_line
from fsbench.store import runkinds
from fsbench.store.griddesign import GridDesign
from fsbench.store.results import Store
from fsbench.store.runkinds import GridFacts

DATA = Path(__file__).resolve().parents[1] / "data" / "stores"


def _costs() -> list[GroupCost]:
    return [
        GroupCost("alloc method=fallocate", 3, 1.0, counts_only=True, warmup_s=0.3),
        GroupCost("fio", 3, 30.0, noise=0.04, warmup_s=10.0),
    ]


def test_a_plan_round_trips_through_its_record() -> None:
    first = budget.plan(_costs(), 300.0, 25.0, 10)
    again = budget.replan(first, list(_costs()), [2, 3], 127.3, 10)
    for plan in (first, again):
        kept = GridDesign.model_validate_json(plan.record().model_dump_json(exclude_unset=True))
        assert BudgetPlan.from_record(kept) == plan
    assert first.record().replanned_s is None and again.record().replanned_s == 127.3
    # Written as before it was typed: a first plan has no replanned_s key at all.
    assert "replanned_s" not in first.record().model_dump(exclude_unset=True)


def test_a_schema_8_design_reads_forward_and_is_kept_as_stored(tmp_path: Path) -> None:
    shutil.copyfile(DATA / "v8.db", tmp_path / "v8.db")
    store = Store(tmp_path / "v8.db")
    run = store.get_run(1)
    design = runkinds.design(run)
    assert design.budget_s == 60.0 and design.warmup == "trial" and design.spent_s == 8.44
    assert design.reached == [2, 7] and design.over_s == 0.0 and design.over_why is None
    assert [g.n_max for g in design.groups] == [10, 10] and design.looks() == [10]
    assert design.groups[0].counts_only and design.groups[0].noise is None
    assert design.groups[0].warmup_s == 0.0  # v8 kept no warm-up seconds per group
    assert len(design.cells) == 6 and set(design.cells.values()) == {10}
    # Written back, the record is what the store holds: nothing added, nothing lost.
    kept = GridFacts(design=design).model_dump(mode="json", exclude_unset=True)
    assert json.dumps(kept) == json.dumps(run.facts)
    assert budget_line(design) == "time: 8 s of a 60 s budget; looks planned up to n = 10 a group"
    store.close()


def test_a_later_key_is_kept_and_a_run_of_another_kind_has_none() -> None:
    later = {"budget_s": None, "groups": [], "cells": {}, "spent_s": 3.0, "looks_s": [1.0]}
    design = GridDesign.model_validate(later)
    assert design.model_extra == {"looks_s": [1.0]}
    assert design.model_dump(exclude_unset=True) == later
    assert budget_line(design) == "time: 3 s (no budget)"
    assert budget_line(GridDesign()) == ""  # a fixed or auto design: nothing planned


def test_the_budget_line_says_why_a_run_went_over() -> None:
    design = GridDesign(budget_s=100.0, spent_s=130.0, over_s=30.0, over_why="slow rounds")
    assert budget_line(design) == "time: 130 s of a 100 s budget, 30 s (30%) over: slow rounds"
