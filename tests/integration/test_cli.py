"""The `fsbench` command end to end, as a user runs it: real loop images, real mkfs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fsbench.store.results import Store
from tests.helpers import assert_every_slot_once, default_interrupts, fsbench, ours
from tests.safety import root_disk

pytestmark = pytest.mark.integration

ROOT_DISK = "<the disk under />"


@pytest.fixture
def common(workdir: Path) -> list[str]:
    return [
        "--workdir",
        str(workdir / "work"),
        "--db",
        str(workdir / "results.db"),
        "--image-size",
        "1G",
        "--scale",
        "tiny",
        "--no-report",
    ]


def test_run_json_rows(common: list[str], workdir: Path) -> None:
    res = fsbench(
        "run",
        "--fs",
        "ext4,xfs",
        "--workload",
        "alloc",
        "--reps",
        "2",
        "--set",
        "method=fallocate,write-4k",
        "--set",
        "size=16M",
        "--json",
        *common,
    )
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    rows = doc["rows"]
    assert {(r["config"], r["params"]["method"]) for r in rows} == {
        ("ext4", "fallocate"),
        ("ext4", "write-4k"),
        ("xfs", "fallocate"),
        ("xfs", "write-4k"),
    }
    seconds = [r for r in rows if r["metric"] == "seconds"]
    assert all(r["status"] == "ok" and r["n"] == 2 and len(r["values"]) == 2 for r in seconds)
    assert all(r["ci95"][0] <= r["mean"] <= r["ci95"][1] for r in seconds)
    frags = [r for r in rows if r["metric"] == "fragments"]
    assert frags and all(r["mean"] >= 1 and r["better"] == "lower" for r in frags)
    assert doc["target"]["kind"] == "loop" and doc["target"]["direct_io"] is True
    assert doc["host"]["kernel"]
    assert ours(workdir) == ([], [])
    # --no-report (in `common`): no HTML report next to the database.
    assert not (workdir / "reports").exists()
    # The same run read back from the store, in every format.
    for fmt, needle in [
        ("md", "| config \\ method | fallocate | write-4k |"),
        ("csv", "run,config,fs,workload"),
        ("table", "alloc: seconds"),
    ]:
        rep = fsbench(
            "report", str(doc["run"]), "--format", fmt, "--db", str(workdir / "results.db")
        )
        assert rep.returncode == 0 and needle in rep.stdout, rep.stdout + rep.stderr


def test_refused_mount_option_is_unsupported_and_the_run_goes_on(
    common: list[str], workdir: Path
) -> None:
    res = fsbench(
        "run",
        "--fs",
        "ext4:mount=nomballoc",
        "--fs",
        "xfs",
        "--workload",
        "alloc",
        "--set",
        "method=fallocate",
        "--reps",
        "2",
        "--json",
        *common,
    )
    assert res.returncode == 3, res.stderr  # some cells unsupported: not an error
    rows = json.loads(res.stdout)["rows"]
    ext4 = [r for r in rows if r["fs"] == "ext4"]
    assert ext4 and all(r["status"] == "unsupported" for r in ext4)
    assert "Unknown parameter 'nomballoc'" in ext4[0]["message"]
    xfs = next(r for r in rows if r["fs"] == "xfs" and r["metric"] == "seconds")
    assert xfs["status"] == "ok" and xfs["n"] == 2
    # Refused once, not asked again every rep.
    store = Store(workdir / "results.db")
    trials = store.get_trials(store.latest_run_id() or 0)
    assert [t.status for t in trials if t.fs == "ext4"] == ["unsupported"]
    assert ours(workdir) == ([], [])


def test_ignored_option_is_shown_beside_the_result(common: list[str], workdir: Path) -> None:
    res = fsbench(
        "run",
        "--fs",
        "ext4:mount=i_version",
        "--workload",
        "alloc",
        "--set",
        "method=fallocate",
        "--reps",
        "1",
        *common,
    )
    assert res.returncode == 0, res.stderr
    assert "ext4 i_version [" in res.stdout
    assert (
        "mount option i_version ignored: kernel: EXT4-fs: Ignoring removed i_version" in res.stdout
    )


def test_unavailable_filesystem_is_unsupported(common: list[str]) -> None:
    res = fsbench(
        "run",
        "--fs",
        "jfs,ext4",
        "--workload",
        "alloc",
        "--set",
        "method=fallocate",
        "--reps",
        "1",
        "--json",
        *common,
    )
    assert res.returncode == 3, res.stderr
    jfs = next(r for r in json.loads(res.stdout)["rows"] if r["fs"] == "jfs")
    assert jfs["status"] == "unsupported" and "lacks jfs" in jfs["message"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--fs", "zfs"], "unknown filesystem 'zfs'"),
        (["--workload", "bonnie"], "unknown workload 'bonnie'"),
        (["--set", "clients=4"], "no such parameter"),
        (["--set", "size=-1G"], "size"),
        (["--reps", "0"], "reps"),
        (["--image-size", "huge"], "--image-size"),
        (["--preset", "nope"], "unknown preset"),
        (["--image-size", "1P"], "free"),
        (["--set", "size=8G"], "needs"),
        (["--destroy-data"], "--destroy-data only makes sense with --device"),
        (["--device", ROOT_DISK], "--destroy-data"),
        (["--device", ROOT_DISK, "--destroy-data"], "root filesystem"),
        (["--device", "/etc/passwd", "--destroy-data"], "not a block device"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str, workdir: Path) -> None:
    if ROOT_DISK in args:  # found by findmnt, never assumed (tests/safety.py)
        disk = root_disk()
        if disk is None:
            pytest.skip("/ is not on a block device here")
        args = [disk if a == ROOT_DISK else a for a in args]
    res = fsbench(
        "run",
        "--workdir",
        str(workdir / "work"),
        "--db",
        str(workdir / "r.db"),
        "--image-size",
        "1G",
        "--scale",
        "tiny",
        *args,
    )
    # Later flags win: an --image-size in args overrides the 1G above.
    assert res.returncode == 2, res.stdout + res.stderr
    assert message in res.stderr
    assert "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert ours(workdir) == ([], [])


def test_invalid_toml_plan(workdir: Path) -> None:
    plan = workdir / "plan.toml"
    plan.write_text("reps = [\n")
    res = fsbench("run", str(plan), "--db", str(workdir / "r.db"))
    assert res.returncode == 2 and "invalid TOML" in res.stderr and "Traceback" not in res.stderr


def test_mounted_device_is_refused_and_untouched(
    make_fs: object, loopdev: str, workdir: Path
) -> None:
    mnt = make_fs("ext4")  # type: ignore[operator]
    (mnt / "precious").write_text("keep me")
    res = fsbench(
        "run",
        "--device",
        loopdev,
        "--destroy-data",
        "--db",
        str(workdir / "r.db"),
        "--workdir",
        str(workdir / "work"),
        "--scale",
        "tiny",
    )
    assert res.returncode == 2 and "mounted" in res.stderr, res.stderr
    assert (mnt / "precious").read_text() == "keep me"


# SIGHUP: the session a nightly job ran in closed; a second signal while the first is
# cleaned up (an impatient Ctrl-C, a supervisor's SIGTERM after its SIGHUP) is held.
@pytest.mark.parametrize(
    "signals",
    [(signal.SIGINT,), (signal.SIGTERM,), (signal.SIGHUP,), (signal.SIGHUP, signal.SIGTERM)],
    ids=["SIGINT", "SIGTERM", "SIGHUP", "SIGHUP-then-SIGTERM"],
)
def test_interrupt_releases_everything_and_keeps_finished_trials(
    signals: tuple[signal.Signals, ...], common: list[str], workdir: Path
) -> None:
    db = workdir / "results.db"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fsbench.cli",
            "run",
            "--fs",
            "ext4,xfs,btrfs",
            "--workload",
            "alloc",
            "--set",
            "method=write-4k",
            "--reps",
            "50",
            *common,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_interrupts,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # wait until some trials are stored
            if db.exists():
                s = Store(db)
                rid = s.latest_run_id()
                if rid and len(s.get_trials(rid)) >= 2:
                    break
            time.sleep(0.2)
        for sig in signals:
            proc.send_signal(sig)
            time.sleep(0.05)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    store = Store(db)
    run = store.get_run(store.latest_run_id() or 0)
    assert run.status == "interrupted"
    trials = store.get_trials(run.id)
    assert len(trials) >= 2 and all(t.status == "ok" for t in trials)
    assert len({t.seq for t in trials}) == len(trials)
    assert ours(workdir) == ([], [])
    assert not list((workdir / "work").glob("fsbench-*.img"))


def test_doctor_json(workdir: Path) -> None:
    res = fsbench("doctor", "--json", "--workdir", str(workdir), "--db", str(workdir / "r.db"))
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads(res.stdout)
    fs = {f["name"]: f for f in doc["filesystems"]}
    for name in ("ext2", "ext3", "ext4", "xfs", "btrfs"):
        assert fs[name]["available"] is True and fs[name]["version"]
    for name in ("jfs", "reiserfs", "f2fs", "nilfs2"):
        assert fs[name]["available"] is False and "lacks" in fs[name]["reason"]
    wl = {w["name"]: w for w in doc["workloads"]}
    assert wl["alloc"]["available"] is True and wl["alloc"]["reason"] == "ok"
    checks = {c["name"]: c for c in doc["checks"]}
    assert checks["root"]["ok"] and checks["loop devices"]["ok"]
    assert (
        checks["memory cgroup"]["ok"] and "the mem knob caps" in checks["memory cgroup"]["detail"]
    )
    assert checks["aging recipes"]["detail"] == "git-pulls: ok; churn: ok"
    assert wl["aging"]["available"] is True


def test_list_commands() -> None:
    for what, needle in [("filesystems", "btrfs"), ("workloads", "alloc"), ("presets", "quick")]:
        res = fsbench("list", what, "--json")
        assert res.returncode == 0 and needle in res.stdout, res.stderr


def test_stale_resources_of_a_killed_run_are_released(common: list[str], workdir: Path) -> None:
    db = workdir / "results.db"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fsbench.cli",
            "run",
            "--fs",
            "ext4",
            "--workload",
            "alloc",
            "--set",
            "method=write-4k",
            "--reps",
            "50",
            *common,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not ours(workdir)[1]:
            time.sleep(0.05)
        proc.kill()  # kill -9: no cleanup runs
        proc.communicate(timeout=30)
        loops, _ = ours(workdir)
        assert loops, "the killed run should have left its loop device"
        res = fsbench("doctor", "--workdir", str(workdir / "work"), "--db", str(db))
        assert "released stale" in res.stdout, res.stdout + res.stderr
        assert ours(workdir) == ([], [])
    finally:
        if proc.poll() is None:
            proc.kill()


def test_knobs_are_dimensions_and_restored(common: list[str], workdir: Path) -> None:
    before = Path("/proc/sys/vm/dirty_ratio").read_text()
    before_bytes = Path("/proc/sys/vm/dirty_bytes").read_text()
    res = fsbench(
        "run",
        "--fs",
        "ext2,ext4",
        "--workload",
        "alloc",
        "--reps",
        "1",
        "--set",
        "method=fallocate,write-4k",
        "--set",
        "size=8M",
        "--knob",
        "vm.dirty_ratio=1,20",
        "--knob",
        "scheduler=mq-deadline",
        "--json",
        *common,
    )
    # ext2 cannot fallocate: that trial ends unsupported, and the knobs still come back.
    assert res.returncode == 3, res.stderr
    rows = [r for r in json.loads(res.stdout)["rows"] if r["metric"] == "seconds"]
    ext4 = [r for r in rows if r["fs"] == "ext4"]
    assert len(ext4) == 4  # 2 methods x 2 dirty ratios
    assert {(r["params"]["method"], r["knobs"]["vm.dirty_ratio"]) for r in ext4} == {
        ("fallocate", "1"),
        ("fallocate", "20"),
        ("write-4k", "1"),
        ("write-4k", "20"),
    }
    assert all(r["knobs"]["scheduler"] == "mq-deadline" for r in rows)
    assert Path("/proc/sys/vm/dirty_ratio").read_text() == before
    assert Path("/proc/sys/vm/dirty_bytes").read_text() == before_bytes
    store = Store(workdir / "results.db")
    trials = store.get_trials(store.latest_run_id() or 0)
    assert all(t.provenance["knobs"]["scheduler"] == "mq-deadline" for t in trials)
    assert ours(workdir) == ([], [])
    table = fsbench("report", "--db", str(workdir / "results.db"))
    assert "vm.dirty_ratio" in table.stdout


def test_killed_run_resumes_and_keeps_every_trial_once(common: list[str], workdir: Path) -> None:
    db = workdir / "results.db"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fsbench.cli",
            "run",
            "--fs",
            "ext4,xfs",
            "--workload",
            "alloc",
            "--set",
            "method=fallocate,write-4k",
            "--set",
            "size=16M",
            "--reps",
            "3",
            *common,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if db.exists():
                s = Store(db)
                rid = s.latest_run_id()
                if rid and len(s.get_trials(rid)) >= 3:
                    break
            time.sleep(0.05)
        proc.kill()  # kill -9 in the middle of the matrix
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    store = Store(db)
    run_id = store.latest_run_id() or 0
    before = store.get_trials(run_id)
    # 2 configs x 2 methods x (3 reps + 1 warm-up round) = 16 slots.
    assert store.get_run(run_id).status == "running" and 3 <= len(before) < 16
    res = fsbench("run", "--resume", "--db", str(db), "--json")
    assert res.returncode == 0, res.stderr
    assert "resuming run" in res.stderr
    after = store.get_trials(run_id)
    assert_every_slot_once(after, 16)
    assert {(t.seq, t.started_at) for t in before} <= {(t.seq, t.started_at) for t in after}
    assert store.get_run(run_id).status == "finished"
    rows = [r for r in json.loads(res.stdout)["rows"] if r["metric"] == "seconds"]
    assert all(r["n"] == 3 for r in rows)
    assert ours(workdir) == ([], [])
    again = fsbench("run", "--resume", "--db", str(db))
    assert again.returncode == 2 and "no unfinished run" in again.stderr


def test_reps_auto_records_convergence(common: list[str], workdir: Path) -> None:
    res = fsbench(
        "run",
        "--fs",
        "ext4",
        "--workload",
        "alloc",
        "--set",
        "method=write-4k",
        "--set",
        "size=16M",
        "--reps",
        "auto",
        "--max-reps",
        "4",
        "--json",
        *common,
    )
    assert res.returncode == 0, res.stderr
    row = next(r for r in json.loads(res.stdout)["rows"] if r["metric"] == "seconds")
    assert 3 <= row["n"] <= 4
    store = Store(workdir / "results.db")
    conv = store.get_run(store.latest_run_id() or 0).convergence
    (entry,) = conv.values()
    assert entry["reps"] == row["n"] and entry["target_pct"] == 5.0
    assert entry["converged"] == (row["n"] == 3 or entry["half_width_pct"]["alloc:seconds"] <= 5)


def test_hanging_tool_hits_the_trial_timeout_and_the_run_goes_on(
    common: list[str], workdir: Path
) -> None:
    # dbench asked for 10 minutes, allowed 4 s: that trial fails, the next one runs.
    res = fsbench(
        "run",
        "--fs",
        "ext4,xfs",
        "--workload",
        "dbench",
        "--set",
        "clients=1",
        "--set",
        "duration=600",
        "--reps",
        "1",
        "--trial-timeout",
        "4",
        "--json",
        *common,
    )
    assert res.returncode == 4, res.stderr  # some trials failed
    rows = json.loads(res.stdout)["rows"]
    assert {r["fs"] for r in rows} == {"ext4", "xfs"}
    assert all(r["status"] == "failed" and "timed out after 4 s" in r["message"] for r in rows)
    assert ours(workdir) == ([], [])
    assert _live_processes("dbench") == []


def _live_processes(name: str) -> list[str]:
    """PIDs of running processes called name (zombies are dead: this machine's init does
    not always reap the children it inherits)."""
    live = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        state = stat[stat.rindex(")") + 2]
        if comm == name and state != "Z":
            live.append(pid)
    return live


def test_enospc_mid_workload_is_a_failed_trial(common: list[str], workdir: Path) -> None:
    """A filesystem that fills up mid-workload is a `failed` trial with the kernel's
    ENOSPC, and the rest of the matrix goes on. The 400M image passes the preflight's size
    check for 240M, but a 190M journal leaves ext4-full ~190M: ENOSPC must happen (a test
    that passes whether or not it does would prove nothing)."""
    plan = workdir / "full.toml"
    plan.write_text(
        'scale = "tiny"\nreps = 1\n[target]\nimage_size = "400M"\n'
        f'workdir = "{workdir / "work"}"\n'
        '[[fs]]\ntype = "ext4"\nlabel = "ext4-full"\nmkfs = "-J size=190"\n'
        '[[fs]]\ntype = "ext4"\n'
        '[[workload]]\nname = "alloc"\n[workload.params]\nmethod = "write-8k"\nsize = "240M"\n'
    )
    res = fsbench("run", str(plan), "--db", str(workdir / "r.db"), "--json")
    rows = [r for r in json.loads(res.stdout)["rows"] if r["metric"] in ("seconds", None)]
    by_config = {r["config"]: r for r in rows}
    assert set(by_config) == {"ext4-full", "ext4"}, res.stderr
    assert ours(workdir) == ([], [])
    full, control = by_config["ext4-full"], by_config["ext4"]
    assert full["status"] == "failed" and "No space left on device" in full["message"], full
    assert control["status"] == "ok", control
    assert res.returncode == 4, res.stderr  # some trial failed


def test_reports_read_while_a_run_writes(common: list[str], workdir: Path) -> None:
    db = workdir / "results.db"
    writer = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fsbench.cli",
            "run",
            "--fs",
            "ext4,xfs",
            "--workload",
            "alloc",
            "--set",
            "method=fallocate",
            "--set",
            "size=128M",
            "--reps",
            "12",
            *common,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    reads = 0
    try:
        while writer.poll() is None:
            if db.exists() and Store(db).latest_run_id():
                res = fsbench("report", "--format", "json", "--db", str(db))
                assert res.returncode == 0, res.stderr  # WAL: readers never see a torn write
                json.loads(res.stdout)
                reads += 1
        assert writer.returncode == 0, writer.stderr.read() if writer.stderr else ""
    finally:
        if writer.poll() is None:
            writer.kill()
        writer.wait()
    assert reads >= 2
    assert Store(db).integrity() == "ok"


def test_run_writes_the_html_report_next_to_the_database(workdir: Path) -> None:
    res = fsbench(
        "run",
        "--fs",
        "ext4,xfs",
        "--workload",
        "alloc",
        "--set",
        "method=fallocate",
        "--set",
        "size=8M",
        "--reps",
        "2",
        "--scale",
        "tiny",
        "--image-size",
        "1G",
        "--workdir",
        str(workdir / "work"),
        "--db",
        str(workdir / "results.db"),
        report=True,
    )
    assert res.returncode == 0, res.stderr
    page = workdir / "reports" / "run-1" / "report.html"
    assert f"report: {page}" in res.stderr
    text = page.read_text()
    assert page.stat().st_size > 10_000 and ("data:image" in text or "<svg" in text)
    assert "<title>fsbench run 1: custom</title>" in text  # the run it reports
    assert list(page.parent.glob("*.png")) and list(page.parent.glob("*.svg"))


def test_write_amplification_for_every_write_workload(common: list[str]) -> None:
    writers = [
        "alloc",
        "untar",
        "tree-copy",
        "fs_mark",
        "postmark",
        "gzip",
        "fio",
        "sysbench-fileio",
    ]
    res = fsbench(
        "run",
        "--fs",
        "ext4",
        "--workload",
        ",".join(writers),
        "--reps",
        "1",
        "--set",
        "method=write-4k",
        "--set",
        "files=300",
        "--set",
        "copies=1",
        "--set",
        "mode=rndwr",
        "--set",
        "layout=1x32M",
        "--json",
        *common,
    )
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)["rows"]
    for name in writers:
        wa = [r for r in rows if r["workload"] == name and r["metric"] == "write_amplification"]
        assert wa and wa[0]["mean"] > 0, name
