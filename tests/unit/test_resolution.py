"""Metrics a tool quantizes into histogram buckets (fio's and the engine's latency
percentiles) carry the bucket's width as their resolution, so two configs whose
percentiles land in neighbouring buckets are no clear difference."""

from __future__ import annotations

import math

import pytest

from fsbench.analysis.design import Design
from fsbench.analysis.rows import build_rows
from fsbench.analysis.stats import ratio_ci
from fsbench.analysis.verdicts import decide_rows
from fsbench.store.records import MetricRecord, TrialRecord
from fsbench.workloads.fio.parse import FIO_PLAT_BITS, Direction, direction_metrics
from fsbench.workloads.metric import bucket_width
from fsbench.workloads.personalities import HDR_BITS, _hdr_step


@pytest.mark.parametrize(
    ("value_us", "bits", "width_us"),
    [
        (0.1, 6, 0.001),  # 100 ns: below 2^7 ns every nanosecond has its bucket
        (1.0, 6, 0.008),  # 1000 ns: 2^9 <= 1000 < 2^10, buckets of 2^(9-6) ns
        (250.0, 6, 2.048),  # 250 µs = 250,000 ns: 2^17 <= it, 2^11 ns buckets
        (250.0, 7, 1.024),  # the engine's HDR histogram: twice as fine
    ],
)
def test_bucket_width(value_us: float, bits: int, width_us: float) -> None:
    assert bucket_width(value_us, bits, per_unit=1000) == pytest.approx(width_us)
    if value_us >= 1:
        relative = bucket_width(value_us, bits, per_unit=1000) / value_us
        assert 2.0 ** -(bits + 1) < relative <= 2.0**-bits


def test_fio_percentiles_carry_their_bucket_and_rates_none() -> None:
    d = Direction(
        io_bytes=1,
        bw_mib_s=100.0,
        iops=25600.0,
        lat_mean_us=39.0,
        clat_percentiles_us={"p99": 250.0},
        total_ios=1,
    )
    by_name = {m.name: m for m in direction_metrics("", "write", d)}
    assert by_name["write_clat_p99_us"].resolution == pytest.approx(2.048)
    assert by_name["write_mib_s"].resolution == 0 and by_name["write_lat_mean_us"].resolution == 0
    assert FIO_PLAT_BITS == 6 and HDR_BITS == 7
    assert _hdr_step(250.0) == pytest.approx(1.024)


def _trials(config: str, values: list[float], step: float) -> list[TrialRecord]:
    return [
        TrialRecord(
            seq=i, rep=i + 1, cell_key=config, config=config, fs="ext4", mkfs_options=[],
            mount_options="", workload="fio", params={"profile": "rand-rw-16k-direct"},
            status="ok", metrics=[MetricRecord("read_clat_p99_us", v, "us", "lower", step)],
        )
        for i, v in enumerate(values)
    ]  # fmt: skip


def test_neighbouring_buckets_are_no_clear_difference() -> None:
    """fio prints the bucket's value: two configs whose p99 sits in neighbouring buckets
    every time are constant groups, and Welch alone would call a winner at any p."""
    low = 250.0
    high = low + bucket_width(low, FIO_PLAT_BITS, per_unit=1000)
    step = bucket_width(high, FIO_PLAT_BITS, per_unit=1000)
    rows = build_rows(_trials("ext4", [low] * 4, step) + _trials("xfs", [high] * 4, step))
    verdict = decide_rows([(r.config, r) for r in rows if r.metric == "read_clat_p99_us"], Design())
    assert verdict is not None and verdict.kind == "undecided"
    assert verdict.pairs[0].test == "resolution"
    # Twice the latency: well beyond the coarser bucket, which is the rows' resolution.
    far_step = bucket_width(2 * low, FIO_PLAT_BITS, per_unit=1000)
    far = build_rows(_trials("ext4", [low] * 4, step) + _trials("xfs", [2 * low] * 4, far_step))
    verdict = decide_rows([(r.config, r) for r in far if r.metric == "read_clat_p99_us"], Design())
    assert verdict is not None and verdict.kind == "order" and verdict.best == "ext4"
    assert all(math.isclose(r.resolution, far_step) for r in far if r.metric)


def _fio_rate(runtime_ms: int, io_mib: float = 64.0) -> Direction:
    """What fio reports for io_mib written in runtime_ms: it divides by whole ms."""
    return Direction(
        io_bytes=int(io_mib * 2**20),
        bw_mib_s=io_mib * 1000 / runtime_ms,
        iops=io_mib * 1000 / runtime_ms,
        lat_mean_us=None,
        clat_percentiles_us={},
        total_ios=int(io_mib),
        runtime_ms=runtime_ms,
    )


def _rate_trials(config: str, d: Direction, reps: int = 5) -> list[TrialRecord]:
    (m,) = [m for m in direction_metrics("", "write", d) if m.name == "write_mib_s"]
    return [
        TrialRecord(
            seq=i, rep=i + 1, cell_key=config, config=config, fs="ext4", mkfs_options=[],
            mount_options="", workload="fio", params={"profile": "seq-write"},
            status="ok", metrics=[MetricRecord(m.name, m.value, m.unit, "higher", m.resolution)],
        )
        for i in range(reps)
    ]  # fmt: skip


def test_fio_rates_step_by_one_millisecond_of_runtime() -> None:
    """A/A seen on an idle machine: 64 MiB in 28 ms for one twin and 29 ms for the other
    on every repetition, two constants 3.6% apart. One millisecond is fio's step there, so
    the twins are no clear difference and their interval holds 1; a 20 ms against 29 ms
    gap (45%) is far beyond a step and still an order."""
    fast, slow = _fio_rate(28), _fio_rate(29)
    (m,) = [m for m in direction_metrics("", "write", fast) if m.name == "write_mib_s"]
    assert m.resolution == pytest.approx(fast.bw_mib_s / 28)
    rows = build_rows(_rate_trials("a", fast) + _rate_trials("b", slow))
    verdict = decide_rows([(r.config, r) for r in rows if r.metric], Design())
    assert verdict is not None and verdict.kind == "undecided", verdict
    assert verdict.pairs[0].test == "resolution"
    a, b = (r for r in rows if r.metric)
    _, ci = ratio_ci(a.values, b.values, 0.95, max(a.resolution, b.resolution))
    assert ci is not None and ci[0] <= 1.0 <= ci[1]
    assert ratio_ci(a.values, b.values, 0.95)[1] == (b.mean / a.mean,) * 2  # no step: exact
    rows = build_rows(_rate_trials("a", _fio_rate(20)) + _rate_trials("b", slow))
    verdict = decide_rows([(r.config, r) for r in rows if r.metric], Design())
    assert verdict is not None and verdict.kind == "order" and verdict.best == "a"
