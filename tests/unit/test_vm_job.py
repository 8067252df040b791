"""The VM target's pure parts: job JSON, QEMU command line, record import, kernel specs."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

import pytest

from fsbench.plan.model import Cell, FsConfig
from fsbench.store.records import MetricRecord, TrialRecord
from fsbench.system import engine
from fsbench.system.errors import FsbenchError
from fsbench.vm import images, kernels, pyenv, qemu, rootfs
from fsbench.vm.job import (
    CELL_MARGIN,
    DEFAULT_CELL_TIMEOUT,
    JobWatch,
    VmResult,
    carried,
    cell_margin,
    import_records,
)
from fsbench.vm.protocol import DONE, ENGINE, RECORDS, STARTED, VmCell, VmJob


def _cell(fs: str = "jfs", method: str = "fallocate") -> Cell:
    return Cell(FsConfig(type=fs, mount="noatime"), "alloc", {"method": method, "size": 1 << 20})


def test_job_round_trip() -> None:
    job = VmJob([VmCell.of(3, 1, _cell()), VmCell.of(4, 1, _cell("nilfs2"))], "tiny", 60.0)
    back = VmJob.from_json(job.to_json())
    assert back == job
    cell = back.cells[0].cell()
    assert cell.key == _cell().key
    assert cell.config.mount == "noatime"


def _record(seq: int, status: str = "ok") -> TrialRecord:
    c = _cell()
    return TrialRecord(
        seq=seq,
        rep=1,
        cell_key=c.key,
        config=c.config.display,
        fs="jfs",
        mkfs_options=[],
        mount_options="noatime",
        workload="alloc",
        params=dict(c.params),
        status=status,
        provenance={"mkfs": {"argv": ["mkfs.jfs"]}},
        metrics=[MetricRecord("seconds", 1.5, "s", "lower")],
    )


def test_import_merges_provenance_and_fills_missing_cells() -> None:
    job = VmJob([VmCell.of(0, 1, _cell()), VmCell.of(1, 1, _cell("nilfs2"))], "tiny")
    result = VmResult(
        ok=False,
        job=job,
        records=[asdict(_record(0))],
        provenance={"accel": "tcg", "guest": {"kernel": "6.1.0-56-amd64"}},
        error="VM killed: no cell finished for 720 s\n--- serial console ---\n...",
    )
    records = import_records(result)
    assert [r.seq for r in records] == [0, 1]
    ok, missing = records
    assert ok.status == "ok"
    assert ok.metrics == [MetricRecord("seconds", 1.5, "s", "lower")]
    assert ok.provenance["mkfs"] == {"argv": ["mkfs.jfs"]}
    assert ok.provenance["vm"]["guest"]["kernel"] == "6.1.0-56-amd64"
    assert missing.status == "failed"
    assert missing.fs == "nilfs2"
    assert missing.message.startswith("VM: VM killed")
    assert "serial console" in missing.detail
    json.dumps([asdict(r) for r in records])  # storable


def test_machine_argv_tcg_and_throttle(tmp_path: Path) -> None:
    m = qemu.Machine(
        kernel=tmp_path / "vmlinuz",
        initrd=tmp_path / "initrd.img",
        root_overlay=tmp_path / "root.qcow2",
        scratch=tmp_path / "scratch.img",
        share=tmp_path / "share",
        console_log=tmp_path / "console.log",
        ram_mb=1024,
        vcpus=2,
        throttle={"iops-total": 500, "bps-total": 50 << 20},
    )
    argv = m.argv()
    joined = " ".join(argv)
    assert "-cpu qemu64,+rdrand" in joined
    # x86-64-v2, the baseline numpy's wheels are built for (the guest imports it).
    cpu = argv[argv.index("-cpu") + 1].split(",")
    assert {"+cx16", "+lahf_lm", "+popcnt", "+ssse3", "+sse4.1", "+sse4.2"} <= set(cpu)
    assert "-no-reboot" in argv
    assert "panic=-1" in m.cmdline()
    # a TCG guest on a loaded host failed the boot's timer check and panicked
    assert "no_timer_check" in m.cmdline().split()
    scratch = next(a for a in argv if a.startswith(f"file={tmp_path / 'scratch.img'}"))
    assert "cache=none" in scratch
    assert "throttling.iops-total=500" in scratch
    assert f"throttling.bps-total={50 << 20}" in scratch
    assert any("mount_tag=fsbench" in a for a in argv)
    m.accel = "kvm"
    assert "-cpu host" in " ".join(m.argv())


def test_throttle_validation() -> None:
    assert qemu.validate_throttle({"iops-total": 100}) == {"iops-total": 100}
    with pytest.raises(ValueError, match="expected one of"):
        qemu.validate_throttle({"iops": 100})
    with pytest.raises(ValueError, match="> 0"):
        qemu.validate_throttle({"bps-total": 0})


def test_kernel_package_specs() -> None:
    assert kernels.kernel_package("6.1.0-41-amd64") == "linux-image-6.1.0-41-amd64"
    assert kernels.kernel_package("linux-image-6.1.0-41-amd64") == "linux-image-6.1.0-41-amd64"
    with pytest.raises(FsbenchError, match="expected default"):
        kernels.kernel_package("bogus")


def test_path_kernel(tmp_path: Path) -> None:
    (tmp_path / "arch/x86/boot").mkdir(parents=True)
    (tmp_path / "arch/x86/boot/bzImage").write_bytes(b"MZ")
    with pytest.raises(FsbenchError, match="modules_install"):
        kernels.path_kernel(tmp_path)
    (tmp_path / "lib/modules/6.19.0-rc1+").mkdir(parents=True)
    k = kernels.path_kernel(tmp_path)
    assert k.version == "6.19.0-rc1+"
    assert k.bzimage == tmp_path / "arch/x86/boot/bzImage"
    assert k.source.startswith("path:")


def test_image_key_changes_with_kernel(tmp_path: Path) -> None:
    bz = tmp_path / "bzImage"
    bz.write_bytes(b"MZ")
    a = kernels.Kernel("6.1.0-1-amd64", bz, tmp_path, "debian:linux-image-6.1.0-1-amd64=1")
    b = kernels.Kernel("6.1.0-2-amd64", bz, tmp_path, "debian:linux-image-6.1.0-2-amd64=1")
    assert images.image_key(a) == images.image_key(a)
    assert images.image_key(a) != images.image_key(b)


def test_apt_mirror_is_a_url() -> None:
    assert "://" in rootfs.apt_mirror()


def test_python_deps_closure() -> None:
    names = {d.split("==")[0].lower() for d in pyenv.python_deps()}
    assert {"pydantic", "sqlalchemy"} <= names
    assert "pytest" not in names and "fsbench" not in names


def test_watch_streams_records_and_stops(tmp_path: Path) -> None:
    got: list[TrialRecord] = []
    w = JobWatch(tmp_path, {"accel": "tcg"}, 100.0, 10.0, 1000.0, got.extend)
    assert not w(1.0)
    (tmp_path / STARTED).write_text(json.dumps({"kernel": "6.1.0-56-amd64"}))
    line = json.dumps([asdict(_record(0))])
    (tmp_path / RECORDS).write_text(line + "\n" + line[:10])  # the second still being written
    assert not w(20.0)
    assert w.started_after == 20.0
    assert [r.seq for r in got] == [0]
    assert got[0].provenance["vm"]["guest"]["kernel"] == "6.1.0-56-amd64"
    assert not w(89.0)
    assert w(91.0)  # no cell for more than its 10 s limit and the least margin, 60 s
    assert "no trial finished for 70 s (its time limit + 60 s)" in w.reason
    (tmp_path / DONE).write_text("{}")
    w2 = JobWatch(tmp_path, {}, 100.0, 50.0, 1000.0, None)
    assert not w2(1.0)
    assert w2(40.0)  # DONE long ago, poweroff stuck: stop


def test_a_cells_margin_is_as_long_as_its_trials_limit_within_bounds() -> None:
    low, high = CELL_MARGIN
    assert cell_margin(1.0) == low and cell_margin(low + 5) == low + 5
    assert cell_margin(DEFAULT_CELL_TIMEOUT) == high


def test_watch_boot_timeout(tmp_path: Path) -> None:
    w = JobWatch(tmp_path, {}, 100.0, 50.0, 1000.0, None)
    assert not w(99.0)
    assert w(101.0)
    assert "did not start" in w.reason


def test_import_only_missing() -> None:
    job = VmJob([VmCell.of(0, 1, _cell()), VmCell.of(1, 1, _cell("nilfs2"))], "tiny")
    result = VmResult(False, job, [asdict(_record(0))], {}, error="QEMU exited")
    missing = import_records(result, only_missing=True)
    assert [(r.seq, r.status) for r in missing] == [(1, "failed")]


def test_import_leaves_out_cells_skipped_on_purpose() -> None:
    """A cell the kernel refused (before the job, or in it) is skipped by the guest: not a
    missing cell, so no `failed` record; a cell that never ran for another reason is."""
    refused_before = Cell(FsConfig(type="reiserfs"), "alloc", {"method": "fallocate"})
    cells = [
        VmCell.of(0, 1, _cell(), position=1),  # unsupported in the guest
        VmCell.of(1, 1, refused_before, position=2),  # refused before: never sent to run
        VmCell.of(2, 2, _cell(), position=2),  # same cell as seq 0: skipped in the guest
        VmCell.of(3, 2, _cell("nilfs2"), position=1),  # never finished
    ]
    result = VmResult(
        False, VmJob(cells, "tiny"), [asdict(_record(0, "unsupported"))], {}, error="QEMU exited"
    )
    records = import_records(result, skip={refused_before.key})
    assert [(r.seq, r.status) for r in records] == [(0, "unsupported"), (3, "failed")]
    missing = import_records(result, only_missing=True, skip={refused_before.key})
    assert [(r.seq, r.position) for r in missing] == [(3, 1)]  # stamped with its place
    without_skip = import_records(result, only_missing=True)
    assert [r.seq for r in without_skip] == [1, 3]


def test_launch_watches_and_kills(tmp_path: Path) -> None:
    """The one launch-and-watch loop: the watch is polled while the process runs and once
    after; a watch that says stop gets the process (group) killed."""
    calls: list[float] = []

    def stop_after_half_a_second(elapsed: float) -> bool:
        calls.append(elapsed)
        return elapsed > 0.5

    out = qemu.launch(["sleep", "30"], tmp_path / "err", stop_after_half_a_second, poll=0.1)
    assert out.stopped and out.returncode is not None and out.returncode < 0
    assert out.seconds < 10
    assert len(calls) >= 3 and calls[-1] >= calls[-2] > 0.5  # and once more after the kill
    seen: list[float] = []

    def never_stop(elapsed: float) -> bool:
        seen.append(elapsed)
        return False

    argv = ["sh", "-c", "echo 'no kvm here' >&2; exit 3"]
    out = qemu.launch(argv, tmp_path / "err2", never_stop, poll=0.05)
    assert (out.returncode, out.stopped, out.stderr.strip()) == (3, False, "no kvm here")
    assert seen  # called once after the exit at least


def test_a_jobs_input_files_and_the_engine_are_carried_into_the_share(tmp_path: Path) -> None:
    """A replay's trace is copied into the share and named in the job under the plan's
    name (with the directory a relative name starts from); the engine too, when built; a
    cell that reads no file carries none. The copy survives the job's JSON."""
    trace = tmp_path / "made.fsbt.gz"
    trace.write_bytes(b"a trace")
    share = tmp_path / "share"
    share.mkdir()
    replay = Cell(FsConfig(type="ext4"), "replay", {"trace": str(trace)})
    job = VmJob(
        [VmCell.of(0, 1, replay), VmCell.of(1, 1, _cell()), VmCell.of(2, 1, replay)], "tiny"
    )
    sent = VmJob.from_json(carried(job, share).to_json())
    assert sent.inputs == {str(trace): "inputs/0-made.fsbt.gz"}
    assert (share / "inputs/0-made.fsbt.gz").read_bytes() == b"a trace"
    assert sent.cwd == str(Path.cwd())
    if engine.find_engine() is not None:
        assert sent.engine == ENGINE and os.access(share / ENGINE, os.X_OK)
    assert carried(VmJob([VmCell.of(0, 1, _cell())], "tiny"), share).inputs == {}
