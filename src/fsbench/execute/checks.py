"""The checks every trial's timed phase gets, whatever its workload: a phase too short to
trust, CPU-bound tools (from the sampler's totals), a cold read that the device did not
serve (each fed by what the workload declares)."""

from __future__ import annotations

import os

from fsbench.analysis.validity import COLD_READ_FRACTION
from fsbench.system import numbers
from fsbench.system.monitors.sampler import Totals

# Below this a timed phase is dominated by timer resolution and noise (DESIGN: traps).
MIN_TIMED_SECONDS = 2.0
# `cpu-bound`: fsbench and its tools used at least this fraction of the CPUs their threads
# could keep busy (min(threads, CPUs)) over the timed phase, which lasted at least
# CPU_BOUND_MIN_SECONDS (shorter phases say too little). A known CPU-bound trial, gzip -9
# of 64 MiB read cold and synced, used 0.82-0.98 of its CPU here (its read and sync are
# inside the phase): at 0.9 the flag missed it one time in three
# (tests/integration/test_cpu_bound_check.py); a trial waiting on fsyncs uses under 0.5.
CPU_BOUND_FRACTION = 0.8
CPU_BOUND_MIN_SECONDS = 0.5


def trial_flags(
    totals: Totals | None,
    elapsed: float,
    *,
    checks_duration: bool,
    threads: int,
    expected_read: float | None,
    device_read: float | None,
) -> dict[str, str]:
    """The runner's validity checks of one timed phase (meanings: validity.FLAGS)."""
    flags: dict[str, str] = {}
    if totals is not None:
        own = totals.own_user + totals.own_system
        cpus = min(max(threads, 1), os.cpu_count() or 1)
        if cpu_bound(own, totals.seconds, threads):
            flags["cpu-bound"] = (
                f"{own:.1f} s of CPU in {totals.seconds:.1f} s on {cpus} CPU(s) its "
                f"{threads} thread(s) could use: the CPU, not the filesystem, may set the pace"
            )
    if checks_duration and elapsed < MIN_TIMED_SECONDS:
        flags["short"] = f"timed phase {elapsed:.2f} s < {MIN_TIMED_SECONDS:.0f} s"
    not_cold = cold_read_shortfall(expected_read, device_read)
    if not_cold:
        flags["not-cold"] = not_cold
    return flags


def cpu_bound(own_cpu: float, elapsed: float, threads: int, cpus: int | None = None) -> bool:
    """fsbench and its tools kept the CPUs their threads can use busy: own CPU time of at
    least CPU_BOUND_FRACTION x elapsed x min(threads, CPUs). A 4-thread workload on 2 CPUs
    is CPU bound at 1.6 CPU-seconds a second, a 1-thread one at 0.8."""
    usable = min(max(threads, 1), cpus or os.cpu_count() or 1)
    return elapsed >= CPU_BOUND_MIN_SECONDS and own_cpu >= CPU_BOUND_FRACTION * elapsed * usable


def cold_read_shortfall(expected: float | None, device_read: float | None) -> str | None:
    """The `not-cold` detail when the device read less than COLD_READ_FRACTION of what a
    cold read had to fetch from it; None when it did (or there is nothing to check)."""
    if not expected or device_read is None or device_read >= COLD_READ_FRACTION * expected:
        return None
    return (
        f"the device read {numbers.size(device_read)} of the {numbers.size(expected)} a cold "
        "read had to fetch: part of it came from a cache"
    )
