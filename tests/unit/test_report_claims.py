"""Claims of docs/statistics.md about what every table says: the order seed and warm-up
in the header, what the noise lets a table see, outliers with their values."""

from __future__ import annotations

import random
from pathlib import Path

from fsbench.execute import loop as matrix
from fsbench.plan import model as planning
from fsbench.plan.model import FsConfig, Plan, WorkloadSpec
from fsbench.reports import source
from fsbench.store.results import Store
from fsbench.workloads.base import Scale
from tests.fakes import FakeExecutor, Ran
from tests.helpers import report_as


def test_header_power_note_and_outliers_in_the_table(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    plan = Plan(
        fs=[FsConfig(type="ext4"), FsConfig(type="xfs")],
        workload=[WorkloadSpec(name="alloc", params={"method": "write-4k"})],
        scale=Scale.TINY,
        reps=6,
        seed=1234,
    )
    rng = random.Random(1)
    calls = {"n": 0}

    def measure(ran: Ran) -> float:
        calls["n"] += 1
        # One wild repetition of xfs (its 4th counted): an outlier to show, not drop.
        if ran.slot.cell.config.type == "xfs" and ran.slot.rep == 4:
            return 9.0
        return 1.0 + rng.gauss(0, 0.03)

    cells = planning.expand(plan)
    outcome = matrix.run(
        plan,
        cells,
        store,
        argv=["fsbench"],
        overrides={},
        executor=FakeExecutor(plan, cells, measure),
    )
    loaded = source.load(store, outcome.run_id)
    text = report_as("table", loaded.run, loaded.rows)
    assert "6 reps + 1 warm-up round (not counted), order shuffled and balanced (seed 1234)" in text
    assert "power: with n=6 per config these rows detect differences of about" in text
    xfs = next(r for r in loaded.rows if r.config == "xfs" and r.metric == "seconds")
    assert xfs.outliers == [xfs.values.index(9.0)] and 9.0 in xfs.values
    assert "outliers: xfs seconds: repetition" in text and "(9)" in text
