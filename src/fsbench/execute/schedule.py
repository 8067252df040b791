"""The order trials run in, so that order never decides a comparison.

On a real machine the trial before leaves something behind (dirty pages in writeback, an
SSD collecting garbage, a warm or a reclaimed page cache, heat), and on this project's own
VM the first large write after other work runs at a quarter of the speed of the next one.
With a fixed order, the config that always runs first pays for it every time: two
identical configs came out 3.89x apart. So:

- Cells are measured in **groups**: the cells compared with each other (one workload and
  one set of parameters, every config and knob value; one kernel at a time in a VM). A
  group runs all its rounds before the next group starts, so its trials follow trials of
  the same workload, not whatever ran before.
- Every group starts with a **warm-up round** (rep 0): each cell once, in a shuffled
  order, stored but never counted (hyperfine's and PTS's warm-up runs). The first trial
  after other work is always a warm-up.
- The counted rounds follow a **Williams design**: a Latin square whose rows also balance
  which cell runs just before which. Each cell takes each place in the round equally often
  over k rounds (k cells; 2k for an odd k), and follows each other cell equally often.
  With fewer rounds than that, places are as even as the count allows.
- Which cell plays which part of the design is **shuffled by a seed** per group; the seed
  is kept with the run, so the order is reproduced exactly by the same plan and seed.

A slot's `seq` is its index in the full planned schedule (with `--reps auto`, up to
`max_reps`): stable whether or not earlier slots ran, so adaptive repetitions and resumed
runs number their trials the same way.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fsbench.plan.model import Cell
from fsbench.system import knobs

WARMUP_REP = 0


@dataclass(frozen=True)
class Slot:
    seq: int
    rep: int  # WARMUP_REP: the warm-up round; 1.. the counted repetitions
    position: int  # 1-based place in its round
    group: int  # index of the comparison group
    cell: Cell

    @property
    def warmup(self) -> bool:
        return self.rep == WARMUP_REP


def group_key(cell: Cell) -> tuple[str, str, str]:
    """Cells compared with each other: the same workload and parameters (every config and
    knob value), under one kernel (a VM guest runs one kernel)."""
    kernel = cell.knobs.get(knobs.KERNEL, "")
    return (kernel, cell.workload, json.dumps(cell.params, sort_keys=True))


def groups(cells: Sequence[Cell]) -> list[list[Cell]]:
    """The comparison groups in plan order; in a VM run, every group of the first kernel
    before those of the next (a guest runs one kernel)."""
    by_key: dict[tuple[str, str, str], list[Cell]] = {}
    for cell in cells:
        by_key.setdefault(group_key(cell), []).append(cell)
    kernels = list(dict.fromkeys(key[0] for key in by_key))
    return [by_key[key] for key in sorted(by_key, key=lambda k: kernels.index(k[0]))]


def williams(k: int) -> list[list[int]]:
    """Rows of a Williams design for k treatments: every row a permutation, every column
    a permutation over k rows (positions balanced), and each ordered pair of neighbours
    appearing equally often (first-order carry-over balanced); an odd k needs the mirror
    rows too (2k rows)."""
    if k < 1:
        return []
    first: list[int] = [0]
    low, high = 1, k - 1
    while len(first) < k:
        first.append(low)
        low += 1
        if len(first) < k:
            first.append(high)
            high -= 1
    rows = [[(x + i) % k for x in first] for i in range(k)]
    if k % 2 == 1 and k > 1:
        rows += [row[::-1] for row in rows]
    return rows


def build(
    cells: Sequence[Cell],
    reps: int,
    seed: int,
    warmup: int = 1,
    warms: Callable[[Cell], bool] = lambda cell: True,
) -> list[Slot]:
    """The full planned schedule: per group, `warmup` shuffled warm-up rounds (for groups
    whose cells `warms`: a crash series has nothing to warm), then `reps` counted rounds in
    Williams order, cells shuffled into the design by `seed`."""
    slots: list[Slot] = []
    for g, members in enumerate(groups(cells)):
        rng = random.Random(f"fsbench-order:{seed}:{g}")
        k = len(members)
        cast = list(range(k))
        rng.shuffle(cast)  # design symbol -> member
        rounds: list[tuple[int, list[int]]] = []
        for _ in range(warmup if warms(members[0]) else 0):
            order = list(range(k))
            rng.shuffle(order)
            rounds.append((WARMUP_REP, order))
        design = williams(k)
        for rep in range(1, reps + 1):
            rounds.append((rep, [cast[s] for s in design[(rep - 1) % len(design)]]))
        for rep, order in rounds:
            for position, member in enumerate(order, start=1):
                slots.append(Slot(len(slots), rep, position, g, members[member]))
    return slots


def new_seed() -> int:
    """A seed for a run that names none (recorded with the run)."""
    return random.SystemRandom().randrange(1, 2**31)
