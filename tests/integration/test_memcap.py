"""The `mem` knob on this machine's real memory cgroup: a step runs capped (what it starts
too), fsbench leaves the group and removes it on every path, the contention load stays
outside the cap, a killed run's group is removed by the next run's cleanup, and the cap
caps: a file read twice in one trial is read again from the device under a cap smaller
than the file, and from the page cache under a larger one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsbench.execute.targets import stale
from fsbench.system import knobs, memcap
from fsbench.system.errors import FsbenchError
from tests.helpers import fsbench

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def needs_memory_cgroup() -> None:
    if os.geteuid() != 0 or memcap.hierarchy() is None:
        pytest.skip("needs root and a memory cgroup")


def _group_of(pid: int) -> str:
    h = memcap.hierarchy()
    assert h is not None
    return str(memcap.own_group(h, Path(f"/proc/{pid}/cgroup").read_text()))


def test_a_step_and_what_it_starts_run_capped_then_everything_goes_back() -> None:
    home = _group_of(os.getpid())
    h = memcap.hierarchy()
    assert h is not None
    with memcap.capped(256 << 20) as info:
        group = info["cgroup"].split(":", 1)[1]
        assert _group_of(os.getpid()) == group
        limit = int((Path(group) / h.limit_file).read_text())
        assert limit == info["limit"] == (256 << 20) + info["fsbench_rss"]
        child = subprocess.run(["cat", "/proc/self/cgroup"], capture_output=True, text=True)
        assert group.removeprefix(str(h.mount)) in child.stdout  # children are capped too
        outside = subprocess.run(
            [sys.executable, "-c", "print(open('/proc/self/cgroup').read())"],
            preexec_fn=memcap.leave,
            capture_output=True,
            text=True,
        )
        assert group.removeprefix(str(h.mount)) not in outside.stdout
    assert _group_of(os.getpid()) == home and not Path(group).exists()
    with pytest.raises(RuntimeError), memcap.capped(256 << 20) as info:
        raise RuntimeError("a failing step")
    assert _group_of(os.getpid()) == home and not Path(info["cgroup"].split(":", 1)[1]).exists()


def test_knob_values() -> None:
    assert knobs.validate("mem", "2048M") == "2G"
    with pytest.raises(FsbenchError, match="at least 64M"):
        knobs.validate("mem", "1M")


def test_a_killed_runs_group_is_removed(workdir: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    h = memcap.hierarchy()
    assert h is not None
    group = memcap.parent_for(h) / f"fsbench-{dead.pid}"
    group.mkdir()
    try:
        assert (group, dead.pid) in memcap.stale_groups()
        lines = stale.release_stale(workdir)
        assert f"removed memory cgroup {group} (pid {dead.pid} gone)" in lines
        assert not group.exists()
    finally:
        if group.exists():
            group.rmdir()


MIB = 1 << 20
# One trial reads the same file twice, one fio job after the other: the first cold (fio
# drops the file's pages first), the second as the page cache left it.
READ_TWICE = """\
[global]
ioengine=psync
rw=read
bs=1M
size={size}
filename=fsbench-read-twice
thread=1

[cold]
invalidate=1

[again]
stonewall
invalidate=0
"""


def read_twice(workdir: Path, size_mib: int, caps: str, image: str) -> dict[str, float]:
    """Device bytes read per `mem` cap by a trial that reads a `size_mib` file twice."""
    job = workdir / f"read-twice-{size_mib}.fio"
    job.write_text(READ_TWICE.format(size=f"{size_mib}M"))
    res = fsbench(
        "run", "--fs", "ext4", "--workload", "fio", "--set", f"profile=job={job}",
        "--knob", f"mem={caps}", "--scale", "tiny", "--reps", "1", "--warmup", "0",
        "--image-size", image, "--workdir", str(workdir / "work"),
        "--db", str(workdir / f"twice-{size_mib}.db"), "--json", timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)["rows"]
    return {r["knobs"]["mem"]: r["mean"] for r in rows if r["metric"] == "device_read_bytes"}


# Alone: its second read counts on the page cache the first left, and another worker's
# cold trial drops every cache of the machine (fc7 on 2026-11-28: 805 MB read under 1G).
@pytest.mark.alone
def test_a_file_read_twice_comes_back_from_the_device_only_under_a_smaller_cap(
    workdir: Path,
) -> None:
    """384 MiB read twice: under 128M the second read misses the cache (LRU keeps the
    file's tail, the read starts at its head) and goes to the device again; under 1G the
    whole file stays cached and the second read costs the device nothing. Without the
    cgroup's limit both would read it once."""
    device = read_twice(workdir, 384, "128M,1G", "1G")
    assert set(device) == {"128M", "1G"}
    assert device["128M"] >= 1.8 * 384 * MIB, device  # twice from the device
    assert 0.9 * 384 * MIB <= device["1G"] <= 1.1 * 384 * MIB, device  # once
    assert memcap.stale_groups() == []


def test_fio_under_each_cap_reads_from_the_device(workdir: Path) -> None:
    """The issue's check: a row per memory cap, the capped reads measured on the device."""
    res = fsbench(
        "run", "--fs", "ext4", "--workload", "fio", "--set", "profile=seq-read",
        "--knob", "mem=256M,2G", "--scale", "tiny", "--reps", "1", "--warmup", "0",
        "--image-size", "1G", "--workdir", str(workdir / "work"), "--db", str(workdir / "r.db"),
        "--json", timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)["rows"]
    caps = {r["knobs"]["mem"] for r in rows if r["metric"] == "read_mib_s"}
    assert caps == {"256M", "2G"}
    reads = [r for r in rows if r["metric"] == "device_read_bytes"]
    assert len(reads) == 2 and all(r["mean"] > 32 << 20 for r in reads)
    assert memcap.stale_groups() == []
