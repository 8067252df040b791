"""The crash workload end to end in QEMU guests: power cuts during replace-rename on ext4
data=ordered and data=writeback (the issue's own command, at 2 crashes), fsync-append
losing nothing, the counts with their n, the kept cases, safety beside speed in the
report, nothing left behind, and a killed run resumed. The checker fires: ext4 mounted
noauto_da_alloc leaves renamed files empty, and a volatile-cache state of ext4 mounted
barrier=0 loses fsync()ed records; each with its seed, replayed by the kept command."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from fsbench.store.results import Store
from fsbench.vm.crash.host import case_seed, cut_after
from fsbench.vm.images import GuestImage
from tests.helpers import GUEST, VM_MARKS, assert_every_slot_once, fsbench

pytestmark = VM_MARKS
COUNTS = ("crashes", "damaged_crashes", "acked_lost", "files_empty", "files_mixed", "fsck_errors")


def _qemu_of(workdir: Path) -> list[int]:
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                argv = (p / "cmdline").read_bytes()
            except OSError:
                continue
            if b"qemu-system" in argv and str(workdir).encode() in argv:
                out.append(int(p.name))
    return out


def _crash_run(workdir: Path, *args: str) -> dict:  # type: ignore[type-arg]
    return _run(workdir, "--target", "vm", "--workload", "crash", *args)


def _run(workdir: Path, *args: str) -> dict:  # type: ignore[type-arg]
    res = fsbench(
        "run",
        *args,
        "--scale",
        "tiny",
        *GUEST,
        "--image-size",
        "2G",
        "--workdir",
        str(workdir / "work"),
        "--db",
        str(workdir / "r.db"),
        "--json",
        timeout=1500,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout)  # type: ignore[no-any-return]


def test_power_cuts_on_ordered_and_writeback(workdir: Path, guest_image: GuestImage) -> None:
    out = _crash_run(
        workdir,
        *["--fs", "ext4:mount=data=ordered", "--fs", "ext4:mount=data=writeback"],
        *["--set", "pattern=replace-rename", "--set", "crashes=2"],
        *["--workload", "untar", "--reps", "1"],  # the speed side
    )
    untar = [r for r in out["rows"] if r["workload"] == "untar" and r["metric"] == "seconds"]
    assert len(untar) == 2 and all(r["n"] == 1 and r["status"] == "ok" for r in untar)
    out["rows"] = [r for r in out["rows"] if r["workload"] == "crash"]
    rows = {(r["config"], r["metric"]): r for r in out["rows"]}
    for config in ("ext4 data=ordered", "ext4 data=writeback"):
        for metric in COUNTS:
            row = rows[(config, metric)]
            assert row["status"] == "ok" and row["n"] == 1, row
            assert row["over"] == {"n": 2, "of": "crashes"}  # each count with its N
        assert rows[(config, "crashes")]["mean"] == 2  # n = 2 power cuts per config
        # Every cut caught the journal mid-transaction: the kernel said it replayed it.
        assert rows[(config, "journal_replays")]["mean"] == 2
    # data=ordered flushes a renamed-over file's data before the rename commits
    # (auto_da_alloc): no file is ever empty or mixed.
    assert rows[("ext4 data=ordered", "damaged_crashes")]["mean"] == 0

    store = Store(workdir / "r.db")
    run_id = store.latest_run_id()
    assert run_id is not None
    trials = store.get_trials(run_id)
    assert not any(t.warmup for t in trials if t.workload == "crash")  # nothing to warm
    for t in [t for t in trials if t.workload == "crash"]:
        crash = t.provenance["crash"]
        assert crash["n"] == 2 and len(crash["crashes"]) == 2
        seeds = [c["seed"] for c in crash["crashes"]]
        assert len(set(seeds)) == 2
        assert all(c["acks"] > 0 and 0.2 <= c["cut_after_s"] <= 7 for c in crash["crashes"])
        for case in crash["failing"]:  # kept whole, with what replays it
            assert case["damage"] and case["acks_last"] and case["fsck_before"]["argv"]
            assert f"--set replay={case['seed']}" in case["replay"]
    # The report says it beside the configs.
    text = fsbench("report", str(run_id), "--db", str(workdir / "r.db")).stdout
    assert "Safety beside speed" in text and "replace-rename:" in text
    assert "untar: " in text  # the speed against the first config, beside the crashes
    # Nothing left behind: no QEMU, no run directory, no scratch disk.
    assert not _qemu_of(workdir)
    assert not list((workdir / "work").glob("vm-*"))


def test_fsync_append_loses_no_acknowledged_record(workdir: Path, guest_image: GuestImage) -> None:
    out = _crash_run(workdir, "--fs", "ext4", "--set", "pattern=fsync-append", "--set", "crashes=2")
    rows = {r["metric"]: r for r in out["rows"]}
    assert rows["crashes"]["mean"] == 2
    assert rows["acked_ops"]["mean"] > 0  # records were acknowledged before each cut
    assert rows["acked_lost"]["mean"] == 0 and rows["damaged_crashes"]["mean"] == 0
    # The guest kernel has dm-log-writes: each crash also checked one volatile-cache state
    # (a flush point + a random part of the writes after it), where fsync still holds.
    assert rows["cache_states"]["mean"] == 2
    assert rows["cache_acked_lost"]["mean"] == 0 and rows["cache_damaged"]["mean"] == 0
    trial = Store(workdir / "r.db").get_trials(1)[0]
    assert trial.provenance["crash"]["volatile_cache"].startswith("dm-log-writes")
    for crash in trial.provenance["crash"]["crashes"]:
        state = crash["cache"]
        assert state["entries"] > state["flush_point"] >= 0
        assert 0 <= state["kept_writes"] <= state["pending_writes"]
    # volatile_cache=false checks no such state: test_noauto_da_alloc_... runs with it.


# A seed whose first crash is cut 6-7 s after the pattern began in repetitions 0-2: past
# ext4's first journal commit (every 5 s), so renames are on disk when the power goes.
LATE_CUT_SEED = 48


def _replayed(workdir: Path, case: dict) -> dict:  # type: ignore[type-arg]
    """The kept case's own replay command, run as a user would paste it."""
    argv = shlex.split(case["replay"])
    assert argv[:2] == ["fsbench", "run"] and f"replay={case['seed']}" in argv
    return _run(workdir, *argv[2:])


def _failing(workdir: Path, run_id: int) -> list:  # type: ignore[type-arg]
    (trial,) = Store(workdir / "r.db").get_trials(run_id)
    return trial.provenance["crash"]["failing"]  # type: ignore[no-any-return]


def test_noauto_da_alloc_leaves_renamed_files_empty_and_the_seed_replays_it(
    workdir: Path, guest_image: GuestImage
) -> None:
    """Without auto_da_alloc, a rename over a file commits before the new data has blocks
    (delayed allocation): after the power cut, the renamed files are empty."""
    assert all(cut_after(case_seed(LATE_CUT_SEED, r, 0), 7.0) >= 6 for r in (0, 1, 2))
    out = _crash_run(
        workdir, "--fs", "ext4:mount=noauto_da_alloc", "--set", "pattern=replace-rename",
        "--set", "crashes=1", "--set", f"seed={LATE_CUT_SEED}", "--set", "volatile_cache=false",
    )  # fmt: skip
    rows = {r["metric"]: r["mean"] for r in out["rows"]}
    assert rows["damaged_crashes"] == 1 and rows["files_empty"] > 0, rows
    assert rows["journal_replays"] == 1
    # volatile_cache=false: no volatile-cache state was checked, and the trial says why.
    assert "cache_states" not in rows
    (trial,) = Store(workdir / "r.db").get_trials(out["run"])
    assert trial.provenance["crash"]["volatile_cache"].startswith(
        "not tested (volatile_cache=false)"
    )
    (case,) = _failing(workdir, out["run"])
    assert {d["kind"] for d in case["damage"]} == {"empty"}
    again = _replayed(workdir, case)
    replayed = {r["metric"]: r["mean"] for r in again["rows"]}
    assert replayed["damaged_crashes"] == rows["damaged_crashes"] == 1
    assert replayed["files_empty"] > 0
    (same,) = _failing(workdir, again["run"])
    assert same["seed"] == case["seed"] and same["cut_after_s"] == case["cut_after_s"]
    print(f"noauto_da_alloc seed {case['seed']}: {rows} / replayed {replayed}")


def test_without_barriers_a_volatile_cache_loses_fsynced_records_and_the_seed_replays_it(
    workdir: Path, guest_image: GuestImage
) -> None:
    """ext4 mounted barrier=0 never flushes: on this disk (no cache) every fsync()ed record
    survives the cut, but a disk with a volatile cache keeps only what a flush covered:
    not one record since mkfs."""
    out = _crash_run(
        workdir, "--fs", "ext4:mount=barrier=0", "--set", "pattern=fsync-append",
        "--set", "crashes=1", "--set", "seed=3",
    )  # fmt: skip
    rows = {r["metric"]: r["mean"] for r in out["rows"]}
    assert rows["acked_ops"] > 0 and rows["acked_lost"] == 0 and rows["damaged_crashes"] == 0
    assert rows["cache_states"] == 1 and rows["cache_damaged"] == 1, rows
    # Acknowledged records lost (usually every one, the log file with them: which of the
    # unflushed writes the state keeps is the seed's draw over however many the kernel's
    # timing made, so how many is not fixed, only that some are).
    assert 0 < rows["cache_acked_lost"] <= rows["acked_ops"], rows
    (case,) = _failing(workdir, out["run"])
    assert case["cache_damage"], case
    again = _replayed(workdir, case)
    replayed = {r["metric"]: r["mean"] for r in again["rows"]}
    # The replay's trial itself (its status and message when it did not come back ok).
    assert "cache_damaged" in replayed, [(r["status"], r["message"]) for r in again["rows"]]
    assert replayed["cache_damaged"] == rows["cache_damaged"] == 1
    assert 0 < replayed["cache_acked_lost"] <= replayed["acked_ops"], replayed
    (same,) = _failing(workdir, again["run"])
    assert same["seed"] == case["seed"]
    print(f"barrier=0 seed {case['seed']}: {rows} / replayed {replayed}")


def test_a_killed_crash_run_resumes_where_it_stopped(
    workdir: Path, guest_image: GuestImage
) -> None:
    db = workdir / "r.db"
    argv = [
        *[sys.executable, "-m", "fsbench.cli", "run", "--target", "vm", "--workload", "crash"],
        *["--fs", "ext4,xfs", "--set", "pattern=create-tree", "--set", "crashes=1"],
        *["--scale", "tiny", *GUEST, "--image-size", "2G", "--no-report"],
        *["--workdir", str(workdir / "work"), "--db", str(db)],
    ]
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline and child.poll() is None:
            if db.exists():
                rid = Store(db).latest_run_id()
                if rid and Store(db).get_trials(rid):
                    break
            time.sleep(0.5)
        child.send_signal(signal.SIGKILL)  # between (or in) the configs' crash series
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    store = Store(db)
    run_id = store.latest_run_id() or 0
    before = store.get_trials(run_id)
    assert store.get_run(run_id).status == "running" and len(before) == 1
    res = fsbench("run", "--resume", "--db", str(db), "--json", timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "resuming run" in res.stderr
    after = store.get_trials(run_id)
    assert_every_slot_once(after, 2, restarts=0)  # no warm-up: nothing to warm
    assert {t.config for t in after} == {"ext4", "xfs"}
    assert all(t.status == "ok" for t in after), [t.message for t in after]
    assert not _qemu_of(workdir)  # the killed run's guest was released by the resume
    assert not list((workdir / "work").glob("vm-*"))
