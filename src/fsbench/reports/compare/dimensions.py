"""Within one run: the rows under one level of a dimension against those under another
(kernel 6.1 vs 6.12, vm.dirty_ratio 10 vs 40). A dimension is data: which levels a row
belongs to, and the row without it, so that the cells of two levels match. A knob is one;
a new kind of dimension (the hosts of a run on many machines, their groups) is one more
entry in `NAMED`, not a new path."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from fsbench.analysis.rows import Row
from fsbench.analysis.stats import min_detectable, summarize
from fsbench.reports.compare.cells import Comparison, cell_key, compare_rows
from fsbench.system.errors import FsbenchError


@dataclass(frozen=True)
class Dimension:
    name: str
    # The levels a row belongs to (a knob: its one value; none when it lacks the knob).
    levels_of: Callable[[Row], Sequence[str]]
    # The row without the dimension: ext4 under kernel=6.1 matches ext4 under kernel=6.12.
    without: Callable[[Row], Row]

    def levels(self, rows: Sequence[Row]) -> list[str]:
        """The levels in these rows, in the order they first appear."""
        return list(dict.fromkeys(level for r in rows for level in self.levels_of(r)))

    def split(self, rows: Sequence[Row], level: str) -> list[Row]:
        """The rows of one level, the dimension left out of their cells; rows that then
        fall in one cell (the hosts of one group) pooled into one."""
        return pool([self.without(r) for r in rows if level in self.levels_of(r)])


def pool(rows: Sequence[Row]) -> list[Row]:
    """Rows of the same cell as one: their values together, the statistics recomputed."""
    by_key: dict[object, list[Row]] = {}
    for row in rows:
        by_key.setdefault(cell_key(row), []).append(row)
    out = []
    for same in by_key.values():
        if len(same) == 1:
            out.append(same[0])
            continue
        values = [v for r in same for v in r.values]
        s = summarize(values)
        out.append(
            replace(
                same[0],
                values=values,
                **s.row_fields(),
                outliers=[],
                positions=[p for r in same for p in r.positions],
                warmup_values=[v for r in same for v in r.warmup_values],
                min_detectable=min_detectable(s.sd, s.mean, s.n),
                flags={k: v for r in same for k, v in r.flags.items()},
            )
        )
    return out


def knob(name: str) -> Dimension:
    """A knob of the run's matrix (kernel, a sysctl, the scheduler, ...)."""
    return Dimension(
        name,
        lambda r: [r.knobs[name]] if name in r.knobs else [],
        lambda r: replace(r, knobs={k: v for k, v in r.knobs.items() if k != name}),
    )


def host() -> Dimension:
    """The hosts of a run on many machines: each host's cells against another's."""
    return Dimension(
        "host", lambda r: [r.host] if r.host else [], lambda r: replace(r, host="", groups=[])
    )


def group() -> Dimension:
    """The inventory groups of a run on many machines (baseline, dev): the cells of every
    host of one group pooled, against another group's."""
    return Dimension("group", lambda r: list(r.groups), lambda r: replace(r, host="", groups=[]))


# Dimensions that are not knobs, by the name `--by` takes.
NAMED: dict[str, Callable[[], Dimension]] = {"host": host, "group": group}


def dimension(name: str) -> Dimension:
    """The dimension `--by NAME` means: a named one, else a knob."""
    make = NAMED.get(name)
    return make() if make is not None else knob(name)


def known(rows: Sequence[Row]) -> list[str]:
    """The dimensions these rows can be split by."""
    return sorted(
        {k for r in rows for k in r.knobs} | {n for n in NAMED if dimension(n).levels(rows)}
    )


def compare_within(
    run_id: int, rows: list[Row], by: str, all_metrics: bool = False
) -> tuple[str, str, Comparison]:
    """`--by NAME[=A,B]` over one run's rows: level A, level B, and B judged against A.
    With no levels named, the dimension must have exactly two."""
    name, _, wanted = by.partition("=")
    name = name.strip()
    dim = dimension(name)
    levels = dim.levels(rows)
    if not levels:
        have = known(rows)
        raise FsbenchError(
            f"run {run_id} has no dimension {name!r}"
            + (f" (it has: {', '.join(have)})" if have else " (it has no knob dimensions)")
        )
    chosen = [v.strip() for v in wanted.split(",") if v.strip()] if wanted else levels
    if len(chosen) != 2:
        raise FsbenchError(
            f"--by {name}: run {run_id} has {len(levels)} values ({', '.join(levels)}); "
            f"choose two: --by {name}=A,B"
        )
    for level in chosen:
        if level not in levels:
            raise FsbenchError(f"--by {name}: no {level!r} in run {run_id} ({', '.join(levels)})")
    level_a, level_b = chosen
    result = compare_rows(dim.split(rows, level_a), dim.split(rows, level_b), all_metrics)
    return level_a, level_b, result
