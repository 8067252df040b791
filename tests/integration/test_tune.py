"""`fsbench tune` on real loop images: the space is printed before anything runs, a clearly
worse config (mount -o sync, for fs_mark without fsync: tens of times slower) is dropped
before the end, a race ends with its winner, and a race killed with -9 goes on from its
last finished round with --resume."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fsbench.store.results import Store
from tests.helpers import TEST_DATA_HOME, fsbench, ours

pytestmark = pytest.mark.integration

# fs_mark without fsync, 300 files: ~0.1 s on ext4, ~2 s with every write synchronous.
WORKLOAD = ["--workload", "fs_mark", "--scale", "tiny", "--set", "sync=0", "--set", "files=300"]


def common(workdir: Path) -> list[str]:
    return [
        "--image-size",
        "1G",
        "--workdir",
        str(workdir / "work"),
        "--db",
        str(workdir / "results.db"),
        "--no-report",
    ]


def test_a_race_prints_its_space_drops_the_slow_config_and_names_the_winner(
    workdir: Path,
) -> None:
    res = fsbench(
        "tune",
        "--fs",
        # nomballoc: the kernel refuses it (`Unknown parameter`): dropped at its first trial.
        "ext4:mount={data=ordered,sync,nomballoc}",
        *WORKLOAD,
        # Alone it drops the sync config at round 3; beside the suite's other worker its
        # 0.1 s trials are noisier (one suite run on 2026-11-28 took 6 rounds): 8 rounds
        # leave room to show the drop comes before the end.
        "--max-rounds",
        "8",
        "--seed",
        "5",
        "--json",
        *common(workdir),
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    err = res.stderr
    # The space, expanded and counted, before the first trial.
    assert "total: 3 configs" in err and "ext4:mount=sync" in err
    assert err.index("total: 3 configs") < err.index("warm-up round")
    assert "round 3:" in err and "dropped ext4 sync (worse)" in err
    assert "dropped ext4 nomballoc (unsupported)" in err
    doc = json.loads(res.stdout)
    assert doc["space"]["total"] == 3 and doc["metric"] == "files_per_s"
    assert doc["stop"] == "one left" and doc["decided"]
    assert [w["config"] for w in doc["winners"]] == ["ext4 data=ordered"]
    winner = doc["winners"][0]
    assert winner["ci95"][0] <= winner["mean"] <= winner["ci95"][1]
    refused, drop = doc["dropped"]
    assert (refused["config"], refused["reason"], refused["round"]) == (
        "ext4 nomballoc",
        "unsupported",
        0,
    )
    assert drop["config"] == "ext4 sync" and drop["reason"] == "worse"
    assert 3 <= drop["round"] < 8 and drop["p"] < drop["level"]
    assert doc["trials"] == 2 * drop["round"] and doc["warmup_trials"] == 3
    # The grid: 2 configs at the race's final n, and the refused one's single trial.
    assert doc["grid_trials"] == 2 * doc["grid_n"] + 1
    assert doc["rerun"].startswith("fsbench run --fs ext4:mount=data=ordered --fs ext4 ")
    # Stored like any run: a run of kind tune, each trial with its round.
    store = Store(workdir / "results.db")
    run = store.get_run(doc["run_id"])
    assert run.kind == "tune" and run.status == "finished"
    reps = sorted({t.rep for t in store.get_trials(run.id)})
    assert reps == list(range(0, drop["round"] + 1))
    # `fsbench report` of it tells the race, from the store: the same facts as the JSON.
    report = fsbench("report", str(run.id), "--db", str(workdir / "results.db"))
    assert report.returncode == 0, report.stderr
    assert f"fsbench tune run {run.id}" in report.stdout and "ext4 sync" in report.stdout
    again = fsbench("report", str(run.id), "--format", "json", "--db", str(workdir / "results.db"))
    assert json.loads(again.stdout)["dropped"] == doc["dropped"]
    assert ours(workdir) == ([], [])


def _stored(db: Path) -> int:
    """Trials in the store so far, read-only: a poll must not take the store's locks while
    the race creates its schema."""
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            return int(conn.execute("SELECT COUNT(DISTINCT seq) FROM trials").fetchone()[0])
    except sqlite3.Error:
        return 0


def test_a_race_killed_with_minus_9_goes_on_from_its_last_finished_round(
    workdir: Path,
) -> None:
    db = workdir / "results.db"
    argv = [
        sys.executable,
        "-m",
        "fsbench.cli",
        "tune",
        "--fs",
        "ext4:mount={data=ordered,sync}",
        *WORKLOAD,
        "--max-rounds",
        "6",
        "--seed",
        "7",
        *common(workdir),
    ]
    env = {**os.environ, "XDG_DATA_HOME": str(TEST_DATA_HOME)}
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        # The warm-up round (2) and round 1 (2) stored, and one trial of round 2.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if _stored(db) >= 5:
                break
            time.sleep(0.05)
        proc.kill()  # kill -9 in the middle of a round
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    store = Store(db)
    run_id = store.latest_run_id()
    assert run_id is not None, err
    before = store.get_trials(run_id)
    assert store.get_run(run_id).status == "running", err
    finished = max(t.rep for t in before) - 1  # the last round wholly stored
    assert finished >= 1

    # `fsbench run --resume` goes on with grid runs only: it names the one resume and runs
    # nothing (it once ran the race's space as a grid, and exited 0).
    grid = fsbench("run", "--resume", "--db", str(db), "--no-report", timeout=120)
    assert grid.returncode == 2, grid.stderr
    assert f"`fsbench resume {run_id}` goes on with it" in grid.stderr
    assert len(store.get_trials(run_id)) == len(before) and len(store.list_runs()) == 1

    res = fsbench("tune", "--resume", "--db", str(db), "--json", "--no-report", timeout=300)
    assert res.returncode == 0, res.stderr
    assert f"resuming race {run_id}" in res.stderr
    # The stored rounds are replayed, not run again; the race goes on after them.
    for rnd in range(1, finished + 1):
        assert f"round {rnd}: 2 configs alive, stored (replayed)" in res.stderr
    after = store.get_trials(run_id)
    assert {(t.seq, t.started_at) for t in before} <= {(t.seq, t.started_at) for t in after}
    planned = len(store.get_run(run_id).schedule)
    seqs = [t.seq for t in after if t.seq < planned]
    assert len(seqs) == len(set(seqs))  # no slot twice
    assert [t.rep for t in after if t.seq >= planned] == [0]  # one warm-up after the restart
    doc = json.loads(res.stdout)
    assert doc["status"] == "finished" and doc["run_id"] == run_id
    assert [d["config"] for d in doc["dropped"]] == ["ext4 sync"]
    assert doc["dropped"][0]["round"] < 6  # before the end
    assert [w["config"] for w in doc["winners"]] == ["ext4 data=ordered"]
    assert doc["stop"] == "one left"
    assert [r["round"] for r in doc["rounds"]] == list(range(0, doc["grid_n"] + 1))
    assert ours(workdir) == ([], [])
    # The race's page: the chart of configs alive per round, the drops, the check.
    from fsbench.reports.html.race import write_race_page
    from fsbench.reports.tune import document

    page = write_race_page(document(store, run_id), workdir / "report")
    html = page.read_text()
    assert "data:image/svg+xml;base64," in html and "ext4 sync" in html
    assert "fsbench run --fs ext4:mount=data=ordered --fs ext4" in html
    assert (workdir / "report" / f"race-{run_id}.png").exists()
    again = fsbench("tune", "--resume", "--db", str(db))
    assert again.returncode == 2 and "no unfinished race" in again.stderr


def test_a_space_swept_over_a_parameter_makes_one_race_per_value(workdir: Path) -> None:
    """Not refused for having several comparison groups: each value of the swept parameter
    gets a race of its own (a run each, kept with the --set that narrows it)."""
    res = fsbench(
        "tune",
        "--fs",
        "ext4:mount={data=ordered,data=writeback}",
        *["--workload", "fs_mark", "--scale", "tiny", "--set", "sync=0"],
        *["--set", "files=200,300", "--max-rounds", "3", "--seed", "3", "--budget", "10m"],
        "--json",
        *common(workdir),
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert (
        "2 races, one per value of files: files=200; files=300; the budget split evenly, 300 s "
        "each" in res.stderr
    )
    docs = json.loads(res.stdout)
    assert len(docs) == 2 and len({d["run_id"] for d in docs}) == 2
    store = Store(workdir / "results.db")
    for doc, files in zip(docs, ("200", "300"), strict=True):
        run = store.get_run(doc["run_id"])
        assert (run.kind, run.status, run.overrides["files"]) == ("tune", "finished", [files])
        assert {t.params["files"] for t in store.get_trials(run.id)} == {int(files)}
        assert doc["space"]["total"] == 2 and (doc["max_rounds"], doc["budget_s"]) == (3, 300)
    assert ours(workdir) == ([], [])


def test_tune_explain_runs_the_pass_for_the_winner_against_the_runner_up(
    workdir: Path,
) -> None:
    """`--explain` after a race: an explain run whose source is the race and whose pair is
    (winner, runner-up), on the race's cell; the race's report then says why under its
    winner, in every format (ext4 against ext4 mounted `sync`: the journal and its
    flushes)."""
    res = fsbench(
        "tune", "--fs", "ext4:mount={data=ordered,sync}", *WORKLOAD, "--max-rounds", "5",
        "--seed", "5", "--explain", *common(workdir), timeout=900,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    store = Store(workdir / "results.db")
    race, made = store.get_run(1), store.get_run(2)
    assert (race.kind, made.kind) == ("tune", "explain")
    winner, runner_up = "ext4 data=ordered", "ext4 sync"
    assert made.facts is not None
    assert (made.facts["source"], made.facts["pair"]) == (1, [winner, runner_up])
    # The race's cell, both configs, three instrumented trials each.
    trials = store.run_trials(made)
    assert {t.config for t in trials} == {winner, runner_up} and len(trials) == 6
    assert {t.params["sync"] for t in trials} == {0} and {t.params["files"] for t in trials} == {
        300
    }
    said = " ".join(res.stderr.split())
    assert f"explain: run 2, {winner} against {runner_up}: 6 instrumented trials in " in said
    doc = json.loads(fsbench("report", "1", "--db", str(workdir / "results.db"),
                             "--format", "json").stdout)  # fmt: skip
    assert doc["runner_up"] == runner_up
    (why,) = doc["why"]
    assert why["verdict"] == f"race: {winner} won, {runner_up} next"
    assert why["mechanisms"].startswith(f"{runner_up} against {winner}: ")
    assert "journal" in why["mechanisms"] or "flushes" in why["mechanisms"], why
    text = fsbench("report", "1", "--db", str(workdir / "results.db")).stdout
    assert "Why" in text and "fsbench explain 2: instrumented trials, never counted" in text
    page = workdir / "race.html"
    made_page = fsbench("report", "1", "--db", str(workdir / "results.db"), "--format", "html",
                        "-o", str(page))  # fmt: skip
    assert made_page.returncode == 0 and '<h2 id="why">Why</h2>' in page.read_text()
