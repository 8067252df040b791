"""The VM target (docs/vm.md): Debian 12 cached under /var/tmp/fsbench/cache/vm; KVM only
when a short probe proves it works, else TCG (decided with a stand-in QEMU: a shell script
that exits as a real guest would, or does not); TCG runs carry a note in every report."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from fsbench.plan import model as planning
from fsbench.plan import presets
from fsbench.reports.tables import run_header
from fsbench.store.records import RunRecord
from fsbench.system.errors import FsbenchError
from fsbench.system.hostkeys import Host
from fsbench.vm import qemu, rootfs
from fsbench.vm.cache import DEFAULT_CACHE, default_cache
from fsbench.vm.executor import VmExecutor

KVM = "/dev/kvm"


def test_the_guest_is_debian_12_cached_under_var_tmp() -> None:
    assert rootfs.SUITE == "bookworm"  # Debian 12
    assert default_cache({}) == Path("/var/tmp/fsbench/cache/vm")
    assert default_cache({"FSBENCH_VM_CACHE": "/srv/vm"}) == Path("/srv/vm")  # cold runs
    plan = presets.load_preset("boot")
    executor = VmExecutor(plan, planning.expand(plan))
    assert executor._spec(None).cache_dir == DEFAULT_CACHE  # what a run uses


FakeQemu = Callable[[str], Path]


@pytest.fixture
def fake_qemu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeQemu:
    """fake_qemu(body) -> a stand-in qemu-system-x86_64 running `body` (sh), which records
    its arguments; /dev/kvm present and accessible; no probe remembered."""
    real_exists, real_access = os.path.exists, os.access
    monkeypatch.setattr(os.path, "exists", lambda p: True if str(p) == KVM else real_exists(p))
    monkeypatch.setattr(
        os, "access", lambda p, mode, **kw: True if str(p) == KVM else real_access(p, mode, **kw)
    )
    monkeypatch.setattr(qemu, "_probe_memo", {})

    def make(body: str) -> Path:
        script = tmp_path / "qemu-system-x86_64"
        script.write_text(f'#!/bin/sh\necho "$@" > {tmp_path / "argv"}\n{body}\n')
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
        monkeypatch.setattr(qemu, "qemu_binary", lambda: str(script))
        return tmp_path / "argv"

    return make


def test_a_guest_that_exits_as_the_probe_says_proves_kvm(fake_qemu: FakeQemu) -> None:
    assert qemu.KVM_PROBE_SECONDS <= 10  # a short probe
    argv = fake_qemu(f"exit {qemu.PROBE_EXIT}")
    probe = qemu.probe_kvm(fresh=True)
    assert probe.usable and "ran under KVM" in probe.reason
    assert "-accel kvm" in argv.read_text()  # the probe asks for KVM, nothing else
    assert qemu.resolve_accel("auto") == (
        "kvm",
        {"requested": "auto", "kvm_probe": probe.as_dict()},
    )


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("echo 'Could not access KVM kernel module: Permission denied' >&2; exit 1", "Permission"),
        ("exit 0", "exit 0"),  # exited, but not the way only a guest that ran can
        ("exec sleep 30", "hung"),
    ],
)
def test_anything_else_falls_back_to_tcg(fake_qemu: FakeQemu, body: str, reason: str) -> None:
    fake_qemu(body)
    probe = qemu.probe_kvm(0.5, fresh=True)
    assert not probe.usable and reason in probe.reason
    accel, facts = qemu.resolve_accel("auto")  # the probe just made
    assert accel == "tcg" and facts["kvm_probe"]["usable"] is False
    with pytest.raises(FsbenchError, match="--accel kvm: "):
        qemu.resolve_accel("kvm")


# A stand-in QEMU that passes the boot sector (no -kernel) and, given a kernel, does `body`
# with $console the file its -serial names.
KERNEL_STAND_IN = f"""
case "$*" in *-kernel*) ;; *) exit {qemu.PROBE_EXIT} ;; esac
console=$(echo "$*" | sed 's/.*-serial file:\\([^ ]*\\).*/\\1/')
"""


@pytest.mark.parametrize(
    ("body", "usable", "reason"),
    [
        (f'echo "[ 1.8] {qemu.KERNEL_PROBE_MARK} - not syncing" > "$console"; exit 0', True, "ran"),
        # The nested /dev/kvm seen here: a boot sector runs, a Linux kernel hangs.
        ('echo "Probing EDD ... ok" > "$console"; exec sleep 30', False, "hung"),
        ('echo "Probing EDD" > "$console"; exit 0', False, "exit 0"),  # no panic: not run
    ],
)
def test_the_guest_kernel_must_run_under_kvm_too(
    fake_qemu: FakeQemu, tmp_path: Path, body: str, usable: bool, reason: str
) -> None:
    kernel = tmp_path / "images" / "vmlinuz"
    kernel.parent.mkdir()
    kernel.write_bytes(b"bzImage")
    fake_qemu(KERNEL_STAND_IN + body)
    probe = qemu.probe_kvm(0.5, kernel=kernel, fresh=True)
    assert (probe.usable, reason in probe.reason) == (usable, True)
    accel, facts = qemu.resolve_accel("auto", kernel)
    assert (accel, facts["kvm_probe"]) == ("kvm" if usable else "tcg", probe.as_dict())
    assert qemu.probe_kvm(0.5).usable  # the boot sector alone passes in every case


def test_the_kernel_verdict_is_kept_for_this_boot_of_the_host(
    fake_qemu: FakeQemu, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kernel = tmp_path / "images" / "vmlinuz"
    kernel.parent.mkdir()
    kernel.write_bytes(b"bzImage")
    argv = fake_qemu(KERNEL_STAND_IN + "exec sleep 30")
    hung = qemu.probe_kvm(0.5, kernel=kernel, fresh=True)
    assert not hung.usable and (kernel.parent / qemu.KERNEL_PROBE_FILE).exists()
    argv.unlink()
    monkeypatch.setattr(qemu, "_probe_memo", {})  # another fsbench process

    def no_guest(timeout: float) -> qemu.KvmProbe:
        raise AssertionError("a kept verdict starts no guest, not even the boot sector")

    monkeypatch.setattr(qemu, "_probe", no_guest)
    kept = qemu.probe_kvm(0.5, kernel=kernel)
    assert (kept.usable, kept.reason) == (False, hung.reason)  # read, not probed again
    assert not argv.exists()
    monkeypatch.setattr(qemu, "_probe_memo", {})
    monkeypatch.setattr(qemu, "_probe", lambda timeout: qemu.KvmProbe(True, "sector", 0.1))
    kernel.write_bytes(b"another bzImage")  # another kernel: probed again
    assert not qemu.probe_kvm(0.5, kernel=kernel).usable
    assert "-kernel" in argv.read_text()


def test_no_dev_kvm_is_tcg_without_starting_qemu(
    fake_qemu: FakeQemu, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = fake_qemu(f"exit {qemu.PROBE_EXIT}")
    real_exists = os.path.exists
    monkeypatch.setattr(os.path, "exists", lambda p: False if str(p) == KVM else real_exists(p))
    probe = qemu.probe_kvm(fresh=True)
    assert (probe.usable, probe.reason) == (False, "no /dev/kvm")
    assert qemu.resolve_accel("auto")[0] == "tcg"
    assert not argv.exists()


def test_tcg_asked_for_is_not_probed(fake_qemu: FakeQemu) -> None:
    argv = fake_qemu(f"exit {qemu.PROBE_EXIT}")
    assert qemu.resolve_accel("tcg") == ("tcg", {"requested": "tcg"})
    assert not argv.exists()


def _header(accel: str) -> list[str]:
    plan = presets.load_preset("boot")
    executor = VmExecutor(plan, planning.expand(plan))
    executor.guests = {
        "default": {"accel": accel, "kernel_version": "6.1.0", "vcpus": 2, "guest_ram_mb": 2048}
    }
    run = RunRecord(
        id=1,
        name="boot",
        status="finished",
        created_at="2026-01-01T00:00:00",
        finished_at=None,
        fsbench_version="0.1.0",
        argv=[],
        plan={"scale": "quick", "reps": 10},
        overrides={},
        schedule=[],
        host=Host.read({"kernel": "6.12"}),
        target=executor.describe(),
    )
    return run_header(run)


def test_reports_say_tcg_numbers_compare_configs_within_the_run() -> None:
    notes = [line for line in _header("tcg") if line.startswith("note: ")]
    assert len(notes) == 1
    assert "TCG" in notes[0]
    assert "compare the configs within this run, not with the host" in notes[0]
    assert not [line for line in _header("kvm") if line.startswith("note: ")]
