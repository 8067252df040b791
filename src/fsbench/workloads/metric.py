"""What a workload reports: metrics, each with a name, a value, a unit, which direction
is better, and the tool's resolution."""

from __future__ import annotations

from collections.abc import Mapping
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


def rate(
    metrics: Mapping[str, float], count: str, name: str, unit: str, per: float = 1.0
) -> list[Metric]:
    """`count` (a metric of the run) per second of the runner's `seconds` (flush
    included), divided by `per` (1e6 for MB/s from bytes): [] when either is missing."""
    seconds = metrics.get("seconds", 0.0)
    if seconds <= 0 or count not in metrics:
        return []
    return [Metric(name, metrics[count] / seconds / per, unit, Better.HIGHER)]
