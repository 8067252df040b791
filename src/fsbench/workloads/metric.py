"""What a workload reports: metrics, each with a name, a value, a unit, which direction
is better, and the tool's resolution."""

from __future__ import annotations

import math
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


def bucket_width(value: float, bits: int, per_unit: float = 1.0) -> float:
    """The width, in the metric's unit, of the log-linear histogram bucket that holds
    `value`: the tool cannot tell apart two values closer than that. fio's latency
    histogram has 2^6 buckets per power of two of nanoseconds (FIO_IO_U_PLAT_BITS), an HDR
    histogram of 2 significant figures 2^7 (its sub-bucket half count); `per_unit` is the
    histogram's units per metric unit (1000 ns per µs). Below 2^(bits+1) every unit has
    its own bucket."""
    raw = value * per_unit
    if raw < 2 ** (bits + 1):
        return 1.0 / per_unit
    return float(2 ** (math.floor(math.log2(raw)) - bits)) / per_unit


def rate(
    metrics: Mapping[str, float], count: str, name: str, unit: str, per: float = 1.0
) -> list[Metric]:
    """`count` (a metric of the run) per second of the runner's `seconds` (flush
    included), divided by `per` (1e6 for MB/s from bytes): [] when either is missing."""
    seconds = metrics.get("seconds", 0.0)
    if seconds <= 0 or count not in metrics:
        return []
    return [Metric(name, metrics[count] / seconds / per, unit, Better.HIGHER)]
