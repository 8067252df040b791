"""Reading a metric's values out of stored trial records: the one reader the race, the
bisection and their reports share (the grid's rows are built in analysis/rows.py).

A metric is named `NAME`, or `STEP:NAME` for one step of a chain; a value counts when its
trial is `ok` and the value is finite.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

from fsbench.store.records import MetricRecord, TrialRecord


def split_metric(metric: str) -> tuple[str, str]:
    """`STEP:NAME` -> (STEP, NAME); `NAME` -> ("", NAME)."""
    step, sep, name = metric.rpartition(":")
    return (step, name) if sep else ("", metric)


def measured(records: Iterable[TrialRecord], metric: str) -> Iterator[MetricRecord]:
    """The metric as each ok trial of `records` measured it, in their order."""
    step, name = split_metric(metric)
    for record in records:
        if record.status != "ok" or (step and record.workload != step):
            continue
        for m in record.metrics:
            if m.name == name and math.isfinite(m.value):
                yield m


def value_of(records: Iterable[TrialRecord], metric: str) -> float | None:
    """The metric's value in one slot's records (a chain has one per step): the step named,
    else the first step that reports it; None when no ok step does."""
    first = next(measured(records, metric), None)
    return None if first is None else float(first.value)


def counted_values(records: Iterable[TrialRecord], metric: str) -> list[float]:
    """The metric's values in the counted repetitions (not the warm-up), by trial order."""
    counted = sorted((r for r in records if r.rep > 0), key=lambda r: r.seq)
    return [float(m.value) for m in measured(counted, metric)]


def better_of(records: Iterable[TrialRecord], metric: str) -> str | None:
    """Which direction is better for the metric, as the first ok trial reporting it says
    ("higher" or "lower"); None when no trial reported it."""
    first = next(measured(records, metric), None)
    return None if first is None else first.better


def unit_of(records: Iterable[TrialRecord], metric: str) -> str:
    first = next(measured(records, metric), None)
    return "" if first is None else first.unit
