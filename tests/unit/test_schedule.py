"""The order trials run in: groups, warm-up rounds, balanced and seeded rounds."""

from __future__ import annotations

from collections import Counter

import pytest

from fsbench.execute import schedule
from fsbench.plan import model as planning
from fsbench.plan.model import FsConfig, Plan, WorkloadSpec
from fsbench.workloads.base import Scale


def _plan(n_configs: int, workloads: tuple[str, ...] = ("alloc",)) -> Plan:
    return Plan(
        fs=[FsConfig(type="ext4", label=f"c{i}") for i in range(n_configs)],
        # One parameter set per workload: one comparison group each.
        workload=[
            WorkloadSpec(name=w, params={"method": "write-4k"} if w == "alloc" else {})
            for w in workloads
        ],
        scale=Scale.TINY,
    )


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 6, 7])
def test_williams_rows_balance_places_and_neighbours(k: int) -> None:
    rows = schedule.williams(k)
    assert len(rows) == (2 * k if k % 2 and k > 1 else k)
    for row in rows:
        assert sorted(row) == list(range(k))
    # Each treatment takes each place equally often.
    for place in range(k):
        counts = Counter(row[place] for row in rows)
        assert set(counts) == set(range(k)) and len(set(counts.values())) == 1
    # Each ordered pair of neighbours appears equally often (first-order carry-over).
    pairs = Counter((a, b) for row in rows for a, b in zip(row, row[1:], strict=False))
    if k > 1:
        assert len(pairs) == k * (k - 1) and len(set(pairs.values())) == 1


def test_groups_run_whole_with_a_warmup_round_first() -> None:
    p = _plan(3, ("alloc", "fs_mark"))
    cells = planning.expand(p)
    slots = schedule.build(cells, reps=3, seed=7)
    assert [s.seq for s in slots] == list(range(len(slots)))
    groups = [s.group for s in slots]
    assert groups == sorted(groups)  # a group's trials are contiguous, in plan order
    for g in set(groups):
        mine = [s for s in slots if s.group == g]
        assert [s.rep for s in mine[:3]] == [0, 0, 0]  # the warm-up round comes first
        assert Counter(s.rep for s in mine) == {0: 3, 1: 3, 2: 3, 3: 3}
        for rep in range(4):
            rnd = [s for s in mine if s.rep == rep]
            assert sorted(s.position for s in rnd) == [1, 2, 3]
            assert len({s.cell.key for s in rnd}) == 3
    assert slots[0].warmup and slots[0].cell.workload == "alloc"


def test_positions_balanced_over_as_many_rounds_as_configs() -> None:
    cells = planning.expand(_plan(4))
    slots = schedule.build(cells, reps=4, seed=11, warmup=0)
    for cell in cells:
        places = sorted(s.position for s in slots if s.cell.key == cell.key)
        assert places == [1, 2, 3, 4]


def test_two_configs_alternate_first_place() -> None:
    cells = planning.expand(_plan(2))
    slots = schedule.build(cells, reps=6, seed=3, warmup=0)
    firsts = [s.cell.key for s in slots if s.position == 1]
    assert Counter(firsts) == {cells[0].key: 3, cells[1].key: 3}


def test_seed_reproduces_the_order_and_another_seed_changes_it() -> None:
    cells = planning.expand(_plan(5))
    one = [s.cell.key for s in schedule.build(cells, 5, seed=42)]
    assert one == [s.cell.key for s in schedule.build(cells, 5, seed=42)]
    others = {tuple(s.cell.key for s in schedule.build(cells, 5, seed=n)) for n in range(10)}
    assert len(others) > 5


def test_a_vm_run_keeps_each_kernel_together() -> None:
    p = Plan(
        fs=[FsConfig(type="ext4"), FsConfig(type="xfs")],
        workload=[WorkloadSpec(name="alloc"), WorkloadSpec(name="fs_mark")],
        scale=Scale.TINY,
        target={"kind": "vm", "kernel": "6.1,6.12"},
    )
    slots = schedule.build(planning.expand(p), reps=2, seed=1)
    kernels = [s.cell.knobs["kernel"] for s in slots]
    first_612 = kernels.index("6.12")
    assert set(kernels[:first_612]) == {"6.1"} and set(kernels[first_612:]) == {"6.12"}
