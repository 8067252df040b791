"""`fsbench run --explain` with a budget: the instrumented pass's projected cost is kept
from the budget before the counted rounds are planned, the plan says so, and after the
pass one line says what it spent against what was reserved (ext4 against ext4 mounted
`sync`, fs_mark at tiny scale, on a loop image)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fsbench.execute import explain
from fsbench.store import runkinds
from fsbench.store.results import Store
from tests.helpers import fsbench

pytestmark = pytest.mark.integration

BUDGET = 150.0


def test_run_explain_reserves_the_pass_from_the_budget(tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(
        f"""
name = "sync-within-a-budget"
fs = [{{type = "ext4"}}, {{type = "ext4", mount = "sync"}}]
workload = [{{name = "fs_mark", params = {{files = 300}}}}]
scale = "tiny"
reps = "decide"
budget = {BUDGET}
seed = 11
[target]
image_size = "1G"
workdir = "{tmp_path / "work"}"
"""
    )
    db = str(tmp_path / "b.db")
    ran = fsbench("run", str(plan), "--db", db, "--explain", "--no-report", timeout=1200)
    assert ran.returncode in (0, 4), ran.stderr[-3000:]  # 4: a trial failed, said below
    said_all = " ".join(ran.stderr.split())  # the terminal's lines unwrapped
    store = Store(db)
    design = runkinds.design(store.get_run(1))
    assert design.budget_s == BUDGET and design.reserved_s and design.planned_s
    # Two configs, one group: 3 trials of each, a counted trial's cost and the tracers'.
    assert design.reserved_s >= 3 * 2 * explain.TRACER_START_S
    assert design.planned_s + design.reserved_s <= BUDGET
    said = re.search(
        r"plan: budget 150 s, \d+ s on warm-ups, (\d+) s planned, (\d+) s reserved for the "
        r"instrumented pass after it",
        said_all,
    )
    assert said, said_all[-3000:]
    # The first plan's numbers (the re-plan projects both again from the minimum rounds,
    # which the record keeps): together within the budget too.
    assert int(said[1]) + int(said[2]) <= BUDGET + 1  # each rounded to a second
    # The line after the pass says the reservation the run kept.
    spent = re.search(
        r"explain: run 2, (\d+) instrumented trials in (\d+) s of the (\d+) s reserved from "
        r"the 150 s budget \(the counted run: (\d+) s\)",
        said_all,
    )
    assert spent, said_all[-3000:]
    made = store.get_run(2)
    assert (made.kind, made.facts["source"]) == ("explain", 1)
    assert int(spent[1]) == len(store.run_trials(made)) == 6
    assert int(spent[2]) == round(made.seconds) and int(spent[3]) == round(design.reserved_s)
    assert design.spent_s is not None and design.spent_s <= BUDGET - design.reserved_s + 5.0
