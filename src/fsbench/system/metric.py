"""What a trial measures: metrics, each with a name, a value, a unit, which direction is
better, and the tool's resolution. Workloads report them (workloads/metric.py adds their
helpers), and so do the monitors beside a trial (system/monitors); a tracer also yields
maps (`Folded`: stacks, histograms)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Better(StrEnum):
    HIGHER = "higher"
    LOWER = "lower"


@dataclass(frozen=True)
class Metric:
    name: str
    value: float
    unit: str
    better: Better
    # The tool's smallest step for this value: 1 for a count, 0.1 for a figure it prints
    # with one decimal ("3.9%"). Two results closer than this are the same result. 0: finer
    # than anything that matters (our own clock, a computed rate).
    resolution: float = 0.0


@dataclass(frozen=True)
class Folded:
    """A map a tracer measured, kept with the trial beside its metrics: folded kernel stacks
    (`root;...;leaf` -> time or samples, FlameGraph's format) or a histogram (bucket ->
    count), named ("offcpu", "profile", "dev.write_size"), with the unit of its values."""

    name: str
    unit: str
    values: dict[str, float]
