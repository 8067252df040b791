"""The CPU latency request a recording holds (system/cpu_latency.py), on this machine's
real /dev/cpu_dma_latency: held in the block, released after it, and a machine without
the device records anyway."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fsbench.system import cpu_latency

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not os.access(cpu_latency.DEVICE, os.W_OK), reason="no writable /dev/cpu_dma_latency"
    ),
]


def _our_requests() -> int:
    """Our process's descriptors open on the device: each one a request the kernel holds."""
    fds = Path("/proc/self/fd")
    return sum(os.path.realpath(fds / fd) == str(cpu_latency.DEVICE) for fd in os.listdir(fds))


def test_the_request_is_held_in_the_block_and_released_after() -> None:
    assert _our_requests() == 0
    with cpu_latency.shallow_idle() as not_held:
        assert not_held is None
        assert cpu_latency.requested_us() == 0  # ours is the least there can be
        assert _our_requests() == 1
    assert _our_requests() == 0


def test_released_when_the_block_fails() -> None:
    with pytest.raises(RuntimeError), cpu_latency.shallow_idle():
        assert _our_requests() == 1
        raise RuntimeError("the recorded command failed")
    assert _our_requests() == 0


def test_without_the_device_the_block_runs_and_says_why(tmp_path: Path) -> None:
    ran = False
    with cpu_latency.shallow_idle(tmp_path / "cpu_dma_latency") as not_held:
        ran = True
    assert ran
    assert not_held == f"{tmp_path / 'cpu_dma_latency'}: No such file or directory"
