"""The CPUs held out of their deeper idle states (PM QoS, the kernel's CPU latency
request, as cyclictest and tuned's latency profiles make it): while `fsbench record`
measures and records, and for a whole run with `cpu_idle = "shallow"`.

strace stops the traced program at each call and waits for strace to be woken, then
wakes the program again. On a virtual machine, waking a halted virtual CPU costs exits
to the hypervisor: on a 2-vCPU guest, strace's cost per call varied severalfold from one
recording to the next (with how often strace and the program met on one CPU), and with
the request held it was several times less and steady (docs/replay.md). The request
lasts while its file stays open and goes when it is closed (by us, or by the kernel when
the process ends)."""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DEVICE = Path("/dev/cpu_dma_latency")
_VALUE = struct.Struct("=i")  # microseconds, the kernel's s32
# What the device reads while no process holds a request (PM_QOS_CPU_LATENCY_DEFAULT_VALUE).
NO_REQUEST_US = 2_000_000_000


@contextmanager
def shallow_idle(device: Path = DEVICE) -> Iterator[str | None]:
    """Request a CPU wake-up latency of 0 for the duration of the block: yields None while
    it is held, or why it could not be (one line: no such device, not root), and the
    block runs either way."""
    try:
        fd = os.open(device, os.O_WRONLY | os.O_CLOEXEC)
    except OSError as exc:
        yield f"{device}: {exc.strerror}"
        return
    try:
        try:
            os.write(fd, _VALUE.pack(0))
        except OSError as exc:
            yield f"{device}: {exc.strerror}"
            return
        yield None
    finally:
        os.close(fd)


def requested_us(device: Path = DEVICE) -> int:
    """The latency the kernel holds the CPUs to now: the least of every open request (a
    large default when none is)."""
    with device.open("rb") as f:
        value: int = _VALUE.unpack(f.read(_VALUE.size))[0]
    return value
