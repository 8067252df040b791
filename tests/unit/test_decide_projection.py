"""The decided run's projection (execute/decide.py, analysis/costs.py): each group's round
is the sum of its configs' trial times, each from this host's earlier trials of the cell,
else the priors shipped with the preset, else one warm-up trial of that cell; with every
cell known, no projection warm-up runs; and the warm-up trials the plan counts are the
ones the run spends. A replayed executor on a simulated clock, a real SQLite store."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsbench.analysis import costs
from fsbench.execute import loop as matrix
from fsbench.execute.executors.replay import CellModel, MetricModel, ReplayExecutor, StepModel
from fsbench.execute.hooks import Hooks
from fsbench.plan import model as planning
from fsbench.plan.model import FsConfig, Plan, WorkloadSpec
from fsbench.plan.presets import load_preset
from fsbench.store import runkinds
from fsbench.store.griddesign import GridDesign
from fsbench.store.results import Store
from fsbench.workloads.base import Scale

SECONDS = {"a": 2.0, "b": 6.0}  # what a counted trial of each config takes


def _plan(budget: float = 200.0) -> Plan:
    return Plan(
        fs=[FsConfig(type="ext4", label=lab) for lab in SECONDS],
        workload=[WorkloadSpec(name="fs_mark")],
        scale=Scale.TINY,
        seed=5,
        budget=budget,
        max_reps=6,
    )


class Noting(Hooks):
    def __init__(self) -> None:
        self.notes: list[str] = []

    def note(self, text: str) -> None:
        self.notes.append(text)


def _run(store: Store, p: Plan, hooks: Hooks | None = None) -> tuple[GridDesign, int]:
    """A decided run of `p` in which a's and b's files/s are far apart (decided at n = 3):
    its design and the warm-up trials it stored."""
    cells = planning.expand(p)
    models = {}
    for c in cells:
        rate = 1000.0 if c.config.display == "a" else 2000.0
        metric = MetricModel("files_per_s", "files/s", "higher", rate, 0.01)
        step = StepModel("fs_mark", (metric,), ("files_per_s",))
        models[c.key] = CellModel(SECONDS[c.config.display], (step,))
    executor = ReplayExecutor(p, cells, models, seed=3)
    outcome = matrix.run(
        p, cells, store, argv=[], overrides={}, executor=executor, clock=executor.clock,
        hooks=hooks or Hooks(),
    )  # fmt: skip
    warmups = len({t.seq for t in store.get_trials(outcome.run_id) if t.warmup})
    return runkinds.design(store.get_run(outcome.run_id)), warmups


def _counted(design: GridDesign, warmups: int, projection: int) -> None:
    """The plan counted the projection's warm-ups, the group's before its first rounds and,
    with looks past n = 3, one before its extra rounds; the run spent those it reached
    (a group decided at n = 3 takes no extra rounds, nor their warm-up)."""
    n_max, reached = design.groups[0].n_max, (design.reached or [0])[0]
    assert design.projection_warmups == projection
    assert design.warmup_trials == projection + 1 + (n_max > 3)
    assert warmups == design.warmups_run == projection + 1 + (reached > 3)


def _priors(monkeypatch: pytest.MonkeyPatch, seconds: dict[str, float]) -> None:
    """Shipped priors for the plan's cells, by config."""
    shipped = {
        c.key: costs.CellCost((seconds[c.config.display],), prior=True)
        for c in planning.expand(_plan())
    }
    monkeypatch.setattr(costs, "_shipped", lambda: shipped)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "r.db")


def test_a_fresh_store_projects_config_by_config_from_a_warm_up_trial_of_each(
    store: Store,
) -> None:
    """No priors, no history: a warm-up trial of each config, not one config's cost times
    the configs (b takes three times as long as a)."""
    design, warmups = _run(store, _plan())
    assert design.groups[0].round_s == 8.0  # 2 + 6, not 2 x 2
    _counted(design, warmups, projection=2)
    assert design.reached == [3] and warmups == 3


def test_priors_that_cover_the_cells_leave_no_projection_pass(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    _priors(monkeypatch, {"a": 2.5, "b": 5.5})
    hooks = Noting()
    design, warmups = _run(store, _plan(), hooks)
    assert design.groups[0].round_s == 8.0  # 2.5 + 5.5, from the priors
    # Only the group's warm-up before its first rounds (decided at n = 3).
    _counted(design, warmups, projection=0)
    assert warmups == 1
    assert hooks.notes[0].startswith("plan: budget 200 s, 2 warm-up trials (")
    assert "run for the projection" not in hooks.notes[0]


def test_this_host_s_earlier_trials_win_over_the_priors(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run(store, _plan())  # this host's trials of both cells: 2 s and 6 s
    _priors(monkeypatch, {"a": 20.0, "b": 20.0})
    design, warmups = _run(store, _plan())
    assert design.groups[0].round_s == 8.0 and design.groups[0].noise is not None
    _counted(design, warmups, projection=0)


def test_a_cell_nothing_knows_gets_its_own_warm_up_trial_and_no_other_does(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = {
        c.key: costs.CellCost((2.0,), prior=True)
        for c in planning.expand(_plan())
        if c.config.display == "a"
    }
    monkeypatch.setattr(costs, "_shipped", lambda: shipped)
    design, warmups = _run(store, _plan())
    assert design.groups[0].round_s == 8.0
    _counted(design, warmups, projection=1)


def test_a_group_given_extra_rounds_counts_the_warm_up_before_them(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Configs 12% apart in 5% noise, open at n = 3: the group's extra rounds come behind
    a second warm-up trial, which the plan counted."""
    _priors(monkeypatch, {"a": 2.0, "b": 2.0})
    p = _plan(budget=100.0).model_copy(update={"max_reps": 10})
    cells = planning.expand(p)
    models = {}
    for c in cells:
        rate = 1000.0 if c.config.display == "a" else 1120.0
        metric = MetricModel("files_per_s", "files/s", "higher", rate, 0.05)
        models[c.key] = CellModel(2.0, (StepModel("fs_mark", (metric,), ("files_per_s",)),))
    executor = ReplayExecutor(p, cells, models, seed=3)
    outcome = matrix.run(
        p, cells, store, argv=[], overrides={}, executor=executor, clock=executor.clock
    )
    design = runkinds.design(store.get_run(outcome.run_id))
    warmups = len({t.seq for t in store.get_trials(outcome.run_id) if t.warmup})
    assert design.reached is not None and design.reached[0] > 3
    _counted(design, warmups, projection=0)
    assert design.warmup_trials == warmups == 2


def test_the_quick_preset_s_priors_cover_every_cell_it_runs() -> None:
    """`make run` on a fresh store: every cell of the default comparison has a prior, so
    its plan needs no projection pass (bench/cost_priors.py writes them)."""
    cells = planning.expand(load_preset("quick"))
    found = costs.priors({c.key for c in cells})
    assert set(found) == {c.key for c in cells}
    assert all(len(c.seconds) >= 3 and c.trial_s > 0 for c in found.values())
