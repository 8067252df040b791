"""The VM target end to end: build (or reuse) the cached guest image, boot it under QEMU,
run alloc on filesystems the host kernel may lack, import the records.

The first run builds the image (debootstrap + kernel + initrd: a few minutes); later runs
reuse it and take well under a minute."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from fsbench.plan import Cell, FsConfig
from fsbench.vm import VmCell, VmJob, VmSpec, doctor_facts, ensure_image, import_records, run_in_vm
from tests.helpers import VM_CACHE, VM_MARKS, default_sigint

pytestmark = VM_MARKS
CACHE = VM_CACHE
# Filesystems the host kernel lacks. jfs and nilfs2 have no fallocate(2): the guest
# kernel's refusal must come back as `unsupported` with its message, not as a failure.
EXPECT = {
    ("f2fs", "fallocate"): "ok",
    ("f2fs", "write-4k"): "ok",
    ("nilfs2", "write-4k"): "ok",
    ("jfs", "fallocate"): "unsupported",
}


def _qemu_pids(under: Path) -> set[int]:
    """QEMU processes whose command line names `under` (ours, not a concurrent run's)."""
    out = set()
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                argv = (p / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"qemu-system" in argv[0] and any(str(under).encode() in a for a in argv):
                out.add(int(p.name))
    return out


def test_alloc_in_vm(tmp_path: Path) -> None:
    ensure_image(None, CACHE)  # built once, cached between tests and runs
    cells = [Cell(FsConfig(type=fs), "alloc", {"method": m, "size": 8 << 20}) for fs, m in EXPECT]
    job = VmJob([VmCell.of(i, 1, c) for i, c in enumerate(cells)], "tiny", trial_timeout=120)
    seen: list[int] = []
    result = run_in_vm(
        job,
        VmSpec(ram_mb=1024, vcpus=2, scratch_bytes=2 << 30, cache_dir=CACHE, workdir=tmp_path),
        timeout=240,
        on_cell=lambda recs: seen.extend(r.seq for r in recs),
    )
    assert result.ok, result.error
    records = import_records(result)
    assert [r.seq for r in records] == list(range(len(cells)))
    assert seen == [r.seq for r in records]
    for r in records:
        want = EXPECT[(r.fs, r.params["method"])]
        assert r.status == want, f"{r.fs} {r.params}: {r.message}\n{r.detail}"
        vm = r.provenance["vm"]
        assert vm["guest"]["kernel"] == vm["kernel_version"]
        assert vm["accel"] in ("kvm", "tcg")
        assert vm["vcpus"] == 2 and vm["guest_ram_mb"] == 1024
        if want == "ok":
            names = {m.name for m in r.metrics}
            assert {"seconds", "write_seconds"} <= names
            assert r.provenance["mkfs"]["argv"][0] == f"mkfs.{r.fs}"
        else:
            assert "not supported" in r.message
    # Nothing left behind: no QEMU of ours, no run directory, the console log kept.
    assert not _qemu_pids(tmp_path)
    assert not list(tmp_path.glob("vm-*"))
    assert Path(result.console_log).is_file()


def test_doctor_facts() -> None:
    ensure_image(None, CACHE)
    facts = doctor_facts(CACHE)
    assert facts["qemu"]["version"]
    assert facts["accel"] in ("kvm", "tcg")
    assert facts["kvm"]["reason"]
    assert facts["images"], "the image test above builds one"
    for per_fs in facts["guest_filesystems"].values():
        assert per_fs == {"jfs": True, "reiserfs": True, "f2fs": True, "nilfs2": True}


CHILD = """
import sys
from pathlib import Path
from fsbench.plan import Cell, FsConfig
from fsbench.vm import VmCell, VmJob, VmSpec, run_in_vm
cell = Cell(FsConfig(type="f2fs"), "alloc", {"method": "write-4k", "size": 8 << 20})
run_in_vm(
    VmJob([VmCell.of(0, 1, cell)], "tiny"),
    VmSpec(
        ram_mb=512, scratch_bytes=1 << 30, cache_dir=Path(sys.argv[1]), workdir=Path(sys.argv[2])
    ),
)
"""


def test_ctrl_c_kills_qemu_and_cleans_up(tmp_path: Path) -> None:
    ensure_image(None, CACHE)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(CACHE), str(tmp_path)], preexec_fn=default_sigint
    )
    try:
        deadline = time.monotonic() + 60
        while not _qemu_pids(tmp_path) and time.monotonic() < deadline:
            assert child.poll() is None, "the job ended before QEMU started"
            time.sleep(0.2)
        assert _qemu_pids(tmp_path), "QEMU never started"
        time.sleep(2)
        child.send_signal(signal.SIGINT)
        assert child.wait(timeout=30) != 0
    finally:
        if child.poll() is None:
            child.kill()
    time.sleep(0.5)
    assert not _qemu_pids(tmp_path)
    assert not list(tmp_path.glob("vm-*"))
