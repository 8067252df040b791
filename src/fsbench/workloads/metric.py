"""What a workload reports: metrics (system/metric.py: a name, a value, a unit, which
direction is better, and the tool's resolution), and the helpers workloads share to make
them."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

# Re-exported: a workload takes its metric nouns from here.
from fsbench.system.metric import Better as Better
from fsbench.system.metric import Metric as Metric


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


@dataclass(frozen=True)
class Rate:
    """A metric derived as `count` (a metric of the run) per second of the runner's
    `seconds` (flush included), divided by `per` (1e6 for MB/s from bytes). A workload
    declares its rates (`Workload.rates`) and the contract derives them."""

    count: str
    name: str
    unit: str
    per: float = 1.0

    def of(self, metrics: Mapping[str, float]) -> list[Metric]:
        """The rate of this trial's metrics: [] when the count or the seconds are missing."""
        seconds = metrics.get("seconds", 0.0)
        if seconds <= 0 or self.count not in metrics:
            return []
        value = metrics[self.count] / seconds / self.per
        return [Metric(self.name, value, self.unit, Better.HIGHER)]


MB_PER_S = Rate("data_bytes", "mb_per_s", "MB/s", per=1e6)
FILES_PER_S = Rate("files", "files_per_s", "files/s")
