"""Knobs are restored after a trial, also when the trial fails, times out, or the run is
killed (the next `fsbench doctor` restores what the dead run's journal holds)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fsbench.execute.runner import Runner, cache_root, mount_root
from fsbench.execute.targets import stale
from fsbench.execute.targets.loop import LoopImage
from fsbench.plan import model as planning
from fsbench.plan.model import FsConfig, Plan, WorkloadSpec
from fsbench.system import contention, knobs
from fsbench.system.errors import Unsupported
from fsbench.workloads.base import Scale
from tests.helpers import TEST_DATA_HOME, ours

pytestmark = pytest.mark.integration

DIRTY = ("vm/dirty_ratio", "vm/dirty_bytes", "vm/dirty_background_ratio")


@pytest.fixture
def dirty_sysctls() -> Iterator[None]:
    """Whatever a test does to the dirty sysctls, the machine gets its values back."""
    saved = {n: Path("/proc/sys", n).read_text() for n in DIRTY}
    try:
        yield
    finally:
        for n in ("vm/dirty_bytes", "vm/dirty_ratio", "vm/dirty_background_ratio"):
            if saved[n].strip() != "0":
                Path("/proc/sys", n).write_text(saved[n])


def _sysctl(name: str) -> str:
    return Path("/proc/sys", name.replace(".", "/")).read_text().strip()


def _runner(workdir: Path, timeout: float | None = None) -> tuple[Runner, LoopImage]:
    target = LoopImage(workdir, 256 << 20)
    target.open()
    runner = Runner(target, mount_root(workdir), Scale.TINY, cache_root(workdir), timeout)
    return runner, target


def _cell(ratio: str) -> planning.Cell:
    plan = Plan(
        fs=[FsConfig(type="ext4")],
        workload=[WorkloadSpec(name="alloc", params={"method": "fallocate", "size": "16M"})],
        scale=Scale.TINY,
        knobs={"vm.dirty_ratio": ratio},
    )
    (cell,) = planning.expand(plan)
    return cell


def _scheduler(loopdev: str) -> str:
    text = Path(f"/sys/block/{os.path.basename(loopdev)}/queue/scheduler").read_text()
    m = re.search(r"\[([^\]]+)\]", text)
    assert m
    return m.group(1)


def _other_scheduler(loopdev: str) -> str:
    """One the kernel offers for this device besides the current one (bfq is a module
    that may not be loaded: offered lists differ between machines)."""
    text = Path(f"/sys/block/{os.path.basename(loopdev)}/queue/scheduler").read_text()
    offered = [name.strip("[]") for name in text.split()]
    (other, *_) = [name for name in offered if name != _scheduler(loopdev)]
    return other


def test_scheduler_and_sysctls_restored_after_failure(loopdev: str, workdir: Path) -> None:
    sched = _scheduler(loopdev)
    ratio = Path("/proc/sys/vm/dirty_ratio").read_text()
    dirty_bytes = Path("/proc/sys/vm/dirty_bytes").read_text()
    other = _other_scheduler(loopdev)
    journal = knobs.journal_path(workdir)
    with pytest.raises(RuntimeError, match="workload blew up"):
        with knobs.applied(
            {"scheduler": other, "vm.dirty_bytes": "67108864"}, loopdev, journal
        ) as on:
            assert on.in_force == {"scheduler": other, "vm.dirty_bytes": "67108864"}
            assert _scheduler(loopdev) == other
            # Setting dirty_bytes zeroes dirty_ratio: both must come back.
            assert Path("/proc/sys/vm/dirty_ratio").read_text().strip() == "0"
            raise RuntimeError("workload blew up")
    assert _scheduler(loopdev) == sched
    assert Path("/proc/sys/vm/dirty_ratio").read_text() == ratio
    assert Path("/proc/sys/vm/dirty_bytes").read_text() == dirty_bytes
    assert on.not_restored == [] and not journal.exists()


def test_refused_value_is_unsupported_and_nothing_changes(loopdev: str, workdir: Path) -> None:
    ratio = Path("/proc/sys/vm/dirty_ratio").read_text()
    journal = knobs.journal_path(workdir)
    with pytest.raises(Unsupported, match="vm.dirty_ratio=500 refused"):
        with knobs.applied({"vm.dirty_ratio": "500"}, loopdev, journal):
            pass
    assert Path("/proc/sys/vm/dirty_ratio").read_text() == ratio
    assert not journal.exists()


def _stress_pids() -> list[int]:
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            if Path(f"/proc/{pid}/comm").read_text().startswith("stress-ng"):
                found.append(int(pid))
        except OSError:
            pass
    return found


def _wait_for_stress(timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout  # the child is python until it has exec'd
    while not _stress_pids():
        assert time.monotonic() < deadline, "no stress-ng process"
        time.sleep(0.05)


def _wait_until_gone(timeout: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while _stress_pids() and time.monotonic() < deadline:
        time.sleep(0.1)
    return _stress_pids()


def test_busy_contention_runs_and_stops(workdir: Path) -> None:
    load_file = contention.load_path(workdir)
    with contention.contention("busy", workdir / "load", load_file, limit_s=30) as info:
        assert "--cpu" in info["load"]
        _wait_for_stress()
        written = json.loads(load_file.read_text())  # written down while it runs
        assert written["pid"] == os.getpid() and written["pgid"] in _stress_pids()
    assert _stress_pids() == []
    assert not load_file.exists()


def test_a_killed_run_leaves_no_load_running(workdir: Path) -> None:
    """kill -9 of fsbench mid-trial under contention=busy: stress-ng dies with it (its
    parent-death signal), and the next `fsbench doctor` clears what the run wrote down."""
    work = workdir / "work"
    env = {**os.environ, "XDG_DATA_HOME": str(TEST_DATA_HOME)}
    argv = [sys.executable, "-m", "fsbench.cli", "run", "--fs", "ext4", "--workload", "dbench"]
    argv += ["--set", "clients=1", "--set", "duration=120", "--knob", "contention=busy"]
    argv += ["--reps", "1", "--warmup", "0", "--scale", "tiny", "--image-size", "1G"]
    argv += ["--workdir", str(work), "--db", str(workdir / "r.db"), "--no-report"]
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    load_file = contention.load_path(work, pid=child.pid)
    try:
        deadline = time.monotonic() + 120
        while not (load_file.exists() and _stress_pids()):
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            assert time.monotonic() < deadline, "the run never started its load"
            time.sleep(0.05)
    finally:
        child.kill()
        child.wait()
    assert _wait_until_gone() == []
    res = subprocess.run(
        [sys.executable, "-m", "fsbench.cli", "doctor", "--workdir", str(work), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert not load_file.exists(), res.stdout + res.stderr
    assert ours(work) == ([], [])


def test_release_stale_stops_the_load_a_dead_run_left(workdir: Path) -> None:
    """A stress-ng group whose owner is gone (the parent-death signal missed it) is stopped
    by the next run's stale cleanup; a load file naming a process that is no longer that
    stress-ng (another start time: its pid reused) stops nothing."""
    dead, other = subprocess.Popen(["true"]), subprocess.Popen(["true"])  # owners now gone
    dead.wait()
    other.wait()
    load = subprocess.Popen(
        ["stress-ng", "--cpu", "1", "--cpu-load", "10", "--timeout", "120s", "--quiet"],
        start_new_session=True,
    )
    bystander = subprocess.Popen(["sleep", "120"], start_new_session=True)
    try:
        _wait_for_stress()
        contention._write_load(contention.load_path(workdir, dead.pid), load.pid)
        impostor = contention.load_path(workdir, other.pid)
        impostor.write_text(json.dumps({"pid": 1, "pgid": bystander.pid, "start_time": "1"}))
        lines = stale.release_stale(workdir)
        assert any(ln.startswith(f"stopped stress-ng (process group {load.pid}") for ln in lines)
        assert load.wait(timeout=15) is not None
        assert bystander.poll() is None  # not the process the file meant
        assert not contention.load_path(workdir, dead.pid).exists() and not impostor.exists()
    finally:
        for p in (load, bystander):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def test_restore_runs_after_the_alarm_is_disarmed(
    workdir: Path, dirty_sysctls: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The per-trial alarm cannot fire in the middle of putting the knobs back."""
    original = _sysctl("vm.dirty_ratio")
    timers: list[float] = []
    real_write = knobs._write

    def write(path: Path, value: str) -> None:
        if value == original:  # the restore
            timers.append(signal.getitimer(signal.ITIMER_REAL)[0])
        real_write(path, value)

    monkeypatch.setattr(knobs, "_write", write)
    runner, target = _runner(workdir, timeout=600)
    try:
        (record,) = runner.run_cell(1, 1, _cell("7"))
    finally:
        target.close()
    assert record.status == "ok", record.message
    assert record.provenance["knobs"] == {"vm.dirty_ratio": "7"}
    assert timers == [0.0]
    assert _sysctl("vm.dirty_ratio") == original
    assert not knobs.journal_path(workdir).exists()


def test_a_failed_restore_is_a_flag_on_the_trial(
    workdir: Path, dirty_sysctls: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = _sysctl("vm.dirty_ratio")
    real_write = knobs._write

    def write(path: Path, value: str) -> None:
        if path.name == "dirty_ratio" and value == original:
            raise OSError(5, "Input/output error")
        real_write(path, value)

    monkeypatch.setattr(knobs, "_write", write)
    runner, target = _runner(workdir)
    try:
        (record,) = runner.run_cell(1, 1, _cell("7"))
        assert record.status == "ok", record.message
        flag = record.provenance["flags"]["knob-restore-failed"]
        assert flag == f"vm.dirty_ratio={original}: Input/output error"
        assert record.provenance["knob_restore"] == [flag]
        assert _sysctl("vm.dirty_ratio") == "7"
        # Written down still: the next trial (or run, or doctor) puts the original back.
        assert [e.original for e in knobs.load(knobs.journal_path(workdir))][:1] == [original]
        monkeypatch.setattr(knobs, "_write", real_write)
        (again,) = runner.run_cell(2, 1, _cell("9"))
    finally:
        target.close()
    assert "knob-restore-failed" not in again.provenance["flags"]
    assert _sysctl("vm.dirty_ratio") == original
    assert not knobs.journal_path(workdir).exists()


def test_release_stale_restores_the_knobs_of_a_dead_run(workdir: Path, dirty_sysctls: None) -> None:
    original = _sysctl("vm.dirty_ratio")
    child = subprocess.Popen(["sleep", "30"])
    live = knobs.journal_path(workdir, pid=os.getpid())
    dead = knobs.journal_path(workdir, pid=child.pid)
    try:
        book = knobs.Journal(dead)
        book.remember("vm.dirty_ratio", Path("/proc/sys/vm/dirty_ratio"), original)
        Path("/proc/sys/vm/dirty_ratio").write_text("6\n")
        knobs.Journal(live).remember("vm.dirty_ratio", Path("/proc/sys/vm/dirty_ratio"), "6")
        assert stale.release_stale(workdir) == []  # its owner is alive: not touched
    finally:
        child.kill()
        child.wait()
    (found,) = stale.find_stale(workdir)
    assert found.kind == "knobs" and "vm.dirty_ratio (was" in found.describe()
    lines = stale.release_stale(workdir)
    assert lines == [f"restored vm.dirty_ratio={original} (pid {child.pid} gone)"]
    assert _sysctl("vm.dirty_ratio") == original
    assert not dead.exists() and live.exists()  # a live run's journal is its own


def test_a_killed_run_leaves_its_knob_changed_and_doctor_restores_it(
    workdir: Path, dirty_sysctls: None
) -> None:
    """SIGKILL mid-trial: no `finally` runs, the sysctl stays changed, and the journal
    the run wrote before changing it lets `fsbench doctor` put it back."""
    original = _sysctl("vm.dirty_ratio")
    changed = "7" if original != "7" else "8"
    work = workdir / "work"
    env = {**os.environ, "XDG_DATA_HOME": str(TEST_DATA_HOME)}
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fsbench.cli",
            "run",
            "--fs",
            "ext4",
            "--workload",
            "dbench",
            "--set",
            "clients=1",
            "--set",
            "duration=120",
            "--knob",
            f"vm.dirty_ratio={changed}",
            "--reps",
            "1",
            "--scale",
            "tiny",
            "--image-size",
            "1G",
            "--workdir",
            str(work),
            "--db",
            str(workdir / "r.db"),
            "--no-report",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    journal = knobs.journal_path(work, pid=child.pid)
    try:
        deadline = time.monotonic() + 120
        while not (journal.exists() and _sysctl("vm.dirty_ratio") == changed):
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            assert time.monotonic() < deadline, "the run never changed the knob"
            time.sleep(0.05)
        time.sleep(1.0)  # well inside the 120 s trial
    finally:
        child.kill()
        child.wait()
    assert _sysctl("vm.dirty_ratio") == changed
    assert [(e.name, e.original) for e in knobs.load(journal)][:1] == [("vm.dirty_ratio", original)]
    res = subprocess.run(
        [sys.executable, "-m", "fsbench.cli", "doctor", "--workdir", str(work), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert _sysctl("vm.dirty_ratio") == original, res.stdout + res.stderr
    assert not journal.exists()
    report = json.loads(res.stdout)
    assert f"restored vm.dirty_ratio={original} (pid {child.pid} gone)" in report["released"]
    check = next(c for c in report["checks"] if c["name"] == "system knobs")
    assert check["ok"] and f"vm.dirty_ratio={original}" in check["detail"]
    assert ours(work) == ([], [])  # its loop device and mount went too
