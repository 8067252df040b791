"""The `sampler` monitor, the default one: 10 Hz beside the timed phase of every trial,
the target device's counters (/sys/block/<dev>/stat), CPU user/sys/iowait/idle
(/proc/stat), Dirty and Writeback (/proc/meminfo). Reading three small proc files ten
times a second costs well under 1% of a core (bench/monitor_overhead.py measures it).
It yields the trial's timeline and what the device and the CPUs did (device bytes, write
amplification, utilisation, fsbench's own CPU seconds); the runner's `cpu-bound` check
reads its totals."""

from __future__ import annotations

import os
import resource
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from fsbench.system.metric import Better, Metric
from fsbench.system.monitors import diskstats
from fsbench.system.monitors.base import Monitor, Output

TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class CpuTimes(diskstats.Counters):
    user: float  # seconds, all CPUs, user + nice
    system: float  # system + irq + softirq
    iowait: float
    idle: float

    @property
    def total(self) -> float:
        return self.user + self.system + self.iowait + self.idle


def read_cpu(path: Path = Path("/proc/stat")) -> CpuTimes:
    with path.open() as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    fields += [0] * (8 - len(fields))
    user, nice, system, idle, iowait, irq, softirq, steal = fields[:8]
    return CpuTimes(
        (user + nice) / TICK, (system + irq + softirq) / TICK, iowait / TICK, (idle + steal) / TICK
    )


def read_dirty(path: Path = Path("/proc/meminfo")) -> tuple[int, int]:
    dirty = writeback = 0
    with path.open() as f:
        for line in f:
            if line.startswith("Dirty:"):
                dirty = int(line.split()[1]) * 1024
            elif line.startswith("Writeback:"):
                writeback = int(line.split()[1]) * 1024
                break
    return dirty, writeback


@dataclass(frozen=True)
class Sample:
    t: float  # seconds since the timed phase started
    read_bps: float
    write_bps: float
    util_pct: float  # device busy time / wall time
    cpu_user_pct: float  # of all CPUs
    cpu_sys_pct: float
    cpu_iowait_pct: float
    dirty_bytes: int
    writeback_bytes: int

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True)
class Totals:
    seconds: float
    disk: diskstats.DiskStat | None
    cpu: CpuTimes  # the whole machine
    own_user: float  # fsbench and the tools it ran (waited-for children), seconds
    own_system: float


def _own_cpu() -> tuple[float, float]:
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + kids.ru_utime, me.ru_stime + kids.ru_stime


class Sampler:
    """`with Sampler(device) as s: ...` then `s.samples` and `s.totals`."""

    def __init__(self, device: str, hz: float = 10.0) -> None:
        self.device = device
        self.interval = 1.0 / hz
        self.samples: list[Sample] = []
        self.totals: Totals | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="fsbench-sampler", daemon=True)

    def __enter__(self) -> Sampler:
        self._t0 = time.monotonic()
        self._disk0 = diskstats.read(self.device)
        self._cpu0 = read_cpu()
        self._own0 = _own_cpu()
        self._prev = (self._t0, self._disk0, self._cpu0)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sample()  # the last interval: the timeline covers the whole phase
        disk1, cpu1 = diskstats.read(self.device), read_cpu()
        elapsed = time.monotonic() - self._t0
        disk = disk1 - self._disk0 if disk1 and self._disk0 else None
        own = _own_cpu()
        self.totals = Totals(
            elapsed, disk, cpu1 - self._cpu0, own[0] - self._own0[0], own[1] - self._own0[1]
        )

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def _sample(self) -> None:
        prev_t, prev_disk, prev_cpu = self._prev
        now, disk, cpu = time.monotonic(), diskstats.read(self.device), read_cpu()
        dirty, writeback = read_dirty()
        dt = now - prev_t
        if dt <= 0.001:
            return
        dcpu = cpu - prev_cpu
        total = dcpu.total or 1.0
        d = disk - prev_disk if disk and prev_disk else None
        self.samples.append(
            Sample(
                t=round(now - self._t0, 3),
                read_bps=d.read_bytes / dt if d else 0.0,
                write_bps=d.write_bytes / dt if d else 0.0,
                util_pct=min(100.0, 100.0 * d.busy_ms / 1000 / dt) if d else 0.0,
                cpu_user_pct=100.0 * dcpu.user / total,
                cpu_sys_pct=100.0 * dcpu.system / total,
                cpu_iowait_pct=100.0 * dcpu.iowait / total,
                dirty_bytes=dirty,
                writeback_bytes=writeback,
            )
        )
        self._prev = (now, disk, cpu)


class SamplerMonitor(Monitor):
    """The Sampler as a monitor: started and stopped around the timed phase."""

    name = "sampler"
    summary = (
        "10 Hz: device read/write bytes and utilisation, CPU user/sys/iowait, Dirty and "
        "Writeback; device bytes, write amplification, fsbench's CPU seconds"
    )

    def __init__(self) -> None:
        super().__init__()
        self.sampler: Sampler | None = None

    def start(self) -> None:
        assert self.site is not None, "attach first"
        self.sampler = Sampler(self.site.device).__enter__()

    def stop(self) -> None:
        if self.sampler is not None and self.sampler.totals is None:
            self.sampler.__exit__(None, None, None)

    @property
    def totals(self) -> Totals | None:
        return self.sampler.totals if self.sampler is not None else None

    def output(self, metrics: Sequence[Metric]) -> Output:
        samples = [s.as_dict() for s in self.sampler.samples] if self.sampler else []
        return Output(samples=samples, metrics=totals_metrics(self.totals, metrics))


def totals_metrics(totals: Totals | None, metrics: Sequence[Metric]) -> list[Metric]:
    """What the device and the CPUs did during the timed phase."""
    if totals is None:
        return []
    out = []
    elapsed = max(totals.seconds, 1e-9)
    if totals.disk is not None:
        d = totals.disk
        out += [
            Metric("device_write_bytes", d.write_bytes, "B", Better.LOWER),
            Metric("device_read_bytes", d.read_bytes, "B", Better.LOWER),
            Metric(
                "device_util_pct", min(100.0, 100.0 * d.busy_ms / 1000 / elapsed), "%", Better.LOWER
            ),
        ]
        written = next((m.value for m in metrics if m.name == "bytes_written"), None)
        if written:
            # Device bytes per byte the workload wrote: journal, metadata, COW, parity.
            out.append(Metric("write_amplification", d.write_bytes / written, "x", Better.LOWER))
    # CPU of fsbench and the tools it ran (the kernel's own writeback threads are not in
    # it); the machine-wide split is in the timeline.
    out += [
        Metric("cpu_user_s", totals.own_user, "s", Better.LOWER),
        Metric("cpu_sys_s", totals.own_system, "s", Better.LOWER),
    ]
    return out


def totals_of(monitors: Iterable[Monitor]) -> Totals | None:
    """The sampler's totals among a trial's monitors (None when it did not run): what the
    runner's CPU-bound check reads."""
    return next((m.totals for m in monitors if isinstance(m, SamplerMonitor)), None)
