"""The default `--reps decide` run, for real (tiny scale, loop image): the design is
planned from the budget and said before the counted rounds, kept with the run, the run
ends within its budget or the report says by how much and why, and every pair of the
report agrees with the interval printed beside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsbench.store import runkinds
from fsbench.store.results import Store
from tests.helpers import assert_intervals_agree, fsbench, ours

pytestmark = pytest.mark.integration

BUDGET = 90.0


def test_a_decided_run_plans_from_its_budget_and_its_verdicts_agree_with_their_intervals(
    workdir: Path,
) -> None:
    db = workdir / "results.db"
    res = fsbench(
        "run",
        *("--fs", "ext4,xfs,btrfs", "--workload", "alloc"),
        *("--set", "method=write-4k,fallocate", "--set", "size=64M"),
        *("--budget", f"{BUDGET:.0f}", "--seed", "7", "--json", "--no-report"),
        *("--workdir", str(workdir / "work"), "--db", str(db), "--image-size", "1G"),
        *("--scale", "tiny"),
    )
    assert res.returncode == 0, res.stderr
    # The plan, said before the first counted round: per group its looks.
    plan_at = res.stderr.index("plan: budget 90 s")
    assert "alloc method=write-4k" in res.stderr[plan_at:]
    assert "alloc method=fallocate" in res.stderr[plan_at:]
    # Shared out again after the minimum rounds, before any look, and said after the plan.
    assert res.stderr.index("re-plan after the minimum rounds: ") > plan_at
    doc = json.loads(res.stdout)
    # Every warm-up trial counted: a fresh store and no priors for these cells, so one of
    # each of the six cells for the projection, and the groups' own; the run spent those
    # of them it reached (none before extra rounds a group did not take).
    design = runkinds.design(Store(db).get_run(doc["run"]))
    trials = Store(db).get_trials(doc["run"])
    spent = len({t.seq for t in trials if t.warmup})
    extra = sum(n > 3 for n in design.reached or [])
    assert design.projection_warmups == 6
    assert f"{design.warmup_trials} warm-up trials (" in res.stderr[plan_at:]
    assert spent == design.warmups_run == 6 + 2 + extra
    said = {"planned": design.warmup_trials, "for_projection": 6, "run": spent}
    assert doc["warmup_trials"] == said  # and the JSON says them
    assert assert_intervals_agree(doc["comparisons"]) >= 3
    report = fsbench("report", str(doc["run"]), "--db", str(db))
    assert report.returncode == 0
    assert f"+ {spent} warm-up trials (not counted)" in report.stdout
    time_line = next(line for line in report.stdout.splitlines() if line.startswith("time: "))
    spent = float(time_line.split()[1])
    if spent > BUDGET * 1.05:
        assert "over:" in time_line, time_line  # and says why
    else:
        assert f"of a {BUDGET:.0f} s budget" in time_line and "over" not in time_line
    assert ours(workdir) == ([], [])
