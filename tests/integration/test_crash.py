"""The crash workload end to end in QEMU guests: power cuts during replace-rename on ext4
data=ordered and data=writeback (the issue's own command, at 2 crashes) in a run killed
and resumed, the counts with their n, the kept cases, safety beside speed in the report,
nothing left behind. The checker fires: ext4 mounted noauto_da_alloc leaves renamed files
empty, and the seed of the case replays it by the kept command. fsync-append (nothing
acknowledged lost with barriers; a volatile-cache state of ext4 mounted barrier=0 losing
fsync()ed records, replayed from its seed) is checked on the crash tests of
tests/integration/test_tune_safe.py, which run those very configs."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from fsbench.store.results import Store
from fsbench.vm.crash.host import case_seed, cut_after
from fsbench.vm.images import GuestImage
from tests.helpers import (
    VM_MARKS,
    assert_every_slot_once,
    crash_run_args,
    fsbench,
    replayed_case,
)

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
    res = fsbench(*crash_run_args(workdir, workdir / "r.db", *args), "--json", timeout=1500)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout)  # type: ignore[no-any-return]


def _killed_after_its_first_trial(argv: list[str], db: Path) -> None:
    """Start `fsbench ARGV` and SIGKILL it once its run has stored a trial (its guest
    mid-way through the next, or between two: a kill -9 leaves the guest behind)."""
    child = subprocess.Popen(
        [sys.executable, "-m", "fsbench.cli", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline and child.poll() is None:
            if db.exists():
                rid = Store(db).latest_run_id()
                if rid and Store(db).get_trials(rid):
                    break
            time.sleep(0.5)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()


def test_power_cuts_on_ordered_and_writeback_in_a_run_killed_and_resumed(
    workdir: Path, guest_image: GuestImage
) -> None:
    """The issue's power cuts, in a run killed (kill -9) after its first stored trial and
    resumed: one run of guests proves both, the resume and what the cuts find."""
    db = workdir / "r.db"
    argv = crash_run_args(
        workdir,
        db,
        *["--target", "vm", "--workload", "crash"],
        *["--fs", "ext4:mount=data=ordered", "--fs", "ext4:mount=data=writeback"],
        *["--set", "pattern=replace-rename", "--set", "crashes=2"],
        *["--workload", "untar", "--reps", "1", "--no-report"],  # untar: the speed side
    )
    _killed_after_its_first_trial(argv, db)
    store = Store(db)
    run_id = store.latest_run_id() or 0
    before = store.get_trials(run_id)
    assert store.get_run(run_id).status == "running" and before
    res = fsbench("run", "--resume", "--db", str(db), "--json", timeout=1500)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "resuming run" in res.stderr
    trials = store.get_trials(run_id)
    # Two configs: untar's warm-up and counted trial, and one crash series each.
    assert_every_slot_once(trials, 6)
    assert len(before) < 6
    assert {(t.seq, t.started_at) for t in before} <= {(t.seq, t.started_at) for t in trials}
    assert not _qemu_of(workdir)  # the killed run's guest was released by the resume
    out = json.loads(res.stdout)

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
    text = fsbench("report", str(run_id), "--db", str(db)).stdout
    assert "Safety beside speed" in text and "replace-rename:" in text
    assert "untar: " in text  # the speed against the first config, beside the crashes
    # Nothing left behind: no QEMU, no run directory, no scratch disk.
    assert not _qemu_of(workdir)
    assert not list((workdir / "work").glob("vm-*"))


# A seed whose first crash is cut 6-7 s after the pattern began in repetitions 0-2: past
# ext4's first journal commit (every 5 s), so renames are on disk when the power goes.
LATE_CUT_SEED = 48


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
    again = replayed_case(case, workdir, workdir / "r.db")
    replayed = {r["metric"]: r["mean"] for r in again["rows"]}
    assert replayed["damaged_crashes"] == rows["damaged_crashes"] == 1
    assert replayed["files_empty"] > 0
    (same,) = _failing(workdir, again["run"])
    assert same["seed"] == case["seed"] and same["cut_after_s"] == case["cut_after_s"]
    print(f"noauto_da_alloc seed {case['seed']}: {rows} / replayed {replayed}")
