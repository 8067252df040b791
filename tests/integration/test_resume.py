"""One resume for every kind of run: a race of `fsbench tune`, a grid run of `fsbench run`
and a bisection of `fsbench bisect`, each interrupted with SIGINT in a real process, say
in one line that `fsbench resume N` goes on with them and exit 130; `fsbench resume` then
goes on with each through its kind's driver, and it ends as what it is: the race as a
race (its rounds replayed, its report the race's, its kind still tune), the grid with
every slot once, the bisection from its stored facts alone (no endpoints, tree or budget
given again) to the first bad commit."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from fsbench.store.results import Store
from tests.fake_bisect import PAUSE, git, history
from tests.helpers import assert_every_slot_once, cli_env, default_interrupts, fsbench, ours

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _stored(db: Path) -> int:
    """Slots stored so far, read-only: a poll must not take the store's locks while the
    run creates its schema."""
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            return int(conn.execute("SELECT COUNT(DISTINCT seq) FROM trials").fetchone()[0])
    except sqlite3.Error:
        return 0


def _interrupted(argv: list[str], ready: Callable[[], bool], env: dict[str, str]) -> str:
    """`argv` started, SIGINT once `ready`; its stderr, after it exited 130."""
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        preexec_fn=default_interrupts,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not ready() and proc.poll() is None:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err, err
    return err


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "fsbench.cli", *args]


def test_a_race_interrupted_mid_race_goes_on_as_a_race(workdir: Path) -> None:
    db = workdir / "results.db"
    common = ["--image-size", "1G", "--workdir", str(workdir / "work"), "--db", str(db)]
    # fs_mark without fsync, 300 files: ~0.1 s on ext4, ~2 s with every write synchronous.
    err = _interrupted(
        _cli("tune", "--fs", "ext4:mount={data=ordered,sync}", "--workload", "fs_mark",
             "--scale", "tiny", "--set", "sync=0", "--set", "files=300", "--max-rounds", "6",
             "--seed", "7", "--no-report", *common),
        # The warm-up round (2) and round 1 (2) stored, and one trial of round 2.
        lambda: _stored(db) >= 5,
        cli_env(),
    )  # fmt: skip
    store = Store(db)
    run_id = store.latest_run_id() or 0
    before = store.get_trials(run_id)
    assert (store.get_run(run_id).kind, store.get_run(run_id).status) == ("tune", "interrupted")
    assert f"run {run_id} keeps what it did (`fsbench resume {run_id}` goes on with it)" in err
    assert ours(workdir) == ([], [])

    res = fsbench("resume", "--db", str(db), "--json", timeout=300)
    assert res.returncode == 0, res.stderr
    assert f"fsbench: resuming race {run_id} ({len({t.seq for t in before})} trials stored)" in (
        res.stderr
    )
    assert "round 1: 2 configs alive, stored (replayed)" in res.stderr
    doc = json.loads(res.stdout)  # the race's report, as `fsbench report --format json`
    assert (doc["run_id"], doc["status"], doc["stop"]) == (run_id, "finished", "one left")
    assert [w["config"] for w in doc["winners"]] == ["ext4 data=ordered"]
    assert [d["config"] for d in doc["dropped"]] == ["ext4 sync"]
    assert [r["round"] for r in doc["rounds"]] == list(range(0, doc["grid_n"] + 1))
    run = store.get_run(run_id)
    assert (run.kind, run.status, len(store.list_runs())) == ("tune", "finished", 1)
    after = store.get_trials(run_id)
    assert {(t.seq, t.started_at) for t in before} <= {(t.seq, t.started_at) for t in after}
    planned = len(run.schedule)
    assert [t.rep for t in after if t.seq >= planned] == [0]  # one warm-up after the restart
    report = fsbench("report", str(run_id), "--db", str(db))
    assert f"fsbench tune run {run_id}" in report.stdout and "ext4 sync" in report.stdout
    assert ours(workdir) == ([], [])


def test_a_grid_run_interrupted_goes_on_with_every_slot_once(workdir: Path) -> None:
    db = workdir / "results.db"
    common = ["--image-size", "1G", "--workdir", str(workdir / "work"), "--db", str(db)]
    err = _interrupted(
        _cli("run", "--fs", "ext4,xfs", "--workload", "alloc", "--set",
             "method=fallocate,write-4k", "--set", "size=16M", "--reps", "3", "--no-report",
             *common),
        lambda: _stored(db) >= 3,
        cli_env(),
    )  # fmt: skip
    store = Store(db)
    run_id = store.latest_run_id() or 0
    before = store.get_trials(run_id)
    assert store.get_run(run_id).status == "interrupted" and 3 <= len(before) < 16
    assert f"`fsbench resume {run_id}` goes on with it" in err

    res = fsbench("resume", "--db", str(db), "--json", timeout=300)
    assert res.returncode == 0, res.stderr
    assert f"fsbench: resuming run {run_id}" in res.stderr
    after = store.get_trials(run_id)
    # 2 configs x 2 methods x (3 reps + 1 warm-up round) = 16 slots.
    assert_every_slot_once(after, 16)
    assert {(t.seq, t.started_at) for t in before} <= {(t.seq, t.started_at) for t in after}
    assert (store.get_run(run_id).kind, store.get_run(run_id).status) == ("run", "finished")
    rows = [r for r in json.loads(res.stdout)["rows"] if r["metric"] == "seconds"]
    assert len(rows) == 4 and all(r["n"] == 3 for r in rows)
    assert ours(workdir) == ([], [])


def _fake_fsbench(*args: str) -> list[str]:
    """`fsbench ARGS` with the kernel build and the guest faked (tests/fake_bisect.py)."""
    start = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); import tests.fake_bisect as f; f.main()"
    )
    return [sys.executable, "-c", start, *args]


def test_a_bisection_interrupted_goes_on_from_its_stored_facts(workdir: Path) -> None:
    repo, db, pause = workdir / "linux", workdir / "results.db", workdir / "paused"
    shas = history(repo)
    err = _interrupted(
        _fake_fsbench("bisect", "--linux", str(repo), "--good", shas["base"], "--bad",
                      shas["doc3"], "--fs", "ext4", "--workload", "fs_mark", "--max-reps", "4",
                      "--kbuild-cache", str(workdir / "kb"), "--db", str(db)),
        pause.exists,  # measuring its first step, after both endpoints
        {**cli_env(), PAUSE: str(pause)},
    )  # fmt: skip
    store = Store(db)
    run_id = store.latest_run_id() or 0
    run = store.get_run(run_id)
    assert (run.kind, run.status) == ("bisect", "interrupted")
    assert f"`fsbench resume {run_id}` goes on with it" in err
    endpoints = store.get_trials(run_id)
    assert len(endpoints) == 8  # 4 repetitions of each endpoint, kept
    assert "git bisect start" in git(repo, "bisect", "log")

    # Nothing but the run: no --linux, --good, --bad, --max-reps, --kbuild-cache again.
    res = subprocess.run(
        _fake_fsbench("resume", "--db", str(db), "--json"),
        capture_output=True, text=True, env=cli_env(), timeout=300, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert f"fsbench: resuming bisection run {run_id} (8 trials stored)" in res.stderr
    doc = json.loads(res.stdout)  # the bisection's report, as `fsbench report --format json`
    assert (doc["run"], doc["status"]) == (run_id, "finished")
    assert doc["first_bad"]["commit"] == shas["slow"]
    assert f"# first bad commit: [{shas['slow']}]" in git(repo, "bisect", "log")
    good, bad = doc["steps"][:2]
    assert (good["role"], bad["role"]) == ("good", "bad")
    # The endpoints' evidence is what the interrupted process stored, not measured again.
    assert sorted(good["seqs"] + bad["seqs"]) == sorted(t.seq for t in endpoints)
    assert store.get_run(run_id).kind == "bisect" and len(store.list_runs()) == 1
