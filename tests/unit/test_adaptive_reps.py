"""--reps auto: which cells get another repetition, and what is recorded."""

from __future__ import annotations

from fsbench import matrix
from fsbench import plan as planning
from fsbench.plan import FsConfig, Plan, WorkloadSpec
from fsbench.store import MetricRecord, TrialRecord
from fsbench.workloads.base import Scale


def _plan() -> Plan:
    return Plan(
        fs=[FsConfig(type="ext4"), FsConfig(type="xfs")],
        workload=[WorkloadSpec(name="alloc", params={"method": "write-4k"})],
        scale=Scale.TINY,
        reps="auto",
        max_reps=6,
    )


def _trials(cell: planning.Cell, values: list[float], status: str = "ok") -> list[TrialRecord]:
    return [
        TrialRecord(
            seq=i,
            rep=i + 1,
            cell_key=cell.key,
            config=cell.config.display,
            fs=cell.config.type,
            mkfs_options=[],
            mount_options="",
            workload="alloc",
            params=cell.params,
            status=status,
            metrics=[MetricRecord("seconds", v, "s", "lower")] if status == "ok" else [],
        )
        for i, v in enumerate(values)
    ]


def test_noisy_cells_continue_steady_ones_stop() -> None:
    p = _plan()
    steady, noisy = planning.expand(p)
    trials = _trials(steady, [1.00, 1.01, 0.99]) + _trials(noisy, [1.0, 1.6, 0.7])
    assert matrix._cells_to_run(p, [steady, noisy], 3, trials) == {steady.key, noisy.key}
    assert matrix._cells_to_run(p, [steady, noisy], 4, trials) == {noisy.key}
    conv = matrix.convergence(p, [steady, noisy], trials)
    assert conv[steady.key]["converged"] is True and conv[steady.key]["reps"] == 3
    assert conv[noisy.key]["converged"] is False
    assert conv[noisy.key]["half_width_pct"]["alloc:seconds"] > 5


def test_fixed_reps_run_everything_but_refused_cells() -> None:
    p = _plan().model_copy(update={"reps": 3})
    a, b = planning.expand(p)
    trials = _trials(b, [0.0], status="unsupported")
    assert matrix._cells_to_run(p, [a, b], 2, trials) == {a.key}


def test_slot_numbers_are_stable() -> None:
    assert [planning.slot_seq(r, i, 3) for r in (1, 2) for i in range(3)] == [0, 1, 2, 3, 4, 5]
    cells = planning.expand(_plan())
    order = planning.schedule(cells, 2)
    assert [planning.slot_seq(rep, cells.index(c), len(cells)) for rep, c in order] == [0, 1, 2, 3]


def test_reps_values() -> None:
    assert _plan().planned_reps == 6
    assert _plan().model_copy(update={"reps": 4}).planned_reps == 4
