"""fio and sysbench-fileio: parsers on real captured output (tests/data, fio 3.33 and
sysbench 1.0.20 on ext4 over a loop device), error classification, job building,
job-file rewriting and parameter models. No tool is run here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fsbench.execute.checks import cold_read_shortfall
from fsbench.system import proc
from fsbench.system.errors import TrialFailed, Unsupported
from fsbench.workloads import get
from fsbench.workloads.base import Better, Scale
from fsbench.workloads.fio import Fio
from fsbench.workloads.fio.jobfile import rewrite_job_file
from fsbench.workloads.fio.parse import FioOutputError, job_metrics, parse_fio_json
from fsbench.workloads.fio.profiles import (
    RAND_RW,
    SEQ_READ,
    SEQ_WRITE,
    SEQ_WRITE_DIRECT,
    THREADED,
    FioParams,
    layout_phase,
    run_phases,
)
from fsbench.workloads.fio.profiles import (
    names as profile_names,
)
from fsbench.workloads.fio.tool import Where, check_fio
from fsbench.workloads.sysbench_fileio import (
    CLASSIC_LAYOUTS,
    MODES,
    SysbenchFileio,
    SysbenchFileioParams,
    _failure,
    parse_layout,
    parse_sysbench_fileio,
    result_metrics,
    run_args,
)

DATA = Path(__file__).resolve().parent.parent / "data"
MIB = 1 << 20


def load(name: str) -> str:
    return (DATA / name).read_text()


def raw_job(name: str, index: int = 0) -> dict[str, Any]:
    job: dict[str, Any] = json.loads(load(name))["jobs"][index]
    return job


def result(returncode: int, stdout: str = "", stderr: str = "") -> proc.Result:
    return proc.Result(("fio",), returncode, stdout, stderr)


# -- fio JSON ----------------------------------------------------------------------------


def test_fio_seq_write_json() -> None:
    (job,) = parse_fio_json(load("fio_seq_write.json"))
    raw = raw_job("fio_seq_write.json")["write"]
    assert (job.name, job.groupid, job.error) == ("seq-write", 0, 0)
    assert set(job.directions) == {"write"}  # no read I/O: no read metrics
    w = job.directions["write"]
    assert w.bw_mib_s == pytest.approx(raw["bw_bytes"] / MIB)
    assert w.bw_mib_s == pytest.approx(raw["bw"] / 1024, rel=1e-3)  # KiB/s agrees
    assert w.iops == pytest.approx(raw["iops"])
    assert w.io_bytes == 16 * MIB and w.total_ios == 16
    assert w.lat_mean_us == pytest.approx(raw["lat_ns"]["mean"] / 1000)
    pct = raw["clat_ns"]["percentile"]
    assert w.clat_percentiles_us == {
        "p50": pct["50.000000"] / 1000,
        "p95": pct["95.000000"] / 1000,
        "p99": pct["99.000000"] / 1000,
        "p99_9": pct["99.900000"] / 1000,
    }

    metrics = {m.name: m for m in job_metrics([job])}
    assert list(metrics) == [
        "write_mib_s",
        "write_iops",
        "write_lat_mean_us",
        "write_clat_p50_us",
        "write_clat_p95_us",
        "write_clat_p99_us",
        "write_clat_p99_9_us",
    ]
    assert metrics["write_mib_s"].unit == "MiB/s"
    assert metrics["write_mib_s"].better == Better.HIGHER
    assert metrics["write_clat_p99_us"].unit == "us"
    assert metrics["write_clat_p99_us"].better == Better.LOWER
    assert all(m.value > 0 for m in metrics.values())


def test_fio_rand_rw_both_directions_and_prefix() -> None:
    (job,) = parse_fio_json(load("fio_rand_rw_16k_direct.json"))
    raw = raw_job("fio_rand_rw_16k_direct.json")
    assert set(job.directions) == {"read", "write"}
    for ddir in ("read", "write"):
        d = job.directions[ddir]
        assert d.iops == pytest.approx(raw[ddir]["iops"])
        # 16 KiB blocks: bandwidth is IOPS x 16 KiB
        assert d.bw_mib_s == pytest.approx(d.iops * 16 / 1024, rel=0.01)
        assert d.clat_percentiles_us["p99_9"] >= d.clat_percentiles_us["p50"] > 0
    names = {m.name for m in job_metrics([job], prefix="rand_")}
    assert {"rand_read_mib_s", "rand_write_iops", "rand_read_clat_p99_9_us"} <= names
    assert not any(n.startswith(("read", "write")) for n in names)


def test_fio_job_file_groups_are_prefixed() -> None:
    jobs = parse_fio_json(load("fio_jobfile_two_groups.json"))
    # group_reporting (added by the rewrite) merges the two readers into one entry
    assert [(j.name, j.groupid) for j in jobs] == [("writer", 0), ("readers", 1)]
    metrics = {m.name: m.value for m in job_metrics(jobs)}
    assert metrics["writer_write_mib_s"] > 0
    assert metrics["readers_read_mib_s"] == pytest.approx(1000.0)  # 2 x 8 MiB, cached
    assert "writer_read_mib_s" not in metrics and "read_mib_s" not in metrics


def test_fio_duplicate_job_names_get_group_ids() -> None:
    text = load("fio_jobfile_two_groups.json")
    data = json.loads(text)
    for job in data["jobs"]:
        job["jobname"] = "Same Name"
    names = {m.name for m in job_metrics(parse_fio_json(json.dumps(data)))}
    assert "same_name_g0_write_mib_s" in names and "same_name_g1_read_mib_s" in names


def test_fio_notes_before_json_and_bad_output() -> None:
    text = "note: both iodepth >= 1 and synchronous I/O engine are selected\n"
    assert len(parse_fio_json(text + load("fio_seq_write.json"))) == 1
    with pytest.raises(FioOutputError):
        parse_fio_json("fio: no jobs")
    with pytest.raises(FioOutputError):
        parse_fio_json('{"jobs": [')
    with pytest.raises(FioOutputError):
        parse_fio_json('{"fio version": "fio-3.33"}')


def test_check_fio_classifies_errors() -> None:
    ok = check_fio(result(0), load("fio_seq_write.json"), direct=False)
    assert ok[0].directions["write"].total_ios == 16

    einval = load("fio_direct_einval.json")
    stderr = "fio: io_u error on file /mnt/unaligned.0.0: Invalid argument: write offset=0"
    # EINVAL under O_DIRECT: the filesystem (or its block size) refuses direct I/O
    with pytest.raises(Unsupported) as unsupported:
        check_fio(result(1, stderr=stderr), einval, direct=True)
    assert "O_DIRECT" in unsupported.value.message
    assert "Invalid argument" in unsupported.value.detail
    with pytest.raises(TrialFailed) as failed:
        check_fio(result(1, stderr=stderr), einval, direct=False)
    assert "Invalid argument" in failed.value.message
    refused = "fio: looks like your file system does not support direct=1/buffered=0\n"
    with pytest.raises(Unsupported):
        check_fio(result(1, stderr=refused), "", direct=True)

    enospc = json.loads(load("fio_seq_write.json"))
    enospc["jobs"][0]["error"] = 28
    with pytest.raises(TrialFailed) as failed:
        check_fio(result(1, stderr="fio: io_u error"), json.dumps(enospc), direct=False)
    assert "No space left on device" in failed.value.message

    with pytest.raises(TrialFailed, match="not installed"):
        check_fio(result(127, stderr="fio: command not found"), "", direct=False)
    with pytest.raises(TrialFailed, match="timed out"):
        check_fio(result(124, stderr="fio: timed out after 600 s"), "", direct=False)
    with pytest.raises(TrialFailed, match="failed parsing"):
        check_fio(result(1, stderr="fio: failed parsing directory=/x\n"), "", direct=False)
    with pytest.raises(TrialFailed, match="no jobs"):
        check_fio(result(0), '{"jobs": []}', direct=False)


# -- fio jobs ------------------------------------------------------------------------------


def opts(phase_options: tuple[tuple[str, str], ...]) -> dict[str, str]:
    d = dict(phase_options)
    assert len(d) == len(phase_options), "an option given twice"
    return d


FS = Where(directory=Path("/mnt/test"))
RAW = Where(device="/dev/loop9")


def test_seq_profiles() -> None:
    p = FioParams(profile=SEQ_WRITE, size="64M", runtime=1, threads=4)
    (phase,) = run_phases(SEQ_WRITE, p, FS)
    o = opts(phase.options)
    assert o["rw"] == "write" and o["bs"] == "1M" and o["end_fsync"] == "1"
    assert o["fallocate"] == "none"  # the filesystem's allocator, not fio's preallocation
    assert o["size"] == str(16 * MIB) and o["numjobs"] == "4"
    assert o["directory"] == "/mnt/test" and "$jobnum" in o["filename_format"]
    assert "time_based" not in o and "direct" not in o
    assert layout_phase(SEQ_WRITE, p, FS) is None  # allocates from nothing

    r = FioParams(profile=SEQ_READ, size="64M", runtime=1)
    (read,) = run_phases(SEQ_READ, r, FS)
    lay = layout_phase(SEQ_READ, r, FS)
    assert lay is not None
    assert opts(read.options)["rw"] == "read" and opts(lay.options)["rw"] == "write"
    assert opts(lay.options)["filename_format"] == opts(read.options)["filename_format"]
    assert opts(lay.options)["end_fsync"] == "1"

    (raw,) = run_phases(SEQ_WRITE, p, RAW)
    o = opts(raw.options)
    assert o["filename"] == "/dev/loop9" and o["direct"] == "1"
    assert o["offset_increment"] == str(16 * MIB)  # threads side by side on the device
    assert "directory" not in o

    d = FioParams(profile=SEQ_WRITE_DIRECT, size="64M", runtime=1, threads=4)
    (direct,) = run_phases(SEQ_WRITE_DIRECT, d, FS)
    assert opts(direct.options) == {**opts(phase.options), "name": SEQ_WRITE_DIRECT, "direct": "1"}
    assert layout_phase(SEQ_WRITE_DIRECT, d, FS) is None
    (raw_direct,) = run_phases(SEQ_WRITE_DIRECT, d, RAW)
    assert [k for k, _ in raw_direct.options].count("direct") == 1  # direct=1 once
    assert opts(raw_direct.options) == {**opts(raw.options), "name": SEQ_WRITE_DIRECT}


def test_rand_rw_profile() -> None:
    p = FioParams(profile=RAND_RW, size="64M", runtime=3, threads=2)
    (phase,) = run_phases(RAND_RW, p, FS)
    o = opts(phase.options)
    assert (o["rw"], o["rwmixread"], o["bs"], o["direct"]) == ("randrw", "50", "16k", "1")
    assert (o["time_based"], o["runtime"]) == ("1", "3s")
    assert o["size"] == str(64 * MIB)  # one file shared by the threads
    assert "filename" in o and "filename_format" not in o
    lay = layout_phase(RAND_RW, p, FS)
    assert lay is not None
    lo = opts(lay.options)
    assert lo["filename"] == o["filename"] and lo["numjobs"] == "1"
    assert phase.timeout >= 3
    (raw,) = run_phases(RAND_RW, p, RAW)
    ro = opts(raw.options)  # direct=1 once
    assert (ro["filename"], ro["direct"], ro["size"]) == ("/dev/loop9", "1", str(64 * MIB))
    assert "offset_increment" not in ro  # the threads share the region, as they share the file


def test_threaded_io_phases() -> None:
    p = FioParams(profile=THREADED, size="64M", runtime=2, threads=8)
    phases = run_phases(THREADED, p, FS)
    assert [opts(ph.options)["rw"] for ph in phases] == ["write", "read", "randread", "randwrite"]
    assert [ph.prefix for ph in phases] == ["seq_", "seq_", "rand_", "rand_"]
    assert [ph.drop_caches_before for ph in phases] == [False, True, True, True]
    for ph in phases:
        o = opts(ph.options)
        assert o["bs"] == "4k" and o["numjobs"] == "8" and o["size"] == str(8 * MIB)
        assert o["filename_format"] == opts(phases[0].options)["filename_format"]
    assert "time_based" not in opts(phases[1].options)
    assert opts(phases[2].options)["runtime"] == "2s"
    assert layout_phase(THREADED, p, FS) is None
    for ph in run_phases(THREADED, p, RAW):
        o = opts(ph.options)
        assert o["direct"] == "1" and o["offset_increment"] == str(8 * MIB)


def test_fio_params() -> None:
    for scale in Scale:
        d = Fio.defaults(scale)
        p = FioParams.model_validate(d)
        assert p.profile == SEQ_WRITE
        assert Fio().required_bytes(p) > p.size
    assert FioParams.model_validate(Fio.defaults(Scale.FULL)).size == 8 << 30
    with pytest.raises(ValueError, match="unknown fio profile"):
        FioParams(profile="seq-writ", size="1G", runtime=1)
    with pytest.raises(ValueError):
        FioParams(profile="job=", size="1G", runtime=1)
    with pytest.raises(ValueError, match="1 MiB each"):
        FioParams(profile=THREADED, size="16M", runtime=1, threads=64)
    with pytest.raises(ValueError):
        FioParams(profile=SEQ_WRITE, size="1G", runtime=1, bogus=1)  # type: ignore[call-arg]
    job = FioParams(profile="job=/etc/x.fio", size="1M", runtime=1, threads=64)
    assert job.job_file == Path("/etc/x.fio")
    assert Fio().required_bytes(job) == 0
    assert FioParams(profile=RAND_RW, size="16M", runtime=1, threads=64).threads == 64
    assert get("fio") is Fio
    assert Fio.needs_filesystem is False
    assert set(profile_names()) == {SEQ_WRITE, SEQ_WRITE_DIRECT, SEQ_READ, RAND_RW, THREADED}


def not_cold(expected: float | None, device_read: float) -> bool:
    """The runner's one cold-read check, fed by a workload's expected_read_bytes."""
    return cold_read_shortfall(expected, device_read) is not None


def test_fio_cold_read_expectation() -> None:
    p = FioParams(profile=SEQ_READ, size="64M", runtime=1)
    assert Fio().expected_read_bytes(p, {}) == 64 * MIB
    assert not_cold(Fio().expected_read_bytes(p, {}), 1 * MIB)
    assert not not_cold(Fio().expected_read_bytes(p, {}), 64 * MIB)
    for profile in (SEQ_WRITE, RAND_RW, THREADED, "job=/x.fio"):
        other = FioParams(profile=profile, size="64M", runtime=1)
        assert Fio().expected_read_bytes(other, {}) is None
        assert not not_cold(Fio().expected_read_bytes(other, {}), 0)


def test_fio_headline_follows_the_profile() -> None:
    """1 MiB blocks: MiB/s and IOPS are one number, only MiB/s is shown; time-based
    profiles last `runtime` whatever the config: no `seconds`."""
    reports = {
        SEQ_WRITE: ["write_mib_s", "write_iops", "write_clat_p99_us", "seconds"],
        SEQ_WRITE_DIRECT: ["write_mib_s", "write_iops", "write_clat_p99_us", "seconds"],
        SEQ_READ: ["read_mib_s", "read_iops", "read_clat_p99_us", "seconds"],
        RAND_RW: ["read_mib_s", "write_mib_s", "read_iops", "write_iops", "seconds"],
        THREADED: ["seq_write_mib_s", "rand_read_mib_s", "seq_write_iops", "seconds"],
    }
    expected = {
        SEQ_WRITE: ("write_mib_s", "write_clat_p99_us", "seconds"),
        SEQ_WRITE_DIRECT: ("write_mib_s", "write_clat_p99_us", "seconds"),
        SEQ_READ: ("read_mib_s", "read_clat_p99_us", "seconds"),
        RAND_RW: ("write_mib_s", "read_mib_s", "write_iops", "read_iops"),
        THREADED: ("seq_write_mib_s", "rand_read_mib_s"),
    }
    for profile, reported in reports.items():
        params = FioParams(profile=profile, size="64M", runtime=1)
        assert Fio.headline_for(params, reported) == expected[profile], profile
    job = FioParams(profile="job=/x.fio", size="1M", runtime=1)
    reported = ["writer_write_mib_s", "writer_write_iops", "readers_read_mib_s", "seconds"]
    assert Fio.headline_for(job, reported) == (
        "writer_write_mib_s",
        "readers_read_mib_s",
        "seconds",
    )


JOB = """\
; a test job
[global]
directory=/somewhere/else
size=8M
ioengine=psync

[writer]
rw=write
filename=data.bin
direct=0

# second
[reader]
stonewall
rw=read
filename=data.bin
"""


def test_rewrite_job_file_for_a_filesystem() -> None:
    text = rewrite_job_file(JOB, FS)
    lines = text.splitlines()
    assert "directory=/somewhere/else" not in lines
    assert lines.count("directory=/mnt/test") == 3  # [global], [writer], [reader]
    assert "group_reporting=1" in lines
    assert lines.count("filename=data.bin") == 2  # relative names stay, under the directory
    assert "direct=0" in lines
    # our directory comes last in each section: it wins over anything the job set
    writer = text.split("[writer]")[1].split("[reader]")[0]
    assert writer.strip().splitlines()[-1] == "directory=/mnt/test"


def test_rewrite_job_file_for_the_device() -> None:
    text = rewrite_job_file(JOB, RAW)
    lines = text.splitlines()
    assert lines.count("filename=/dev/loop9") == 3 and lines.count("direct=1") == 3
    assert "filename=data.bin" not in lines and "direct=0" not in lines
    assert not any(ln.startswith("directory=") for ln in lines)


@pytest.mark.parametrize(
    ("job", "message"),
    [
        ("[a]\nfilename=/dev/sda\n", "outside"),
        ("[a]\nfilename=../../etc/passwd\n", "outside"),
        ("[a]\nfilename_format=/tmp/$jobnum\n", "outside"),
        ("include other.fio\n[a]\nrw=read\n", "include"),
        ("size=1M\n", "no job section"),
    ],
)
def test_rewrite_job_file_refuses(job: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rewrite_job_file(job, FS)


# -- sysbench fileio -----------------------------------------------------------------------


def test_sysbench_rndrw() -> None:
    r = parse_sysbench_fileio(load("sysbench_rndrw_direct.txt"))
    assert (r.reads_s, r.writes_s, r.fsyncs_s) == (708.95, 472.64, 50.32)
    assert (r.read_mib_s, r.write_mib_s) == (11.08, 7.38)
    assert r.total_time_s == 1.1120 and r.events == 1367
    assert r.lat_p95_ms == 3.30 and r.lat_max_ms == 46.05
    # avg from sum/events: more digits than the printed 0.75
    assert r.lat_avg_ms == pytest.approx(1030.30 / 1367)
    assert r.lat_avg_ms is not None and round(r.lat_avg_ms, 2) == 0.75
    metrics = {m.name: m for m in result_metrics("rndrw", r)}
    # sysbench prints 2 decimals: that is the resolution; lat_avg_ms is sum / events.
    assert metrics["reads_s"].resolution == metrics["lat_p95_ms"].resolution == 0.01
    assert metrics["lat_avg_ms"].resolution == 0 and metrics["bytes_written"].resolution == 0
    assert list(metrics) == [
        "read_mib_s",
        "reads_s",
        "write_mib_s",
        "writes_s",
        "bytes_written",
        "fsyncs_s",
        "lat_avg_ms",
        "lat_p95_ms",
        "lat_max_ms",
    ]
    assert metrics["read_mib_s"].better == Better.HIGHER
    assert metrics["lat_p95_ms"].better == Better.LOWER and metrics["lat_p95_ms"].unit == "ms"


def test_sysbench_seqrd_and_seqwr() -> None:
    rd = parse_sysbench_fileio(load("sysbench_seqrd.txt"))
    assert rd.read_mib_s == 4087.64 and rd.reads_s == 261609.28 and rd.events == 262620
    assert rd.lat_p95_ms == 0.0  # sysbench prints 2 decimals: cached reads round to 0
    assert rd.lat_avg_ms == pytest.approx(937.27 / 262620)
    names = [m.name for m in result_metrics("seqrd", rd)]
    assert "read_mib_s" in names and "write_mib_s" not in names and "fsyncs_s" not in names

    wr = parse_sysbench_fileio(load("sysbench_seqwr.txt"))
    assert wr.write_mib_s == 191.65 and wr.writes_s == 12265.71 and wr.read_mib_s == 0.0
    names = [m.name for m in result_metrics("seqwr", wr)]
    assert "write_mib_s" in names and "fsyncs_s" in names and "reads_s" not in names


def test_sysbench_failures() -> None:
    with pytest.raises(ValueError, match="without"):
        parse_sysbench_fileio(load("sysbench_direct_einval.txt"))
    einval = proc.Result(("sysbench",), 1, load("sysbench_direct_einval.txt"), "")
    err = _failure(einval, "run", direct=True)
    assert isinstance(err, Unsupported) and "errno = 22" in err.message
    err = _failure(einval, "run", direct=False)
    assert isinstance(err, TrialFailed) and "errno = 22" in err.message
    missing = proc.Result(
        ("sysbench",),
        1,
        "FATAL: Cannot open file 'test_file.0' errno = 2 (No such file or directory)\n"
        "WARNING: Did you forget to run the prepare step?\n",
        "",
    )
    err = _failure(missing, "run", direct=True)
    assert isinstance(err, TrialFailed) and "No such file" in err.message
    err = _failure(proc.Result(("sysbench",), 127, "", "sysbench: command not found"), "run", True)
    assert isinstance(err, TrialFailed) and "not installed" in err.message


def test_sysbench_params_and_args() -> None:
    assert parse_layout("128x8M") == (128, 8 * MIB)
    assert parse_layout(" 3072 X 16k ") == (3072, 16 * 1024)
    for bad in ("8M", "0x1M", "2x", "x1M", "1x0"):
        with pytest.raises(ValueError):
            parse_layout(bad)
    p = SysbenchFileioParams(layout="128x8m", duration=5)
    assert p.layout == "128x8M"
    assert (p.file_num, p.total_size) == (128, 1 << 30)
    assert (p.mode, p.block_size, p.direct, p.fsync_freq, p.fsync_end) == (
        "rndrw",
        16384,
        True,
        100,
        True,
    )
    args = run_args(p)
    assert args[:2] == ["sysbench", "fileio"] and args[-1] == "run"
    for a in (
        "--file-num=128",
        f"--file-total-size={1 << 30}",
        "--file-block-size=16384",
        "--file-test-mode=rndrw",
        "--file-extra-flags=direct",
        "--file-fsync-freq=100",
        "--file-fsync-end=on",
        "--file-rw-ratio=1.5",
        "--time=5",
        "--threads=1",
    ):
        assert a in args
    q = SysbenchFileioParams(
        mode="seqwr", layout="1x1G", duration=1, direct=False, fsync_freq=0, fsync_end=False
    )
    qa = run_args(q)
    assert "--file-fsync-freq=0" in qa and "--file-fsync-end=off" in qa
    assert not any(a.startswith("--file-extra-flags") for a in qa)
    with pytest.raises(ValueError, match="whole number"):
        SysbenchFileioParams(layout="4x24K", duration=1)
    with pytest.raises(ValueError):
        SysbenchFileioParams.model_validate({"layout": "1x1G", "duration": 1, "mode": "randrw"})

    assert get("sysbench-fileio") is SysbenchFileio
    assert SysbenchFileio.defaults(Scale.FULL)["layout"] == list(CLASSIC_LAYOUTS)
    for scale in Scale:
        d = SysbenchFileio.defaults(scale)
        for layout in d["layout"]:
            sp = SysbenchFileioParams.model_validate({**d, "layout": layout})
            assert SysbenchFileio().required_bytes(sp) > sp.total_size
    assert set(MODES) == {"seqwr", "seqrewr", "seqrd", "rndrd", "rndwr", "rndrw"}


def test_sysbench_cold_read_expectation() -> None:
    p = SysbenchFileioParams(mode="seqrd", layout="1x64M", duration=2, direct=False)
    # 4000 MiB/s for 2 s asked for 8000 MiB: at most the data set once must come cold.
    expected = SysbenchFileio().expected_read_bytes(p, {"read_mib_s": 4000.0})
    assert expected == 64 * MIB
    assert not_cold(expected, 1.0 * MIB)
    assert not not_cold(expected, 64.0 * MIB)
    assert not not_cold(expected, 32.0 * MIB)  # COLD_READ_FRACTION of it is enough
    slow = SysbenchFileio().expected_read_bytes(p, {"read_mib_s": 4.0})
    assert slow == 8 * MIB
    direct = SysbenchFileioParams(mode="rndrd", layout="1x64M", duration=2)
    assert SysbenchFileio().expected_read_bytes(direct, {"read_mib_s": 4000.0}) is None
    writes = SysbenchFileioParams(mode="seqwr", layout="1x64M", duration=2, direct=False)
    assert SysbenchFileio().expected_read_bytes(writes, {}) is None


def test_sysbench_headline_follows_the_mode() -> None:
    for mode in MODES:
        p = SysbenchFileioParams(mode=mode, layout="1x64M", duration=2)
        report = parse_sysbench_fileio(load("sysbench_rndrw_direct.txt"))
        reported = [m.name for m in result_metrics(mode, report)]
        headline = SysbenchFileio.headline_for(p, reported)
        assert headline and set(headline) <= set(reported), (mode, headline)
        first = "read_mib_s" if mode in ("seqrd", "rndrd", "rndrw") else "write_mib_s"
        assert headline[0] == first, (mode, headline)
