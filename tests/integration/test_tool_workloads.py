"""fs_mark, dbench, postmark, sqlite and gzip at tiny scale on real ext4 and xfs loop
filesystems, driven the way the runner drives a trial (prepare, settle, timed run,
flush, derive, check, inspect after a remount); and their failures, which the tools
themselves often do not signal by exit status."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import MountFactory, available_fs
from fsbench import proc, runner
from fsbench.errors import TrialFailed
from fsbench.workloads import get
from fsbench.workloads.base import Better, CacheState, Flush, Metric, Scale
from tests.helpers import context

pytestmark = pytest.mark.integration

FS = [fs for fs in ("ext4", "xfs") if fs in available_fs()]
TOOL_OF = {"fs_mark": "fs_mark", "dbench": "dbench", "postmark": "postmark", "gzip": "gzip"}


def device_read_bytes(device: str) -> int:
    fields = Path(f"/sys/block/{Path(device).name}/stat").read_text().split()
    return int(fields[2]) * 512


def trial(ctx: runner.Context, name: str, **overrides: object) -> tuple[dict[str, Metric], float]:
    """One trial as the runner does it; metrics by name and the timed seconds."""
    cls = get(name)
    work = cls()
    params = cls.params_model.model_validate({**cls.defaults(Scale.TINY), **overrides})
    work.prepare(ctx, params)
    ctx.sync()
    if cls.cache == CacheState.COLD:
        ctx.drop_caches()
    elif cls.cache == CacheState.COLD_REMOUNT:
        ctx.remount()
    read0 = device_read_bytes(ctx.device)
    t0 = time.monotonic()
    metrics = work.run(ctx, params)
    if cls.flush != Flush.NONE:
        ctx.sync()
    seconds = time.monotonic() - t0
    metrics.append(Metric("seconds", seconds, "s", Better.LOWER))
    metrics.append(
        Metric("device_read_bytes", device_read_bytes(ctx.device) - read0, "B", Better.LOWER)
    )
    metrics += work.derive(params, {m.name: m.value for m in metrics})
    for flag, detail in work.check(params, {m.name: m.value for m in metrics}).items():
        ctx.flag(flag, detail)
    if cls.has_inspect():
        ctx.remount()
        metrics += work.inspect(ctx, params)
    by_name = {m.name: m for m in metrics}
    assert len(by_name) == len(metrics), [m.name for m in metrics]
    return by_name, seconds


def needs_tool(name: str) -> None:
    tool = TOOL_OF.get(name)
    if tool and proc.which(tool) is None:
        pytest.skip(f"{tool} not installed")


CtxFactory = Callable[[str], runner.Context]


@pytest.fixture
def ctx_for(make_fs: MountFactory, loopdev: str, workdir: Path) -> runner.ContextFactory:
    def factory(fs_name: str) -> runner.Context:
        return context(fs_name, loopdev, make_fs(fs_name), workdir / "cache")

    return factory


HEADLINE_UNITS = {
    "fs_mark": ("files_per_s", "files/s"),
    "dbench": ("mb_per_s", "MB/s"),
    "postmark": ("transactions_per_s", "tx/s"),
    "sqlite": ("inserts_per_s", "inserts/s"),
    "gzip": ("mb_per_s", "MB/s"),
}


@pytest.mark.parametrize("fs_name", FS)
@pytest.mark.parametrize("name", list(HEADLINE_UNITS))
def test_tiny_trial(ctx_for: CtxFactory, fs_name: str, name: str) -> None:
    needs_tool(name)
    ctx = ctx_for(fs_name)
    metrics, seconds = trial(ctx, name)
    headline, unit = HEADLINE_UNITS[name]
    assert headline in get(name).headline
    m = metrics[headline]
    assert m.value > 0 and m.unit == unit and m.better == Better.HIGHER
    assert ctx.flags == {}

    if name == "fs_mark":
        assert metrics["files"].value == 1000
        assert metrics["files_per_s"].value == pytest.approx(1000 / seconds)
        assert metrics["fsync_avg_us"].value > 0  # -S1
        assert metrics["tool_files_per_s"].value > 0
        assert len(list((ctx.mountpoint / "fs_mark" / "d0").iterdir())) == 1000
    elif name == "dbench":
        assert metrics["max_latency_ms"].value > 0
        assert seconds >= 3  # its time limit
    elif name == "postmark":
        assert metrics["transactions"].value == 3000
        assert 0 < metrics["transaction_seconds"].value < metrics["tool_seconds"].value
        assert metrics["read_bytes"].value > 0 and metrics["written_bytes"].value > 0
        assert list((ctx.mountpoint / "postmark").iterdir()) == []  # it deletes its files
    elif name == "sqlite":
        assert metrics["inserts"].value == 300
        assert metrics["db_bytes"].value > 0  # inspect found every row after remount
    elif name == "gzip":
        assert 0.6 < metrics["ratio"].value < 0.8
        # COLD: the input came from the device, not from the page cache prepare filled.
        assert metrics["device_read_bytes"].value >= 32 << 20
        out = ctx.mountpoint / "gzip" / "input.dat.gz"
        test = subprocess.run(["gzip", "-t", str(out)], capture_output=True)
        assert test.returncode == 0, test.stderr


def test_fs_mark_sweep_options(ctx_for: CtxFactory) -> None:
    """Threads over several directories, round-robin subdirectories, two loops, -S0."""
    needs_tool("fs_mark")
    ctx = ctx_for(FS[0])
    params = {"files": 100, "size": 0, "threads": 2, "dirs": 2, "subdirs": 4}
    metrics, _ = trial(ctx, "fs_mark", **params, subdir_files=10, sync=0, loops=2)
    assert metrics["files"].value == 100 * 2 * 2
    assert "fsync_avg_us" not in metrics and "write_avg_us" not in metrics
    assert metrics["creat_avg_us"].value > 0
    files = [p for p in (ctx.mountpoint / "fs_mark").rglob("*") if p.is_file()]
    assert len(files) == 400 and all(p.stat().st_size == 0 for p in files)


def test_fs_mark_enospc_is_a_failed_trial(workdir: Path) -> None:
    needs_tool("fs_mark")
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    mnt = workdir / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4M,nr_inodes=64", "tmpfs", mnt], check=True)
    try:
        ctx = context("ext4", "tmpfs", mnt, workdir / "cache")  # tmpfs: only its mountpoint is used
        work = get("fs_mark")()
        params = work.params_model.model_validate({"files": 500, "size": "4K", "sync": 0})
        work.prepare(ctx, params)
        with pytest.raises(TrialFailed) as info:
            work.run(ctx, params)
        assert "No space left on device" in info.value.message
        assert "exit status 1" in info.value.detail
        assert not list(Path.cwd().glob("fs_log.txt*"))  # its log never lands in the cwd
    finally:
        subprocess.run(["umount", mnt], check=False)


def test_postmark_errors_are_a_failed_trial(tmp_path: Path) -> None:
    """postmark exits 0 (or dies of SIGFPE) when it cannot open its files."""
    needs_tool("postmark")
    ctx = context("ext4", "none", tmp_path, tmp_path / "cache")
    work = get("postmark")()
    params = work.params_model.model_validate(
        {"files": 10, "transactions": 20, "min_size": 500, "max_size": 1000}
    )
    # No prepare: the postmark directory does not exist.
    with pytest.raises(TrialFailed) as info:
        work.run(ctx, params)
    assert info.value.message.startswith("postmark: Error: cannot open")


def test_dbench_failure_and_missing_loadfile(tmp_path: Path) -> None:
    needs_tool("dbench")
    ctx = context("ext4", "none", tmp_path, tmp_path / "cache")
    work = get("dbench")()
    missing = work.params_model.model_validate(
        {"clients": 1, "duration": 1, "loadfile": str(tmp_path / "nope.txt")}
    )
    with pytest.raises(TrialFailed, match="loadfile"):
        work.prepare(ctx, missing)
    # No prepare: dbench's directory is missing; dbench itself exits 0.
    params = work.params_model.model_validate({"clients": 1, "duration": 1})
    with pytest.raises(TrialFailed) as info:
        work.run(ctx, params)
    assert "No such file or directory" in info.value.message
    assert "barrier" not in info.value.message
