"""fio profiles and sysbench-fileio on real filesystems (ext4, xfs) and on the bare loop
device (`raw`), at tiny sizes, through the real runner (`Runner.run_cell`): the headline
metrics present and positive, the files where they belong. Real tools, real loop devices."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import available_fs
from fsbench.store.records import MetricRecord
from fsbench.workloads.fio import Fio
from fsbench.workloads.fio.profiles import (
    RAND_RW,
    SEQ_READ,
    SEQ_WRITE,
    SEQ_WRITE_DIRECT,
    THREADED,
)
from fsbench.workloads.fio.profiles import (
    names as profile_names,
)
from fsbench.workloads.sysbench_fileio import SUBDIR
from tests.runcell import Bench, flags, loop_bench, metrics

pytestmark = pytest.mark.integration

FS = [f for f in ("ext4", "xfs") if f in available_fs()]
MIB = 1 << 20
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="no fio")
needs_sysbench = pytest.mark.skipif(shutil.which("sysbench") is None, reason="no sysbench")


# What the runner adds to every trial's metrics.
RUNNER = {
    "seconds",
    "flush_seconds",
    "device_write_bytes",
    "device_read_bytes",
    "device_util_pct",
    "write_amplification",
    "cpu_user_s",
    "cpu_sys_s",
    "bytes_written",
}


@pytest.fixture(scope="module")
def bench() -> Iterator[Bench]:
    yield from loop_bench(1 << 30)


def trial(bench: Bench, fs: str, workload: str, **params: Any) -> dict[str, MetricRecord]:
    (record,) = bench.trial(fs, workload, **params)
    assert record.status == "ok", f"{record.message}\n{record.detail}"
    assert "not-cold" not in flags(record)
    return metrics(record)


def positive(metrics: dict[str, MetricRecord], *names: str) -> None:
    for name in names:
        assert name in metrics, (name, sorted(metrics))
        assert metrics[name].value > 0, metrics[name]


HEADLINE = {
    SEQ_WRITE: ("write_mib_s", "write_iops", "write_clat_p99_us", "write_lat_mean_us"),
    SEQ_WRITE_DIRECT: ("write_mib_s", "write_iops", "write_clat_p99_us", "write_lat_mean_us"),
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
    SEQ_WRITE_DIRECT: ("read_mib_s",),
    SEQ_READ: ("write_mib_s",),
    RAND_RW: ("seq_write_mib_s",),
    THREADED: ("write_mib_s", "read_mib_s"),
}


@needs_fio
@pytest.mark.parametrize("profile", profile_names())
@pytest.mark.parametrize("fs_name", FS)
def test_fio_profiles(bench: Bench, fs_name: str, profile: str) -> None:
    threads = 2 if profile == THREADED else 1
    m = trial(bench, fs_name, "fio", profile=profile, size="32M", runtime=1, threads=threads)
    positive(m, *HEADLINE[profile])
    for name in ABSENT[profile]:
        assert name not in m
    for name in set(m) - RUNNER:
        assert name in Fio.headline or name.endswith(("_iops", "_us", "_mib_s")), name
    if profile != SEQ_READ:
        assert m["bytes_written"].value > 0  # for write amplification
    with bench.mounted(fs_name) as mnt:
        files = sorted(p.name for p in mnt.iterdir() if p.name.startswith("fsbench-fio"))
        if profile == RAND_RW:
            assert files == ["fsbench-fio.shared"]
            assert (mnt / files[0]).stat().st_size == 32 * MIB
        else:
            assert len(files) == threads
            assert all((mnt / f).stat().st_size == 32 * MIB // threads for f in files)
        if profile in (SEQ_WRITE, SEQ_WRITE_DIRECT):
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
def test_fio_job_file(bench: Bench, tmp_path: Path, fs_name: str) -> None:
    job = tmp_path / "tiny.fio"
    job.write_text(JOB)
    m = trial(bench, fs_name, "fio", profile=f"job={job}", size="1M", runtime=1)
    positive(m, "writer_write_mib_s", "writer_write_iops", "readers_read_mib_s")
    assert "readers_write_mib_s" not in m
    with bench.mounted(fs_name) as mnt:
        # the job's own directory= was replaced by the filesystem under test
        assert (mnt / "jobdata").stat().st_size == 4 * MIB

    bad = tmp_path / "bad.fio"
    bad.write_text("[a]\nrw=write\nsize=1M\nfilename=/etc/fsbench-must-not-exist\n")
    for profile, message in ((f"job={bad}", "outside"), (f"job={tmp_path}/nope.fio", "job file")):
        (record,) = bench.trial(fs_name, "fio", profile=profile, size="1M", runtime=1)
        assert record.status == "failed" and message in record.message, record.message


@needs_fio
@pytest.mark.parametrize("profile", profile_names())
def test_fio_raw_device(bench: Bench, profile: str) -> None:
    threads = 2 if profile == THREADED else 1
    # threaded-io on the device is 4 KiB O_DIRECT: keep it small
    size = "8M" if profile == THREADED else "32M"
    m = trial(bench, "raw", "fio", profile=profile, size=size, runtime=1, threads=threads)
    positive(m, *HEADLINE[profile])
    # the data went to the device itself (fio's buffers are not zeros)
    with open(bench.target.device, "rb") as dev:
        assert dev.read(4096).strip(b"\0")


@needs_fio
def test_fio_raw_refuses_more_than_the_device(bench: Bench) -> None:
    (record,) = bench.trial("raw", "fio", profile=SEQ_READ, size="2G", runtime=1)
    assert record.status == "failed" and "larger than" in record.message, record.message


@needs_sysbench
@pytest.mark.parametrize(
    ("mode", "layout", "direct"),
    [("rndrw", "4x4M", True), ("seqwr", "16x1M", False), ("seqrd", "1x16M", False)],
)
@pytest.mark.parametrize("fs_name", FS)
def test_sysbench_fileio(bench: Bench, fs_name: str, mode: str, layout: str, direct: bool) -> None:
    metrics = trial(
        bench, fs_name, "sysbench-fileio", mode=mode, layout=layout, duration=1, direct=direct
    )
    count, size = (int(x) for x in layout.replace("M", "").split("x"))
    with bench.mounted(fs_name) as mnt:
        files = sorted((mnt / SUBDIR).iterdir())
        assert len(files) == count and all(f.stat().st_size == size * MIB for f in files)
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
