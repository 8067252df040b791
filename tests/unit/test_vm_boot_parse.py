"""The boot workload's pieces that need no guest: parsing systemd-analyze, the root's
files, the boot machine's command line, and where a boot may run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fsbench.execute import executors
from fsbench.plan.model import Plan
from fsbench.system.errors import FsbenchError
from fsbench.vm import boot, bootroot, qemu


@pytest.mark.parametrize(
    "text, seconds",
    [("837ms", 0.837), ("2.107s", 2.107), ("1min 2.5s", 62.5), ("1h 1min", 3660.0), ("", 0.0)],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert boot.parse_duration(text) == pytest.approx(seconds)


def test_parse_analyze_time() -> None:
    text = (
        "Startup finished in 1.733s (kernel) + 3.136s (initrd) + 1min 12.371s (userspace) "
        "= 1min 17.240s\nmulti-user.target reached after 1min 12.350s in userspace.\n"
    )
    assert boot.parse_analyze_time(text) == pytest.approx(
        {"kernel": 1.733, "initrd": 3.136, "userspace": 72.371, "total": 77.24}
    )
    # Not finished (the unit ran too early): nothing, rather than a wrong number.
    assert boot.parse_analyze_time("Bootup is not yet finished (...)") == {}


def test_guest_reads_from_diskstats() -> None:
    text = (
        " 254       0 vda 5370 1802 412322 2311 141 93 5818 90 0 2296 2428 0 0 0 0 7 26\n"
        " 254      16 vdb 10 0 80 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n"
    )
    assert boot.guest_reads(text) == 412322 * 512
    assert boot.guest_reads(text, "vdc") is None


def test_boot_files(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    bootroot.install_boot_files(tmp_path, "xfs", "noatime")
    assert (tmp_path / "etc/fstab").read_text().splitlines()[
        0
    ] == f"{qemu.GUEST_ROOT} / xfs noatime 0 0"
    script = tmp_path / bootroot.MARKER_SCRIPT.lstrip("/")
    assert script.stat().st_mode & 0o111
    assert bootroot.MARKER in script.read_text()
    wants = tmp_path / "etc/systemd/system/multi-user.target.wants" / bootroot.MARKER_UNIT
    assert wants.is_symlink()
    unit = (tmp_path / "etc/systemd/system" / bootroot.MARKER_UNIT).read_text()
    assert "After=multi-user.target" in unit and "Type=simple" in unit
    bootroot.install_boot_files(tmp_path, "ext4", "")  # again: replaced, not duplicated
    assert (
        (tmp_path / "etc/fstab").read_text().startswith(f"{qemu.GUEST_ROOT} / ext4 defaults 0 0\n")
    )


def test_boot_machine_has_its_root_type_and_no_scratch(tmp_path: Path) -> None:
    m = qemu.Machine(
        kernel=tmp_path / "vmlinuz",
        initrd=tmp_path / "initrd.img",
        root_overlay=tmp_path / "root.qcow2",
        scratch=None,
        share=tmp_path / "share",
        console_log=tmp_path / "console.log",
        root_fstype="reiserfs",
        root_flags="noatime",
        root_cache="none",
        cmdline_extra=boot.BOOT_CMDLINE,
    )
    cmdline = m.cmdline().split()
    assert cmdline[:3] == [f"root={qemu.GUEST_ROOT}", "rootfstype=reiserfs", "rootflags=noatime"]
    assert bootroot.BOOT_FLAG in cmdline and "fsck.mode=skip" in cmdline
    assert not any(a.startswith("init=") for a in cmdline)  # systemd boots
    drives = [a for a in m.argv() if a.startswith("file=")]
    assert len(drives) == 1 and "cache=none" in drives[0]


def _plan(kind: str, workload: str) -> Plan:
    return Plan.model_validate(
        {"fs": [{"type": "ext4"}], "workload": [{"name": workload}], "target": {"kind": kind}}
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="every executor's preflight first asks for root")
def test_boot_needs_the_vm_target_and_runs_alone() -> None:
    with pytest.raises(FsbenchError, match="boot needs the VM target"):
        executors.for_plan(_plan("loop", "boot"), []).preflight()
    with pytest.raises(FsbenchError, match="runs alone"):
        executors.for_plan(_plan("vm", "boot+untar"), []).preflight()


def test_copy_root_keeps_owners_modes_links_and_holes(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    (src / "usr/bin").mkdir(parents=True)
    dst.mkdir()
    tool = src / "usr/bin/tool"
    tool.write_bytes(b"#!/bin/sh\n")
    os.chown(tool, 1234, 5678)
    os.chmod(tool, 0o4755)  # after chown, which clears set-uid
    os.link(tool, src / "usr/bin/tool-link")
    (src / "sh").symlink_to("usr/bin/tool")
    with open(src / "sparse", "wb") as fh:
        fh.truncate(64 << 20)
        fh.write(b"x")
    bootroot.copy_root(src, dst)
    st = (dst / "usr/bin/tool").stat()
    assert (st.st_mode & 0o7777, st.st_uid, st.st_gid) == (0o4755, 1234, 5678)
    assert st.st_ino == (dst / "usr/bin/tool-link").stat().st_ino  # one file, two names
    assert os.readlink(dst / "sh") == "usr/bin/tool"
    sparse = (dst / "sparse").stat()
    assert sparse.st_size == 64 << 20 and sparse.st_blocks * 512 < 1 << 20  # still a hole
    with pytest.raises(FsbenchError, match="copying the guest root failed"):
        bootroot.copy_root(src, tmp_path / "missing")


def _cli_plan(workload: list[str], reps: str | None = None, preset: str | None = None) -> Plan:
    from fsbench.cli.planflags import PlanFlags, build_plan

    return build_plan(
        PlanFlags(preset=preset, fs=["ext4"], workload=workload, reps=reps, target_kind="vm")
    )


def test_boot_defaults_to_ten_reps_unless_told() -> None:
    assert _cli_plan(["boot"]).reps == 10
    assert _cli_plan(["boot"], reps="3").reps == 3
    assert _cli_plan(["alloc"]).reps == "decide"  # the quick preset's
    assert _cli_plan(["boot"], preset="boot").reps == 10  # the preset's own number
