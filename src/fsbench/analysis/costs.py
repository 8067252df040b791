"""What a cell's counted trial costs, before a run counts any: from this host's earlier
trials of it (a run's store), or else from the cost priors shipped beside a preset
(`plan/presets/<preset>.costs.json`, written whole by bench/cost_priors.py from stored
runs of the preset). A cell known either way needs no projection warm-up trial.

Pure but for reading the shipped priors.
"""

from __future__ import annotations

import functools
import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

from fsbench import workloads
from fsbench.analysis.design import EXACT_UNITS
from fsbench.store import trialfacts
from fsbench.store.records import TrialRecord, slot_seconds

PRIORS_SUFFIX = ".costs.json"


@dataclass(frozen=True)
class CellCost:
    """A cell's counted trial as known before the run: the seconds each took, its first
    headline metric's values (empty for a prior), and whether its headline metrics are
    all exact counts."""

    seconds: tuple[float, ...]
    values: tuple[float, ...] = ()
    counts_only: bool = False
    prior: bool = False  # from the shipped priors, not this host's trials

    @property
    def trial_s(self) -> float:
        return statistics.median(self.seconds)


def cell_history(trials: Sequence[TrialRecord], keys: set[str]) -> dict[str, CellCost]:
    """Per cell of `keys` in one run's stored trials: what each of its counted slots cost
    the run (store.records.slot_seconds, over all the run's trials), its first headline
    metric's values, and whether those are exact counts."""
    cost = slot_seconds(list(trials))
    by_cell: dict[str, list[TrialRecord]] = {}
    for t in trials:
        if t.status == "ok" and not t.warmup and t.cell_key in keys:
            by_cell.setdefault(t.cell_key, []).append(t)
    out = {}
    for key, records in by_cell.items():
        seconds = tuple(cost[seq] for seq in sorted({t.seq for t in records}) if seq in cost)
        headline = headline_of(records[0])
        values = tuple(
            m.value
            for t in records
            if t.step == 0
            for m in t.metrics
            if headline and m.name == headline[0]
        )
        if seconds:
            out[key] = CellCost(seconds, values, counts_only(records))
    return out


def tracer_start(
    passes: Sequence[tuple[Sequence[TrialRecord], Sequence[TrialRecord]]],
) -> float | None:
    """What an instrumented trial costs beyond its counted twin, from earlier instrumented
    passes, each given as (its trials, the trials of the run it explained): the median,
    over the pass's slots, of the slot's seconds less the median counted seconds of the
    same cell in the explained run. None without a slot to compare."""
    extra: list[float] = []
    for instrumented, counted in passes:
        keys = {t.cell_key for t in instrumented}
        twins = cell_history(counted, keys)
        spent = slot_seconds(list(instrumented))
        cell_of = {t.seq: t.cell_key for t in instrumented if t.status == "ok"}
        extra += [
            spent[seq] - twins[key].trial_s
            for seq, key in cell_of.items()
            if seq in spent and key in twins
        ]
    return max(0.0, statistics.median(extra)) if extra else None


def priors(keys: set[str]) -> dict[str, CellCost]:
    """The shipped priors of the cells of `keys` that any preset's priors file has."""
    return {k: v for k, v in _shipped().items() if k in keys}


@functools.cache
def _shipped() -> dict[str, CellCost]:
    out: dict[str, CellCost] = {}
    root = resources.files("fsbench.plan.presets")
    for res in sorted(root.iterdir(), key=lambda r: r.name):
        if res.name.endswith(PRIORS_SUFFIX):
            for key, cell in json.loads(res.read_text())["cells"].items():
                out[key] = CellCost(
                    tuple(cell["seconds"]), counts_only=cell["counts_only"], prior=True
                )
    return out


def counts_only(records: Sequence[TrialRecord]) -> bool:
    """Whether the headline metrics these trials report are all exact counts."""
    units = []
    for t in records:
        if t.status != "ok":
            continue
        headline = headline_of(t)
        units += [m.unit for m in t.metrics if m.name in headline]
    return bool(units) and all(u in EXACT_UNITS for u in units)


def headline_of(trial: TrialRecord) -> tuple[str, ...]:
    """The trial's headline metrics: as it recorded them, else its workload's."""
    recorded = trialfacts.headline(trial.provenance)
    if recorded:
        return tuple(recorded)
    try:
        return tuple(workloads.get(trial.workload).headline)
    except KeyError:  # a workload this fsbench no longer has
        return ()
