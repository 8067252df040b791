"""Claims of docs/running.md on real loop devices: the next `fsbench run` releases what a
killed run left; the report states the loop image's backing device and whether it is
rotational."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fsbench.execute.targets.loop import LoopImage, image_name
from fsbench.store.summaries import target_summary
from tests.helpers import fsbench, ours

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for loop devices"),
]

MiB = 1 << 20


def _backing(path: Path) -> tuple[str, bool]:
    """The block device under `path` and whether it is rotational, as util-linux says."""
    source = subprocess.run(
        ["findmnt", "-n", "-o", "SOURCE", "-T", str(path)], capture_output=True, text=True
    ).stdout.strip()
    if not source.startswith("/dev/"):
        pytest.skip(f"{path} is not on a block device ({source or 'unknown'})")
    rota = subprocess.run(
        ["lsblk", "-ndo", "ROTA", source], capture_output=True, text=True
    ).stdout.strip()
    if rota not in ("0", "1"):
        pytest.skip(f"lsblk gives no ROTA for {source}")
    return source, rota == "1"


def _states_backing(summary: str, device: str, rotational: bool) -> None:
    assert f"({device}" in summary, summary
    word = "rotational" if rotational else "non-rotational"
    assert f", {word})" in summary, summary


def test_the_target_summary_names_the_backing_device_and_rotational(workdir: Path) -> None:
    device, rotational = _backing(workdir)
    with LoopImage(workdir, 32 * MiB) as target:
        desc = target.describe()
    assert desc["backing_device"] == device and desc["rotational"] is rotational
    _states_backing(target_summary(desc), device, rotational)


def test_the_next_run_releases_what_a_killed_run_left(workdir: Path) -> None:
    common = [
        *("--workdir", str(workdir / "work"), "--db", str(workdir / "results.db")),
        *("--image-size", "1G", "--scale", "tiny", "--no-report"),
    ]
    killed = subprocess.Popen(
        [
            *(sys.executable, "-m", "fsbench.cli", "run", "--fs", "ext4", "--workload", "alloc"),
            *("--set", "method=write-4k", "--reps", "50", *common),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not ours(workdir)[1]:
            time.sleep(0.05)
        killed.kill()  # kill -9: no cleanup runs
        killed.communicate(timeout=30)
        loops, mounts = ours(workdir)
        assert loops, "the killed run should have left its loop device"
        image = workdir / "work" / image_name(killed.pid)
        assert image.exists()
        res = fsbench(
            "run",
            *("--fs", "ext4", "--workload", "alloc", "--set", "method=fallocate"),
            *("--set", "size=16M", "--reps", "1", "--warmup", "0", "--json", *common),
        )
        assert res.returncode == 0, res.stderr
        said = " ".join(res.stderr.split())  # the console wraps long lines
        gone = f"pid {killed.pid} gone"
        for loop in loops:
            assert f"released stale: detached {loop} ({image}, {gone})" in said, said
        for mount in mounts:
            assert f"released stale: unmounted {mount} (" in said, said
        assert ours(workdir) == ([], [])
        assert not image.exists()
        # The run that cleaned up states its own target: backing device, rotational or not.
        doc = json.loads(res.stdout)
        assert doc["rows"] and all(r["status"] == "ok" for r in doc["rows"])
        device, rotational = _backing(workdir)
        _states_backing(doc["target"]["summary"], device, rotational)
        report = fsbench("report", str(doc["run"]), "--db", str(workdir / "results.db"))
        assert f"target: {doc['target']['summary']}" in " ".join(report.stdout.split())
    finally:
        if killed.poll() is None:
            killed.kill()
