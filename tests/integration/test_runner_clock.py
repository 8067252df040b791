"""The runner's clock, tested through `Runner.run_cell` on a real loop device: `prepare` is
never timed, and the flush a workload asks for (sync, sync + umount) is inside `seconds`.

The workloads here are registered by this module only: their prepare and run sleep known
times or leave a known amount of dirty data, so the clock's boundaries can be seen."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from fsbench import workloads
from fsbench.system import cache as system
from fsbench.system import fsops
from fsbench.workloads.base import CacheState, Flush, Params, Scale, TrialContext, Workload
from fsbench.workloads.metric import Better, Metric
from tests.runcell import Bench, flags, loop_bench, metrics

# alone: the runner's clock and its 10 Hz sampler are timed (tests/conftest.py).
pytestmark = [pytest.mark.integration, pytest.mark.alone]

MIB = 1 << 20


class ClockParams(Params):
    prepare_s: float = Field(default=0.0, description="seconds prepare sleeps")
    run_s: float = Field(default=0.0, description="seconds run sleeps")
    dirty_mib: int = Field(default=0, description="MiB run writes and leaves dirty")
    spin_s: float = Field(default=0.0, description="seconds run keeps one CPU busy")
    threads: int = Field(default=1, description="threads the workload declares")


class _Clock(Workload[ClockParams]):
    """Sleeps and writes as told; declares what the runner's checks need."""

    summary = "test workload: known prepare, run and dirty data"
    scale_defaults = {scale: {} for scale in Scale}
    cache = CacheState.WARM

    def prepare(self, ctx: TrialContext, params: ClockParams) -> None:
        time.sleep(params.prepare_s)

    def run(self, ctx: TrialContext, params: ClockParams) -> list[Metric]:
        out = []
        if params.dirty_mib:
            # Buffered, never synced here: only the runner's flush puts it on disk.
            data = os.urandom(MIB)
            with open(ctx.mountpoint / "dirty.dat", "wb") as f:
                for _ in range(params.dirty_mib):
                    f.write(data)
            out.append(Metric("bytes_written", params.dirty_mib * MIB, "B", Better.HIGHER))
        deadline = time.monotonic() + params.spin_s
        while time.monotonic() < deadline:
            pass
        time.sleep(params.run_s)
        return out

    def threads(self, params: ClockParams) -> int:
        return params.threads


class ClockNone(_Clock):
    name = "test-clock-none"
    flush = Flush.NONE


class ClockSync(_Clock):
    name = "test-clock-sync"
    flush = Flush.SYNC


class ClockSyncUmount(_Clock):
    name = "test-clock-sync-umount"
    flush = Flush.SYNC_UMOUNT


CLOCKS = {cls.flush: cls for cls in (ClockNone, ClockSync, ClockSyncUmount)}


@pytest.fixture(scope="module")
def bench() -> Iterator[Bench]:
    for cls in CLOCKS.values():
        workloads.register(cls)
    try:
        yield from loop_bench(1 << 30)
    finally:
        for cls in CLOCKS.values():
            workloads.REGISTRY.unregister(cls.name)


def clock(bench: Bench, flush: Flush, scale: Scale = Scale.TINY, **params: Any) -> Any:
    (record,) = bench.trial("ext4", CLOCKS[flush].name, scale=scale, **params)
    assert record.status == "ok", f"{record.message}\n{record.detail}"
    return record


@pytest.mark.parametrize("flush", list(Flush))
def test_prepare_is_not_timed(bench: Bench, flush: Flush) -> None:
    record = clock(bench, flush, prepare_s=1.5, run_s=0.3)
    seconds = metrics(record)["seconds"].value
    assert 0.3 <= seconds < 1.2, seconds  # the 1.5 s of prepare are outside


@pytest.mark.parametrize("flush", list(Flush))
def test_sync_and_umount_are_inside_seconds(
    bench: Bench, flush: Flush, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real syncfs and umount, each made 0.4 s slower: exactly the ones the workload
    asks for land in `seconds` and `flush_seconds`."""
    delay = 0.4
    real_syncfs, real_umount = system.syncfs, fsops.umount
    calls: list[str] = []

    def slow_syncfs(path: Path) -> None:
        calls.append("sync")
        time.sleep(delay)
        real_syncfs(path)

    def slow_umount(path: Path) -> str | None:
        calls.append("umount")
        time.sleep(delay)
        return real_umount(path)

    monkeypatch.setattr(system, "syncfs", slow_syncfs)
    monkeypatch.setattr(fsops, "umount", slow_umount)
    record = clock(bench, flush, run_s=0.2)
    m = metrics(record)
    inside = {Flush.NONE: 0, Flush.SYNC: 1, Flush.SYNC_UMOUNT: 2}[flush]
    assert calls  # the settle after prepare syncs too, untimed
    seconds = m["seconds"].value
    assert 0.2 + inside * delay <= seconds < 0.2 + (inside + 1) * delay, (seconds, calls)
    if flush == Flush.NONE:
        assert "flush_seconds" not in m
    else:
        assert inside * delay <= m["flush_seconds"].value < (inside + 1) * delay
        assert m["flush_seconds"].value <= seconds


@pytest.mark.parametrize("flush", list(Flush))
def test_known_dirty_data_is_flushed_inside_the_timed_phase(bench: Bench, flush: Flush) -> None:
    """64 MiB written and left dirty: with a flush, the device writes it while the clock
    and the monitors run; without one, it is still in memory when the clock stops."""
    record = clock(bench, flush, dirty_mib=64)
    m = metrics(record)
    written = m["device_write_bytes"].value
    if flush == Flush.NONE:
        assert written < 32 * MIB, written
    else:
        assert written >= 64 * MIB, written
        assert 0 < m["flush_seconds"].value <= m["seconds"].value
        # The monitors: a known sequential write on ext4 costs little more than itself.
        assert 0.9 <= m["write_amplification"].value <= 3, m["write_amplification"]
        assert 0 < m["device_util_pct"].value <= 100


def test_monitors_sample_at_10_hz_and_count_cpu(bench: Bench) -> None:
    record = clock(bench, Flush.SYNC, run_s=1.0, spin_s=0.5)
    m = metrics(record)
    seconds = m["seconds"].value
    samples = record.samples
    assert abs(len(samples) - 10 * seconds) <= 3, (len(samples), seconds)
    times = [s["t"] for s in samples]
    assert times == sorted(times) and times[-1] == pytest.approx(seconds, abs=0.15)
    steps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert all(0.05 <= d <= 0.3 for d in steps[:-1]), steps
    assert {"read_bps", "write_bps", "util_pct", "cpu_user_pct", "dirty_bytes"} <= set(samples[0])
    # Half a second of spinning in this process: user CPU, and not the whole phase.
    assert 0.4 <= m["cpu_user_s"].value + m["cpu_sys_s"].value < seconds
    assert m["cpu_sys_s"].value >= 0


def test_short_flag_at_quick_scale_not_tiny(bench: Bench) -> None:
    assert "short" in flags(clock(bench, Flush.NONE, scale=Scale.QUICK, run_s=0.2))
    assert "short" not in flags(clock(bench, Flush.NONE, scale=Scale.QUICK, run_s=2.1))
    assert "short" not in flags(clock(bench, Flush.NONE, scale=Scale.TINY, run_s=0.2))


def test_headline_is_recorded_per_trial(bench: Bench) -> None:
    record = clock(bench, Flush.SYNC)
    assert record.provenance["headline"] == ["seconds"]
