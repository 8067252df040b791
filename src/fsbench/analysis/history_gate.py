"""The CI gate of `fsbench history --fail-on regression`: the change points for the worse
that are new tonight (not found in the series as it stood before its newest run, or as it
stood at a reference run), each held to a level corrected across the series the gate
checks (Bonferroni), so that a night with nothing changed fails the whole gate in at most
GATE_ALPHA of nights however many series it checks (bench/history_short.py measures it
for a gate of 57 series)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

from fsbench.analysis import changepoints
from fsbench.analysis.history import NEAR, ChangePoint, Series, changes_of, on_scale

GATE_ALPHA = 0.01  # a night with nothing changed fails the gate at most this often


@dataclass(frozen=True)
class Alarm:
    series: Series
    change: ChangePoint
    p: float  # the change's p as the gate holds it (refined where it was coarse)
    checked: int  # the series the gate checked: its level is GATE_ALPHA / checked

    @property
    def level(self) -> float:
        return GATE_ALPHA / self.checked


def regressions(
    series: Iterable[Series], newer_than: str | None = None, headline_only: bool = True
) -> list[Alarm]:
    """The new change points for the worse whose p is within GATE_ALPHA / (series
    checked): new since each series' newest run came (its points but the newest), or with
    `newer_than` (a run's creation time) since the series stood at that run."""
    checked = [s for s in series if s.headline or not headline_only]
    level = GATE_ALPHA / max(1, len(checked))
    out = []
    for s in checked:
        if newer_than is None:
            reference = s.points[:-1]
        else:
            reference = [p for p in s.points if p.created_at <= newer_than]
        if len(reference) == len(s.points):
            continue  # nothing came since
        known = changes_of(replace(s, points=reference, changes=[])) if reference else []
        for c in s.changes:
            if not c.worse or any(abs(k.index - c.index) <= NEAR for k in known):
                continue
            p = held_p(s, c, level)
            if p <= level:
                out.append(Alarm(s, c, p, len(checked)))
    return out


def held_p(s: Series, c: ChangePoint, level: float) -> float:
    """The change's p, precise enough to hold to `level`: E-divisive's from PERMUTATIONS
    shuffles cannot go below 1 / (PERMUTATIONS + 1), so below that level its split is
    tested again with enough shuffles (seeded by the segment, as the first test)."""
    floor = 1 / (changepoints.PERMUTATIONS + 1)
    if c.method != "e-divisive" or c.p > floor * 1.5 or level >= floor:
        return c.p
    bounds = [0, *[k.index for k in s.changes], len(s.points)]
    at = bounds.index(c.index)
    x = np.asarray(on_scale([p.mean for p in s.points]), dtype=float)[
        bounds[at - 1] : bounds[at + 1]
    ]
    rng = np.random.default_rng(changepoints.seed_of(x))
    return changepoints.permuted(x, rng, shuffles=math.ceil(4 / level))[1]
