"""Trials through the real runner: `Runner.run_cell` on a loop image (the target a plain
`fsbench run` uses), so that a workload test measures what a run measures: the same
mkfs, mount, prepare, settle, clock, flush, monitors, checks and inspect.

A test module makes one loop image for all its tests:

    @pytest.fixture(scope="module")
    def bench() -> Iterator[Bench]:
        yield from loop_bench()

and `bench.trial(fs, workload, **params)` runs one cell (the workload's tiny defaults,
overridden by params) and returns its records, one per step.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fsbench import workloads
from fsbench.execute import runner
from fsbench.execute.targets.loop import LoopImage
from fsbench.plan.model import Cell, FsConfig
from fsbench.store.records import MetricRecord, TrialRecord
from fsbench.system import filesystems, fsops
from fsbench.workloads.base import Scale
from tests.conftest import TEST_ROOT

# Where synthetic trees are kept between test modules (the runner's cache directory).
CACHE = TEST_ROOT / "cache"


@dataclass
class Bench:
    target: LoopImage
    workdir: Path

    def runner(self, scale: Scale = Scale.TINY, timeout: float | None = 600) -> runner.Runner:
        return runner.Runner(self.target, runner.mount_root(self.workdir), scale, CACHE, timeout)

    def trial(
        self,
        fs: str,
        workload: str,
        *,
        scale: Scale = Scale.TINY,
        mkfs: tuple[str, ...] = (),
        mount: str = "",
        **params: Any,
    ) -> list[TrialRecord]:
        """One cell on a fresh mkfs: every step's scale defaults (a sweep's first value)
        under `params`."""
        merged: dict[str, Any] = {}
        for step in workload.split("+"):
            for key, value in workloads.get(step).defaults(scale).items():
                merged.setdefault(key, value[0] if isinstance(value, list) else value)
        merged.update(params)
        cell = Cell(FsConfig(type=fs, mkfs=mkfs, mount=mount), workload, merged)
        return self.runner(scale).run_cell(1, 1, cell)

    @contextmanager
    def mounted(self, fs: str) -> Iterator[Path]:
        """The filesystem the last trial left on the device, mounted again to look at."""
        mnt = self.workdir / "look"
        fsops.mount(filesystems.get(fs), self.target.device, mnt, "")
        try:
            yield mnt
        finally:
            fsops.umount(mnt)

    def ok(self, fs: str, workload: str, **kwargs: Any) -> dict[str, MetricRecord]:
        """The metrics of a one-step cell that must succeed."""
        (record,) = self.trial(fs, workload, **kwargs)
        assert record.status == "ok", f"{record.message}\n{record.detail}"
        return metrics(record)


def metrics(record: TrialRecord) -> dict[str, MetricRecord]:
    by_name = {m.name: m for m in record.metrics}
    assert len(by_name) == len(record.metrics), [m.name for m in record.metrics]
    return by_name


def flags(record: TrialRecord) -> dict[str, str]:
    found: dict[str, str] = record.provenance.get("flags", {})
    return found


def loop_bench(size: int = 2 << 30) -> Iterator[Bench]:
    """A loop image (2 GiB: room for xfs, btrfs and 64 MiB data sets), released after."""
    if os.geteuid() != 0:
        pytest.skip("needs root for loop devices")
    workdir = TEST_ROOT / f"bench-{uuid.uuid4().hex[:8]}"
    workdir.mkdir(parents=True)
    target = LoopImage(workdir, size)
    try:
        target.open()
        yield Bench(target, workdir)
    finally:
        target.close()
        shutil.rmtree(workdir, ignore_errors=True)
