"""The VM target end to end: build (or reuse) the cached guest image, boot it under QEMU,
run alloc on filesystems the host kernel may lack, import the records.

The first run builds the image (debootstrap + kernel + initrd: a few minutes); later runs
reuse it and take well under a minute."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from fsbench.plan.model import Cell, FsConfig
from fsbench.store.results import Store
from fsbench.system import engine as _engine
from fsbench.vm import VmCell, VmJob, VmSpec, doctor_facts, import_records, run_in_vm
from fsbench.vm.doctor import host_lacks
from fsbench.vm.images import GuestImage
from tests.helpers import (
    GUEST,
    VM_CACHE,
    VM_MARKS,
    cli_args,
    cli_env,
    default_interrupts,
    fsbench,
    ours,
    your_own_plan,
)

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


def test_alloc_in_vm(tmp_path: Path, guest_image: GuestImage) -> None:
    cells = [Cell(FsConfig(type=fs), "alloc", {"method": m, "size": 8 << 20}) for fs, m in EXPECT]
    job = VmJob([VmCell.of(i, 1, c) for i, c in enumerate(cells)], "tiny", trial_timeout=120)
    seen: list[int] = []
    result = run_in_vm(
        job,
        VmSpec(ram_mb=1024, vcpus=1, scratch_bytes=2 << 30, cache_dir=CACHE, workdir=tmp_path),
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
        assert vm["vcpus"] == 1 and vm["guest_ram_mb"] == 1024
        if want == "ok":
            names = {m.name for m in r.metrics}
            assert {"seconds", "write_seconds"} <= names
            # The guest's runner attached the plan's monitors: the sampler's metrics and
            # timeline came back with the record.
            assert {"device_write_bytes", "cpu_user_s"} <= names
            assert r.samples and {"write_bps", "cpu_user_pct"} <= set(r.samples[0])
            assert r.provenance["mkfs"]["argv"][0] == f"mkfs.{r.fs}"
        else:
            assert "not supported" in r.message
    # Nothing left behind: no QEMU of ours, no run directory, the console log kept.
    assert not _qemu_pids(tmp_path)
    assert not list(tmp_path.glob("vm-*"))
    assert Path(result.console_log).is_file()


def test_doctor_facts(guest_image: GuestImage) -> None:
    facts = doctor_facts(CACHE)
    assert facts["qemu"]["version"]
    assert facts["accel"] in ("kvm", "tcg")
    assert facts["kvm"]["reason"]
    assert facts["images"], "the image test above builds one"
    # KVM is usable only once a current image's kernel ran under it (a boot sector alone
    # can run where Linux hangs, as on the nested /dev/kvm of docs/vm.md).
    assert not facts["kvm"]["usable"] or "the guest kernel" in facts["kvm"]["reason"]
    # What the VM adds is what this host's kernel lacks (a fact of the machine, not a
    # list), and every cached guest kernel has all of it.
    lacks = host_lacks()
    assert lacks and facts["vm_filesystems"] == lacks
    assert facts["guest_filesystems"]
    for per_fs in facts["guest_filesystems"].values():
        assert per_fs == dict.fromkeys(lacks, True)


CHILD = """
import sys
from pathlib import Path
from fsbench.plan.model import Cell, FsConfig
from fsbench.vm import VmCell, VmJob, VmSpec, run_in_vm
cell = Cell(FsConfig(type="f2fs"), "alloc", {"method": "write-4k", "size": 8 << 20})
run_in_vm(
    VmJob([VmCell.of(0, 1, cell)], "tiny"),
    VmSpec(
        ram_mb=512, vcpus=1, scratch_bytes=1 << 30, cache_dir=Path(sys.argv[1]),
        workdir=Path(sys.argv[2]),
    ),
)
"""


def test_ctrl_c_kills_qemu_and_cleans_up(tmp_path: Path, guest_image: GuestImage) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(CACHE), str(tmp_path)], preexec_fn=default_interrupts
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


def test_vm_run_skips_a_refused_cell_and_says_where_each_trial_ran(
    workdir: Path, guest_image: GuestImage
) -> None:
    """Through `fsbench run` and the VM executor: jfs refuses fallocate once and is never
    asked again (its later slots are skipped on purpose, not recorded as failed); every
    record says its place in its round and the trial before it in the guest."""
    db = workdir / "r.db"
    res = fsbench(
        "run",
        "--target",
        "vm",
        "--fs",
        "jfs,f2fs",
        "--workload",
        "alloc",
        "--set",
        "method=fallocate",
        "--set",
        "size=8M",
        "--scale",
        "tiny",
        "--reps",
        "2",
        *GUEST,
        "--image-size",
        "1G",
        "--workdir",
        str(workdir / "work"),
        "--db",
        str(db),
        timeout=900,
    )
    assert res.returncode == 3, res.stderr[-3000:]  # unsupported cells, nothing failed
    store = Store(db)
    run_id = store.latest_run_id()
    assert run_id is not None
    trials = sorted(store.get_trials(run_id), key=lambda t: t.seq)
    assert [t.status for t in trials if t.fs == "jfs"] == ["unsupported"]
    f2fs = [t for t in trials if t.fs == "f2fs"]
    assert sorted(t.rep for t in f2fs) == [0, 1, 2]
    assert all(t.status == "ok" for t in f2fs), [t.message for t in f2fs]
    assert all(store.get_samples(t.id or 0) for t in f2fs)  # the guest's 10 Hz timeline
    # One guest ran the whole group: each trial follows the one stored before it.
    assert [t.previous_cell for t in trials] == ["", *[t.cell_key for t in trials[:-1]]]
    assert all(t.position in (1, 2) for t in trials)
    assert {t.position for t in trials if t.rep == 0} == {1, 2}  # the warm-up round
    assert all(t.provenance["vm"]["guest"]["kernel"] for t in trials)
    summary = store.get_run(run_id).target["summary"]
    assert summary.startswith("QEMU guest, kernel ") and "virtio scratch disk 1.0 GiB" in summary
    assert not list((workdir / "work").glob("vm-*"))


def _trial_started(work: Path, rep: int) -> bool:
    """Whether a guest's console under `work` says a trial of `rep` started."""
    return any(
        f" rep {rep}: " in c.read_text(errors="replace") for c in work.glob("vm-*/console.log")
    )


def test_a_frozen_guest_fails_its_trial_at_the_time_limit_and_the_run_goes_on(
    workdir: Path, guest_image: GuestImage
) -> None:
    """The guest's QEMU SIGSTOPped in a counted trial (a hung guest): that trial fails at
    its time limit (--trial-timeout plus the host's margin) with the console's last
    lines, QEMU is killed, and the slots after it run in a fresh guest and are counted;
    nothing is left behind."""
    db, work = workdir / "r.db", workdir / "work"
    args = ["run", "--target", "vm", "--fs", "ext4,xfs", "--workload", "alloc", *GUEST]
    args += ["--set", "method=write-4k", "--set", "size=8M", "--scale", "tiny", "--reps", "2"]
    args += ["--image-size", "1G", "--trial-timeout", "30", "--workdir", str(work)]
    run = subprocess.Popen(
        [sys.executable, "-m", "fsbench.cli", *cli_args(*args, "--db", str(db))],
        env=cli_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        frozen = None
        deadline = time.monotonic() + 600
        while frozen is None and time.monotonic() < deadline and run.poll() is None:
            pids = _qemu_pids(work)
            if pids and _trial_started(work, 1):  # past the warm-up round
                frozen = pids.pop()
                os.kill(frozen, signal.SIGSTOP)
            time.sleep(0.05)
        _, err = run.communicate(timeout=900)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert frozen is not None, err
    assert run.returncode == 4, err[-3000:]  # a trial failed, the run finished
    trials = sorted(Store(db).get_trials(1), key=lambda t: t.seq)
    assert [t.seq for t in trials] == list(range(6))  # every slot, once
    failed = [t for t in trials if t.status == "failed"]
    assert len(failed) == 1 and failed[0].rep > 0, [(t.seq, t.status, t.message) for t in trials]
    assert "no trial finished for 90 s (its time limit + 60 s): QEMU killed" in failed[0].message
    assert "serial console (last lines)" in failed[0].detail and " rep 1: " in failed[0].detail
    after = [t for t in trials if t.seq > failed[0].seq]
    assert after and all(t.status == "ok" and t.rep > 0 for t in after), after
    assert after[0].previous_cell == ""  # a fresh guest ran it
    assert not Path(f"/proc/{frozen}").exists() and not _qemu_pids(work)
    assert ours(workdir) == ([], []) and not list(work.glob("vm-*"))


def test_your_own_command_and_a_replay_run_in_the_guest(
    workdir: Path, guest_image: GuestImage
) -> None:
    """`command` and `replay` in one guest: the command runs in the guest's mounted
    filesystem with the guest's own tools; the trace, recorded on this host and named
    relative to the directory fsbench runs in, is carried into the guest with the engine
    and replays every call it holds, none unlike the recording. A trace that is not there
    is refused before any guest boots."""
    plan, trace = your_own_plan(workdir)
    recorded = _engine.trace_summary(trace)
    db, work = workdir / "r.db", workdir / "work"
    args = ["run", str(plan), "--target", "vm", *GUEST, "--scale", "tiny", "--reps", "2"]
    args += ["--warmup", "0", "--image-size", "1G", "--workdir", str(work), "--json"]
    res = fsbench(*args, "--db", str(db), timeout=1200, cwd=workdir)
    assert res.returncode == 0, res.stderr[-3000:]
    trials = Store(db).get_trials(Store(db).latest_run_id() or 0)
    assert {(t.workload, t.status) for t in trials} == {("command", "ok"), ("replay", "ok")}
    assert all(t.provenance["vm"]["guest"]["kernel"] for t in trials)  # ran in the guest
    rows = {(r["workload"], r["metric"]): r for r in json.loads(res.stdout)["rows"]}
    assert rows[("command", "files_made")]["n"] == 2
    assert rows[("command", "files_made")]["mean"] == 50
    assert rows[("replay", "calls")]["n"] == 2
    assert rows[("replay", "calls")]["mean"] == recorded["calls"] > 0
    assert rows[("replay", "mismatches")]["mean"] == 0
    assert rows[("replay", "calls_not_replayed")]["mean"] == 0
    assert not list(work.glob("vm-*"))
    # Refused on this host, before a guest boots: the trace is not there to carry.
    trace.unlink()
    res = fsbench(*args, "--db", str(db), cwd=workdir)
    assert res.returncode == 2, res.stderr
    assert f"workload replay: trace {trace.name}: no such file" in res.stderr
    assert not list(work.glob("vm-*"))
