"""Guest code refuses to run on a host: `python -m fsbench.vm.guest JOB` with each kind of
job (cells, a boot root, a crash boot) and the crash guest's own entry exit non-zero with
one line, before they open a device, start a process or write to the share; and the
check itself, on a command line and disk serials that are or are not fsbench's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fsbench.plan.model import FsConfig
from fsbench.vm import guestcheck, qemu
from fsbench.vm.protocol import JOB, VmCell, VmJob

pytestmark = pytest.mark.integration

# Runs the entry point under an audit hook that writes down every device opened and every
# process started (Python's own audit events: open, subprocess.Popen, os.exec...).
WATCHED = """
import json, runpy, sys
seen = []
def hook(event, args):
    if event == "open" and str(args[0]).startswith("/dev/") and str(args[0]) != "/dev/null":
        seen.append(["open", str(args[0])])
    elif event in ("subprocess.Popen", "os.exec", "os.posix_spawn", "os.system", "os.fork"):
        seen.append([event, str(args[0])[:200]])
sys.addaudithook(hook)
log, entry, *rest = sys.argv[1:]
try:
    if entry == "crash_boot":
        from fsbench.vm.crash.guest import crash_boot
        job = json.loads(open(rest[0]).read())["crash"]
        crash_boot(job, "/dev/vdb", __import__("pathlib").Path(rest[0]).parent)
    else:
        sys.argv = [entry, *rest]
        runpy.run_module(entry, run_name="__main__")
finally:
    open(log, "w").write(json.dumps(seen))
"""

CONFIG = FsConfig(type="ext4").model_dump(mode="json")
CRASH = {
    "config": CONFIG,
    "pattern": "fsync-append",
    "size": 4,
    "volatile_cache": True,
    "check": {"seed": 7, "recorded": True},
    "run": {"seed": 8},
}
UNTAR = VmCell(0, 1, CONFIG, "untar", {})
JOBS = {
    "cells": VmJob([UNTAR], "tiny"),
    "make_root": VmJob([], "tiny", make_root=CONFIG),
    "crash": VmJob([], "tiny", crash=CRASH),
}


def _run(tmp_path: Path, entry: str, job: VmJob) -> tuple[subprocess.CompletedProcess[str], list]:  # type: ignore[type-arg]
    share = tmp_path / "share"
    share.mkdir()
    (share / JOB).write_text(job.to_json())
    log = tmp_path / "audit.json"
    res = subprocess.run(
        [sys.executable, "-c", WATCHED, str(log), entry, str(share / JOB)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert sorted(p.name for p in share.iterdir()) == [JOB]  # nothing written to the share
    return res, json.loads(log.read_text())


@pytest.mark.parametrize("kind", ["cells", "make_root", "crash"])
def test_the_guest_entry_point_refuses_on_a_host(tmp_path: Path, kind: str) -> None:
    res, seen = _run(tmp_path, "fsbench.vm.guest", JOBS[kind])
    assert res.returncode == guestcheck.REFUSED_EXIT, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("fsbench guest: refused: not an fsbench guest")
    assert seen == []  # no device opened, no process started
    assert res.stdout == ""


def test_the_crash_guest_refuses_on_a_host(tmp_path: Path) -> None:
    res, seen = _run(tmp_path, "crash_boot", JOBS["crash"])
    assert res.returncode != 0
    assert "NotAGuest: not an fsbench guest" in res.stderr.strip().splitlines()[-1]
    assert seen == []


def _fake(tmp_path: Path, cmdline: str, serials: dict[str, str]) -> tuple[Path, Path]:
    tmp_path.mkdir()
    proc_cmdline = tmp_path / "cmdline"
    proc_cmdline.write_text(cmdline + "\n")
    sys_block = tmp_path / "block"
    for name, serial in serials.items():
        (sys_block / name).mkdir(parents=True)
        (sys_block / name / "serial").write_text(serial + "\n")
    return proc_cmdline, sys_block


def test_the_check_wants_the_mark_and_every_disks_serial(tmp_path: Path) -> None:
    machine = qemu.Machine(
        kernel=tmp_path / "k", initrd=tmp_path / "i", root_overlay=tmp_path / "r",
        scratch=tmp_path / "s", share=tmp_path, console_log=tmp_path / "c",
        extra=(tmp_path / "log", tmp_path / "replay"),
    )  # fmt: skip
    serial = qemu.disk_serial(machine.mark)
    assert len(serial) <= 20  # what a virtio-blk serial holds
    argv = machine.argv()
    devices = [a for a in argv if a.startswith("virtio-blk-pci,")]
    assert len(devices) == 4 and all(d.endswith(f"serial={serial}") for d in devices)
    assert machine.mark != qemu.Machine(**{**machine.__dict__, "mark": "x"}).mark
    good = {"vdb": serial, "vdc": serial, "vdd": serial}
    cmdline, block = _fake(tmp_path / "ok", machine.cmdline(), good)
    vd = ("/dev/vdb", "/dev/vdc", "/dev/vdd")
    assert guestcheck.refusal(vd, cmdline, block) is None
    # A host: no mark on its command line.
    host, hblock = _fake(tmp_path / "host", "BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro", good)
    assert "not an fsbench guest" in (guestcheck.refusal(vd, host, hblock) or "")
    # The mark, but a disk that is not the guest's (another serial, or none).
    other, oblock = _fake(tmp_path / "other", machine.cmdline(), {**good, "vdc": "WD-1234"})
    assert guestcheck.refusal(vd, other, oblock) == (
        f"/dev/vdc is not a disk fsbench gave this guest (serial 'WD-1234', expected {serial!r})"
    )
    bare, bblock = _fake(tmp_path / "bare", machine.cmdline(), {"vdb": serial})
    assert "/dev/vdc is not a disk fsbench gave this guest (no serial" in (
        guestcheck.refusal(vd, bare, bblock) or ""
    )
