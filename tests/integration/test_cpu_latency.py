"""The CPU latency request a recording and a run with `cpu_idle = "shallow"` hold
(system/cpu_latency.py), on this machine's real /dev/cpu_dma_latency: held in the block,
released after it, a machine without the device goes on; a run's trials see it held."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fsbench.store.results import Store
from fsbench.system import cpu_latency
from tests.helpers import fsbench

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


# The command reads what the kernel holds the CPUs to, as the trial runs.
READ_LATENCY = (
    'python3 -c "import struct; '
    "print('latency', struct.unpack('=i', open('/dev/cpu_dma_latency', 'rb').read(4))[0])\""
)
LATENCY = '{ name = "latency_us", pattern = "latency ([0-9]+)", unit = "us", better = "lower" }'


def test_a_run_with_cpu_idle_shallow_holds_the_request_through_its_trials(tmp_path: Path) -> None:
    """`fsbench run --cpu-idle shallow`: the trial's command sees a wake-up latency of 0,
    the stored plan and the run's host facts say so, and the report's header too."""
    db = tmp_path / "r.db"
    res = fsbench(
        "run", "--fs", "ext4", "--workload", "command", "--set", f"shell={READ_LATENCY}",
        "--set", f"metric={LATENCY}", "--cpu-idle", "shallow", "--scale", "tiny",
        "--reps", "1", "--warmup", "0", "--image-size", "512M",
        "--workdir", str(tmp_path / "work"), "--db", str(db),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    doc = json.loads(fsbench("report", "--db", str(db), "--format", "json").stdout)
    (row,) = [r for r in doc["rows"] if r["metric"] == "latency_us"]
    assert row["mean"] == 0
    (run,) = Store(db).list_runs()
    assert run.plan["cpu_idle"] == "shallow"
    assert run.host.cpu_latency_us == 0
    assert "CPUs held out of deep idle" in fsbench("report", "--db", str(db)).stdout


def test_a_bad_cpu_idle_is_one_line_with_nothing_stored(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    res = fsbench(
        "run", "--fs", "ext4", "--workload", "alloc", "--cpu-idle", "deep",
        "--workdir", str(tmp_path / "work"), "--db", str(db),
    )  # fmt: skip
    assert res.returncode != 0
    assert len(res.stderr.strip().splitlines()) == 1 and "cpu_idle" in res.stderr
    assert not db.exists() or Store(db).list_runs() == []
