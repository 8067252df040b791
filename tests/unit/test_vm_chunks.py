"""How the VM executor cuts the schedule into guests (executors.vm.chunks): whole
comparison groups, one kernel per guest, about one round of that kernel's cells each,
and the schedule's order kept."""

from __future__ import annotations

from fsbench.execute.schedule import Slot, build
from fsbench.plan.model import Cell, FsConfig
from fsbench.system import knobs
from fsbench.vm.executor import chunks


def _cells(fs: list[str], sizes: list[int], kernels: list[str | None]) -> list[Cell]:
    return [
        Cell(
            FsConfig(type=t),
            "alloc",
            {"method": "fallocate", "size": size},
            {knobs.KERNEL: k} if k else {},
        )
        for k in kernels
        for size in sizes
        for t in fs
    ]


def _kernel_of(cells: list[Cell]) -> dict[str, str | None]:
    return {c.key: c.knobs.get(knobs.KERNEL) for c in cells}


def _check(slots: list[Slot], guests: list[list[Slot]], kernel_of: dict[str, str | None]) -> None:
    assert [s for g in guests for s in g] == slots  # nothing lost, nothing reordered
    for guest in guests:
        assert len({kernel_of[s.cell.key] for s in guest}) == 1  # one kernel per guest
    for group in {s.group for s in slots}:  # a group is never cut between guests
        assert sum(1 for g in guests if any(s.group == group for s in g)) == 1


def test_small_groups_share_a_guest_up_to_one_round() -> None:
    # 6 groups of one cell (6 sizes x 1 fs), warm-up + 1 rep: 2 slots per group; the cap
    # is one slot per cell of the kernel (6), so 3 groups per guest.
    cells = _cells(["ext4"], [1 << 20, 2 << 20, 3 << 20, 4 << 20, 5 << 20, 6 << 20], [None])
    slots = build(cells, reps=1, seed=7)
    guests = chunks(slots, _kernel_of(cells))
    _check(slots, guests, _kernel_of(cells))
    assert [len(g) for g in guests] == [6, 6]


def test_a_group_bigger_than_the_cap_is_one_guest_of_its_own() -> None:
    # 2 groups of 3 configs, warm-up + 3 reps: 12 slots each, cap 6: never split.
    cells = _cells(["ext4", "xfs", "btrfs"], [1 << 20, 2 << 20], [None])
    slots = build(cells, reps=3, seed=7)
    guests = chunks(slots, _kernel_of(cells))
    _check(slots, guests, _kernel_of(cells))
    assert [len(g) for g in guests] == [12, 12]


def test_two_kernels_never_share_a_guest() -> None:
    cells = _cells(["ext4"], [1 << 20, 2 << 20], ["6.1", "6.12"])
    slots = build(cells, reps=2, seed=3)
    kernel_of = _kernel_of(cells)
    guests = chunks(slots, kernel_of)
    _check(slots, guests, kernel_of)
    # Each kernel has 2 cells (cap 2) in 2 groups of 3 slots: one group per guest.
    assert [kernel_of[g[0].cell.key] for g in guests] == ["6.1", "6.1", "6.12", "6.12"]
    assert [len(g) for g in guests] == [3, 3, 3, 3]


def test_no_slots_no_guests() -> None:
    assert chunks([], {}) == []
