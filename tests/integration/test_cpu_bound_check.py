"""The runner's `cpu-bound` validity flag, judged against trials whose nature is known
rather than against its own formula: real trials through `Runner.run_cell`, each one's
own CPU seconds measured by the monitors as in any run.

- Known CPU bound: the shipped gzip workload at -9 (compression sets the pace: deflate
  runs at tens of MB/s where this disk reads and writes at hundreds) must be flagged.
- Known CPU bound: one thread spinning for the whole phase, declared as one thread.
- Known not CPU bound: a workload that writes 4 KiB and fdatasyncs, over and over, for
  as long: each write waits for the device's flush, so the CPU is mostly idle. It must
  not be flagged, nor must one that does nothing but wait (sleep) for the same time, nor
  one spinning thread in a workload that declares two (the other CPU stays idle).

The trials run at a raised priority, their process's and its session's (the kernel's
autogroup: other sessions' work shares the CPUs with it by autogroup, whatever a process's
nice), restored after, so that other work on a shared machine cannot starve the CPU-bound
one of the CPU it would use. Measured here at a load average of 20-35 on 2 CPUs: gzip -9
of the same 64 MiB took 3.4 s for 1.3 s of CPU at nice 0 and 1.26 s for 1.23 s with its
autogroup at -20.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from fsbench import workloads
from fsbench.workloads.base import CacheState, Flush, Params, Scale, TrialContext, Workload
from fsbench.workloads.metric import Better, Metric
from tests.runcell import Bench, flags, loop_bench, metrics

# alone: a trial's CPU seconds against its wall time (tests/conftest.py).
pytestmark = [pytest.mark.integration, pytest.mark.alone]

SECONDS = 3.0


class KnownParams(Params):
    seconds: float = Field(default=SECONDS, description="how long the timed phase lasts")
    mode: str = Field(default="fsync", description="fsync (4 KiB writes), sleep or spin")
    threads: int = Field(default=1, description="threads the workload declares")


class _Known(Workload[KnownParams]):
    """Waits on the device (4 KiB writes, each fdatasync'ed), on nothing (sleep), or
    keeps one CPU busy (spin)."""

    name = "test-known-cpu"
    summary = "test workload: a timed phase whose CPU use is known"
    scale_defaults = {scale: {} for scale in Scale}
    cache = CacheState.WARM
    flush = Flush.NONE

    def prepare(self, ctx: TrialContext, params: KnownParams) -> None:
        pass

    def threads(self, params: KnownParams) -> int:
        return params.threads

    def run(self, ctx: TrialContext, params: KnownParams) -> list[Metric]:
        deadline = time.monotonic() + params.seconds
        if params.mode == "sleep":
            time.sleep(params.seconds)
            return []
        if params.mode == "spin":
            while time.monotonic() < deadline:
                pass
            return []
        block, syncs = os.urandom(4096), 0
        fd = os.open(ctx.mountpoint / "wait.dat", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while time.monotonic() < deadline:
                os.pwrite(fd, block, (syncs % 1024) * 4096)
                os.fdatasync(fd)
                syncs += 1
        finally:
            os.close(fd)
        return [Metric("syncs", syncs, "count", Better.HIGHER)]


AUTOGROUP = Path("/proc/self/autogroup")  # "/autogroup-15 nice 0"


def _autogroup_nice() -> str | None:
    try:
        return AUTOGROUP.read_text().split()[-1]
    except (OSError, IndexError):
        return None


@pytest.fixture(scope="module")
def bench() -> Iterator[Bench]:
    workloads.register(_Known)
    before, group_before = os.getpriority(os.PRIO_PROCESS, 0), _autogroup_nice()
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -20)
        if group_before is not None:
            AUTOGROUP.write_text("-20")
        yield from loop_bench(1 << 30)
    finally:
        if group_before is not None:
            AUTOGROUP.write_text(group_before)
        os.setpriority(os.PRIO_PROCESS, 0, before)
        workloads.REGISTRY.unregister(_Known.name)


def _own_share(bench: Bench, workload: str, **params: Any) -> tuple[float, dict[str, str]]:
    """(own CPU seconds per second of the timed phase, flags) of one trial on ext4."""
    (record,) = bench.trial("ext4", workload, **params)
    assert record.status == "ok", f"{record.message}\n{record.detail}"
    m = metrics(record)
    own = m["cpu_user_s"].value + m["cpu_sys_s"].value
    return own / m["seconds"].value, flags(record)


def test_gzip_compressing_is_flagged_cpu_bound(bench: Bench) -> None:
    share, found = _own_share(bench, "gzip", size=64 << 20, level=9)
    assert share >= 0.8, share  # compression, not I/O, took the time
    assert "cpu-bound" in found, (share, found)
    assert "the CPU, not the filesystem, may set the pace" in found["cpu-bound"]


def test_one_spinning_thread_is_cpu_bound(bench: Bench) -> None:
    share, found = _own_share(bench, "test-known-cpu", mode="spin")
    assert share >= 0.95, share
    assert "cpu-bound" in found, (share, found)


def test_one_spinning_thread_of_two_declared_is_not(bench: Bench) -> None:
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one CPU: one spinning thread fills it")
    share, found = _own_share(bench, "test-known-cpu", mode="spin", threads=2)
    assert share >= 0.95, share  # the one thread was busy; the other CPU was not used
    assert "cpu-bound" not in found, (share, found)


def test_waiting_on_the_device_is_not_cpu_bound(bench: Bench) -> None:
    share, found = _own_share(bench, "test-known-cpu", mode="fsync")
    assert share < 0.5, share  # what makes it a known device-bound run here
    assert "cpu-bound" not in found, (share, found)


def test_sleeping_is_not_cpu_bound(bench: Bench) -> None:
    share, found = _own_share(bench, "test-known-cpu", mode="sleep")
    assert share < 0.1, share
    assert "cpu-bound" not in found, (share, found)
