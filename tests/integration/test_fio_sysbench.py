"""fio profiles and sysbench-fileio on real filesystems (ext4, xfs) and on the bare loop
device (`raw`), at tiny sizes: the steps the runner takes (prepare, settle, run, flush),
and the headline metrics present and positive. Real tools, real loop devices."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import MountFactory, available_fs
from fsbench import runner
from fsbench.errors import TrialFailed
from fsbench.workloads.base import CacheState, Metric, Workload
from fsbench.workloads.fio import Fio
from fsbench.workloads.fio.profiles import (
    PROFILES,
    RAND_RW,
    SEQ_READ,
    SEQ_WRITE,
    THREADED,
    FioParams,
)
from fsbench.workloads.sysbench_fileio import SUBDIR, SysbenchFileio, SysbenchFileioParams
from tests.helpers import context

pytestmark = pytest.mark.integration

FS = [f for f in ("ext4", "xfs") if f in available_fs()]
MIB = 1 << 20
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="no fio")
needs_sysbench = pytest.mark.skipif(shutil.which("sysbench") is None, reason="no sysbench")


def trial(
    work: Workload, ctx: runner.Context, params: FioParams | SysbenchFileioParams
) -> dict[str, Metric]:
    """What the runner does around a workload: prepare, settle, run, flush."""
    raw = ctx.fs_type == "raw"
    work.prepare(ctx, params)
    if not raw:
        ctx.sync()
    if work.cache == CacheState.COLD_REMOUNT and not raw:
        ctx.remount()
    else:
        ctx.drop_caches()
    metrics = work.run(ctx, params)
    if not raw:
        ctx.sync()
    by_name = {m.name: m for m in metrics}
    assert len(by_name) == len(metrics), "a metric reported twice"
    return by_name


def positive(metrics: dict[str, Metric], *names: str) -> None:
    for name in names:
        assert name in metrics, (name, sorted(metrics))
        assert metrics[name].value > 0, metrics[name]


HEADLINE = {
    SEQ_WRITE: ("write_mib_s", "write_iops", "write_clat_p99_us", "write_lat_mean_us"),
    SEQ_READ: ("read_mib_s", "read_iops", "read_clat_p99_us"),
    RAND_RW: (
        "read_mib_s",
        "write_mib_s",
        "read_iops",
        "write_iops",
        "read_clat_p50_us",
        "read_clat_p99_9_us",
        "write_clat_p99_us",
    ),
    THREADED: ("seq_write_mib_s", "seq_read_mib_s", "rand_read_mib_s", "rand_write_mib_s"),
}
ABSENT = {
    SEQ_WRITE: ("read_mib_s",),
    SEQ_READ: ("write_mib_s",),
    RAND_RW: ("seq_write_mib_s",),
    THREADED: ("write_mib_s", "read_mib_s"),
}


@needs_fio
@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("fs_name", FS)
def test_fio_profiles(make_fs: MountFactory, loopdev: str, fs_name: str, profile: str) -> None:
    mnt = make_fs(fs_name)
    ctx = context(fs_name, loopdev, mnt)
    threads = 2 if profile == THREADED else 1
    params = FioParams(profile=profile, size="32M", runtime=1, threads=threads)
    metrics = trial(Fio(), ctx, params)
    positive(metrics, *HEADLINE[profile])
    for name in ABSENT[profile]:
        assert name not in metrics
    for m in metrics.values():
        assert (
            m.name in Fio.headline
            or m.name.endswith(("_iops", "_us", "_mib_s"))
            or (m.name == "bytes_written" and m.value > 0)  # for write amplification
        )
    files = sorted(p.name for p in mnt.iterdir() if p.name.startswith("fsbench-fio"))
    if profile == RAND_RW:
        assert files == ["fsbench-fio.shared"]
        assert (mnt / files[0]).stat().st_size == 32 * MIB
    else:
        assert len(files) == threads
        assert all((mnt / f).stat().st_size == 32 * MIB // threads for f in files)
    if profile == SEQ_WRITE:
        # written, not preallocated, and on disk: every block allocated
        st = (mnt / files[0]).stat()
        assert st.st_blocks * 512 >= 32 * MIB


JOB = """\
; a tiny job: a writer, then two concurrent readers of its file
[global]
directory=/nonexistent
size=4M
bs=64k
ioengine=psync

[writer]
rw=write
filename=jobdata
end_fsync=1

[readers]
stonewall
rw=randread
filename=jobdata
numjobs=2
"""


@needs_fio
@pytest.mark.parametrize("fs_name", FS[:1])
def test_fio_job_file(make_fs: MountFactory, loopdev: str, workdir: Path, fs_name: str) -> None:
    job = workdir / "tiny.fio"
    job.write_text(JOB)
    mnt = make_fs(fs_name)
    ctx = context(fs_name, loopdev, mnt)
    params = FioParams(profile=f"job={job}", size="1M", runtime=1)
    metrics = trial(Fio(), ctx, params)
    positive(metrics, "writer_write_mib_s", "writer_write_iops", "readers_read_mib_s")
    assert "readers_write_mib_s" not in metrics
    # the job's own directory= was replaced by the filesystem under test
    assert (mnt / "jobdata").stat().st_size == 4 * MIB

    bad = workdir / "bad.fio"
    bad.write_text("[a]\nrw=write\nsize=1M\nfilename=/etc/fsbench-must-not-exist\n")
    with pytest.raises(TrialFailed, match="outside"):
        Fio().prepare(ctx, FioParams(profile=f"job={bad}", size="1M", runtime=1))
    with pytest.raises(TrialFailed, match="job file"):
        Fio().prepare(ctx, FioParams(profile=f"job={workdir}/missing.fio", size="1M", runtime=1))


@needs_fio
@pytest.mark.parametrize("profile", PROFILES)
def test_fio_raw_device(loopdev: str, workdir: Path, profile: str) -> None:
    ctx = context("raw", loopdev, workdir / "not-mounted")
    threads = 2 if profile == THREADED else 1
    # threaded-io on the device is 4 KiB O_DIRECT: keep it small
    size = "8M" if profile == THREADED else "32M"
    params = FioParams(profile=profile, size=size, runtime=1, threads=threads)
    metrics = trial(Fio(), ctx, params)
    positive(metrics, *HEADLINE[profile])
    assert not ctx.mountpoint.exists()
    # the data went to the device itself (fio's buffers are not zeros)
    with open(loopdev, "rb") as dev:
        assert dev.read(4096).strip(b"\0")


@needs_fio
def test_fio_raw_refuses_more_than_the_device(loopdev: str, workdir: Path) -> None:
    ctx = context("raw", loopdev, workdir / "not-mounted")
    with pytest.raises(TrialFailed, match="larger than"):
        Fio().prepare(ctx, FioParams(profile=SEQ_READ, size="2G", runtime=1))


@needs_sysbench
@pytest.mark.parametrize(
    ("mode", "layout", "direct"),
    [("rndrw", "4x4M", True), ("seqwr", "16x1M", False), ("seqrd", "1x16M", False)],
)
@pytest.mark.parametrize("fs_name", FS)
def test_sysbench_fileio(
    make_fs: MountFactory, loopdev: str, fs_name: str, mode: str, layout: str, direct: bool
) -> None:
    mnt = make_fs(fs_name)
    ctx = context(fs_name, loopdev, mnt)
    params = SysbenchFileioParams.model_validate(
        {"mode": mode, "layout": layout, "duration": 1, "direct": direct}
    )
    metrics = trial(SysbenchFileio(), ctx, params)
    count, size = params.file_num, params.total_size // params.file_num
    files = sorted((mnt / SUBDIR).iterdir())
    assert len(files) == count and all(f.stat().st_size == size for f in files)
    if mode in ("rndrw", "seqrd"):
        positive(metrics, "read_mib_s", "reads_s")
    if mode in ("rndrw", "seqwr"):
        positive(metrics, "write_mib_s", "writes_s", "fsyncs_s")  # fsync every 100 requests
    if mode == "seqrd":
        assert "write_mib_s" not in metrics and "fsyncs_s" not in metrics
    if mode == "seqwr":
        assert "read_mib_s" not in metrics
    positive(metrics, "lat_avg_ms", "lat_max_ms")
    assert metrics["lat_p95_ms"].value >= 0  # 2 decimals in ms: fast ops print 0.00
