"""Knobs are restored after a trial, also when the trial fails."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from fsbench import knobs
from fsbench.errors import Unsupported

pytestmark = pytest.mark.integration


def _scheduler(loopdev: str) -> str:
    text = Path(f"/sys/block/{os.path.basename(loopdev)}/queue/scheduler").read_text()
    m = re.search(r"\[([^\]]+)\]", text)
    assert m
    return m.group(1)


def test_scheduler_and_sysctls_restored_after_failure(loopdev: str) -> None:
    sched = _scheduler(loopdev)
    ratio = Path("/proc/sys/vm/dirty_ratio").read_text()
    dirty_bytes = Path("/proc/sys/vm/dirty_bytes").read_text()
    other = "bfq" if sched != "bfq" else "mq-deadline"
    with pytest.raises(RuntimeError, match="workload blew up"):
        with knobs.applied({"scheduler": other, "vm.dirty_bytes": "67108864"}, loopdev) as on:
            assert on == {"scheduler": other, "vm.dirty_bytes": "67108864"}
            assert _scheduler(loopdev) == other
            # Setting dirty_bytes zeroes dirty_ratio: both must come back.
            assert Path("/proc/sys/vm/dirty_ratio").read_text().strip() == "0"
            raise RuntimeError("workload blew up")
    assert _scheduler(loopdev) == sched
    assert Path("/proc/sys/vm/dirty_ratio").read_text() == ratio
    assert Path("/proc/sys/vm/dirty_bytes").read_text() == dirty_bytes


def test_refused_value_is_unsupported_and_nothing_changes(loopdev: str) -> None:
    ratio = Path("/proc/sys/vm/dirty_ratio").read_text()
    with pytest.raises(Unsupported, match="vm.dirty_ratio=500 refused"):
        with knobs.applied({"vm.dirty_ratio": "500"}, loopdev):
            pass
    assert Path("/proc/sys/vm/dirty_ratio").read_text() == ratio


def test_busy_contention_runs_and_stops(workdir: Path) -> None:
    with knobs.contention("busy", workdir / "load") as info:
        assert "--cpu" in info["load"]
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
        names = []
        for pid in pids:
            try:
                names.append(Path(f"/proc/{pid}/comm").read_text().strip())
            except OSError:
                pass
        assert any(n.startswith("stress-ng") for n in names)
    leftover = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            if Path(f"/proc/{pid}/comm").read_text().startswith("stress-ng"):
                leftover.append(pid)
        except OSError:
            pass
    assert leftover == []
