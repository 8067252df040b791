"""A run's store fails under it for real, and the run survives (issue 52): its own
PostgreSQL server (tests/pgcluster.py) stopped mid-run and started again, and an SQLite
store on a small loop-mounted filesystem that fills. Every trial the run measured ends in
the store exactly once; the spool file that kept them meanwhile never holds the password;
every mount and loop device is released."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from fsbench.store.results import Store
from tests.helpers import TEST_DATA_HOME, assert_every_slot_once, fsbench, ours
from tests.pgcluster import cluster, pg_bin

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="loop devices and PostgreSQL need root"),
]

# 2 configs x 2 methods x 3 reps + a warm-up trial per config: 16 slots of seconds each.
RUN = [
    *["--fs", "ext4,xfs", "--workload", "alloc", "--set", "method=fallocate,write-4k"],
    *["--set", "size=16M", "--reps", "3", "--scale", "tiny", "--image-size", "1G"],
    "--no-report",
]
SLOTS = 16


@contextmanager
def _running(args: list[str], err: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`fsbench run ARGS` in the background, its stderr in `err`; killed on a failure."""
    with open(err, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "fsbench.cli", "run", *args],
            stdout=subprocess.DEVNULL,
            stderr=out,
            env={**os.environ, "XDG_DATA_HOME": str(TEST_DATA_HOME)},
        )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _stored_at_least(db: str, count: int, proc: subprocess.Popen[bytes]) -> int:
    """The run's id, once it has `count` trials in the store."""
    store = Store(db)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            rid = store.latest_run_id()
            if rid and len(store.get_trials(rid)) >= count:
                return rid
            time.sleep(0.1)
    finally:
        store.close()
    raise AssertionError(f"no run with {count} trials in {db} (exit {proc.poll()})")


def _spooled(work: Path) -> str:
    return "".join(p.read_text() for p in sorted((work / "spool").glob("*.jsonl")))


def _integrity(db: Path) -> str:
    with closing(sqlite3.connect(db)) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


def _every_trial_once(db: str, run_id: int, restarts: int = 1) -> None:
    store = Store(db)
    try:
        trials = store.get_trials(run_id)
        assert_every_slot_once(trials, SLOTS, restarts)
        assert len({t.uid for t in trials}) == len(trials)
        assert store.get_run(run_id).status == "finished"
    finally:
        store.close()


@pytest.mark.skipif(pg_bin() is None, reason="no PostgreSQL binaries")
def test_a_run_waits_out_a_postgresql_restart_and_stores_every_trial_once(workdir: Path) -> None:
    work = workdir / "work"
    with cluster() as own:
        url = own.url()
        with _running([*RUN, "--workdir", str(work), "--db", url], workdir / "err") as proc:
            run_id = _stored_at_least(url, 3, proc)
            own.stop("fast")  # an administrator's restart: every session told, then cut
            spooled = ""
            deadline = time.monotonic() + 8  # the run measures on meanwhile
            while time.monotonic() < deadline:
                spooled += _spooled(work)
                time.sleep(0.2)
            own.start()
            assert proc.wait(timeout=300) == 0, (workdir / "err").read_text()
        err = (workdir / "err").read_text()
        assert re.search(r"store unreachable, retrying \(\d+\.\d s\)", err), err
        assert "store reachable again after" in err
        assert own.password not in err + spooled
        _every_trial_once(url, run_id)
    assert _spooled(work) == ""
    assert ours(workdir) == ([], [])


@pytest.mark.skipif(pg_bin() is None, reason="no PostgreSQL binaries")
def test_past_its_limit_the_run_is_interrupted_in_one_line_and_resumes(workdir: Path) -> None:
    work = workdir / "work"
    with cluster() as own:
        url = own.url()
        args = [*RUN, "--workdir", str(work), "--db", url, "--store-wait", "2s"]
        with _running(args, workdir / "err") as proc:
            run_id = _stored_at_least(url, 3, proc)
            own.stop()  # a crash: the server gone, longer than the run waits
            assert proc.wait(timeout=300) == 130
        err = (workdir / "err").read_text()
        said = [line for line in err.splitlines() if "is interrupted and keeps" in line]
        assert len(said) == 1, err
        assert said[0].startswith(f"fsbench: result store {own.url().replace(own.password, '***')}")
        assert f"run {run_id} is interrupted" in said[0]
        assert f"`fsbench resume {run_id}` goes on with it" in said[0]
        spooled = _spooled(work)
        assert own.password not in err + spooled and "postgresql" not in spooled
        own.start()
        res = fsbench("resume", str(run_id), "--db", url)
        assert res.returncode == 0, res.stderr
        assert own.password not in res.stdout + res.stderr
        _every_trial_once(url, run_id, restarts=2)
    assert _spooled(work) == ""
    assert ours(workdir) == ([], [])


def test_a_full_store_disk_interrupts_the_run_and_a_resume_finishes_it(workdir: Path) -> None:
    """The SQLite store on an 8 MiB ext4 of its own, filled mid-run: the run stops as
    interrupted naming the store's path and the room it needs, the store is consistent,
    and once space is freed its resume finishes it, every trial once."""
    work, disk, mnt = workdir / "work", workdir / "store.img", workdir / "store"
    mnt.mkdir()
    subprocess.run(["truncate", "-s", "8M", str(disk)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(disk)], check=True)
    subprocess.run(["mount", "-o", "loop", str(disk), str(mnt)], check=True)
    try:
        db, filler = mnt / "results.db", mnt / "filler"
        with _running([*RUN, "--workdir", str(work), "--db", str(db)], workdir / "err") as proc:
            run_id = _stored_at_least(str(db), 3, proc)
            subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k"], capture_output=True)
            assert proc.wait(timeout=300) == 130
        err = (workdir / "err").read_text()
        said = [line for line in err.splitlines() if "is interrupted and keeps" in line]
        assert len(said) == 1, err
        assert said[0].startswith(f"fsbench: result store {db} is full: about ")
        assert "more free space needed" in said[0]
        filler.unlink()  # first: SQLite maps its WAL index, which on a full disk is SIGBUS
        assert _integrity(db) == "ok"  # the store as the stopped run left it
        res = fsbench("resume", str(run_id), "--db", str(db))
        assert res.returncode == 0, res.stderr
        _every_trial_once(str(db), run_id, restarts=2)
        assert _integrity(db) == "ok"
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
    assert _spooled(work) == ""
    assert ours(workdir) == ([], [])
