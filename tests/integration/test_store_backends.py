"""The store in both backends for real: SQLite files and a PostgreSQL 15 cluster the tests
start (tests/pgcluster.py: initdb + pg_ctl, a Unix socket in its own directory, a
password-protected role). `fsbench run`, `--resume`, `report`, `compare`, `list runs` and
`merge` on each; many writers at once; and the password of a `--db` URL nowhere: not in
the store's tables, a report, the run's output, the server's log or an error message."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import MetaData, create_engine, inspect, make_url, select

from fsbench.cli.history import EXIT_REGRESSION
from fsbench.store.dburl import to_url
from fsbench.store.merge import merge_store, source
from fsbench.store.records import MetricRecord, TrialRecord
from fsbench.store.results import Store
from fsbench.store.schema import SCHEMA_VERSION
from fsbench.system.errors import FsbenchError
from tests.helpers import TEST_DATA_HOME, assert_every_slot_once, fsbench, ours
from tests.history_runs import RunSpec, stored
from tests.pgcluster import Cluster, cluster
from tests.unit.test_store_migration import assert_v5_rows

DATA = Path(__file__).resolve().parents[1] / "data" / "stores"
RUN = ["--fs", "ext4", "--workload", "alloc", "--scale", "tiny", "--reps", "2"]
ROW_FIELDS = ("config", "workload", "params", "metric", "unit", "better")


def _texts(db: str) -> str:
    """Every value of every row of every table of the store, as text."""
    engine = create_engine(to_url(db))
    try:
        tables = MetaData()
        tables.reflect(engine)
        with engine.connect() as conn:
            return "\n".join(
                str(value)
                for table in tables.sorted_tables
                for row in conn.execute(select(table))
                for value in row
            )
    finally:
        engine.dispose()


def _rows(db: str, run: str = "") -> list[dict[str, Any]]:
    res = fsbench("report", *([run] if run else []), "--db", db, "--format", "json")
    assert res.returncode == 0, res.stderr
    rows: list[dict[str, Any]] = json.loads(res.stdout)["rows"]
    return rows


def _kind(rows: list[dict[str, Any]]) -> dict[str, tuple[Any, ...]]:
    """What a row is (its cell and metric) -> its fields, n and status."""
    return {
        json.dumps([r[k] for k in ROW_FIELDS], sort_keys=True): (
            tuple(sorted(r)),
            r["n"],
            r["status"],
        )
        for r in rows
    }


# -- fsbench run, report, compare, list, merge: the same in both backends ----------------


@pytest.mark.integration
def test_a_run_in_postgresql_reports_like_one_in_sqlite_and_its_password_is_nowhere(
    workdir: Path, pg_url: str, pg_cluster: Cluster
) -> None:
    password = pg_cluster.password
    sqlite = str(workdir / "results.db")
    common = ["--workdir", str(workdir / "work"), "--image-size", "1G"]
    lite = fsbench("run", *RUN, *common, "--db", sqlite)
    assert lite.returncode == 0, lite.stderr
    t0 = time.monotonic()
    pg = fsbench("run", *RUN, *common, "--db", pg_url)
    assert pg.returncode == 0, pg.stderr
    took = time.monotonic() - t0
    assert "storepostgresql://fsbench:***@/" in "".join(pg.stderr.split())  # wrapped
    assert password not in pg.stdout + pg.stderr
    assert took < 120

    rows_pg, rows_lite = _rows(pg_url), _rows(sqlite)
    assert rows_pg and _kind(rows_pg) == _kind(rows_lite)
    assert {r["status"] for r in rows_pg} == {"ok"}
    assert {r["n"] for r in rows_pg if r["metric"] == "seconds"} == {2}

    # The run in SQLite merged into PostgreSQL, then compared with the PostgreSQL run.
    merged = fsbench("merge", sqlite, "--db", pg_url, "--json")
    assert merged.returncode == 0, merged.stderr
    assert json.loads(merged.stdout)["runs_added"] == 1
    assert _kind(_rows(pg_url, "2")) == _kind(rows_lite)
    cmp = fsbench("compare", "1", "2", "--db", pg_url)
    assert cmp.returncode == 0, cmp.stderr
    assert "alloc" in cmp.stdout

    page = workdir / "report.html"
    html = fsbench("report", "--db", pg_url, "--format", "html", "-o", str(page))
    assert html.returncode == 0, html.stderr
    listed = fsbench("list", "runs", "--db", pg_url)
    assert listed.returncode == 0 and "postgresql://fsbench:***@/" in listed.stdout
    env_listed = subprocess.run(
        [sys.executable, "-m", "fsbench.cli", "list", "runs", "--json"],
        env={**os.environ, "FSBENCH_DB": pg_url, "XDG_DATA_HOME": str(TEST_DATA_HOME)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert [r["id"] for r in json.loads(env_listed.stdout)] == [1, 2]

    stored = Store(pg_url)
    argv = stored.get_run(1).argv
    assert "postgresql://fsbench:***@/" in " ".join(argv)
    stored.close()
    seen = {
        "run output": pg.stdout + pg.stderr,
        "merge output": merged.stdout + merged.stderr,
        "report json": json.dumps(rows_pg),
        "html report": page.read_text(),
        "list runs": listed.stdout + env_listed.stdout,
        "compare": cmp.stdout + cmp.stderr,
        "the store's tables": _texts(pg_url),
        "the server's log": (pg_cluster.dir / "server.log").read_text(errors="replace"),
    }
    assert {where for where, text in seen.items() if password in text} == set()
    assert ours(workdir) == ([], [])


@pytest.mark.integration
def test_a_killed_run_resumes_in_postgresql_and_keeps_every_trial_once(
    workdir: Path, pg_url: str, pg_password: str
) -> None:
    args = [
        *["--fs", "ext4,xfs", "--workload", "alloc", "--set", "method=fallocate,write-4k"],
        *["--set", "size=16M", "--reps", "3", "--scale", "tiny", "--image-size", "1G"],
        *["--workdir", str(workdir / "work"), "--db", pg_url, "--no-report"],
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "fsbench.cli", "run", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "XDG_DATA_HOME": str(TEST_DATA_HOME)},
    )
    store = Store(pg_url)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            rid = store.latest_run_id()
            if rid and len(store.get_trials(rid)) >= 3:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)  # in the middle of the matrix
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    run_id = store.latest_run_id() or 0
    before = store.get_trials(run_id)
    assert store.get_run(run_id).status == "running" and 3 <= len(before) < 16
    res = fsbench("run", "--resume", "--db", pg_url, "--json")
    assert res.returncode == 0, res.stderr
    assert pg_password not in res.stdout + res.stderr
    after = store.get_trials(run_id)
    assert_every_slot_once(after, 16)
    assert {(t.uid, t.started_at) for t in before} <= {(t.uid, t.started_at) for t in after}
    assert store.get_run(run_id).status == "finished"
    assert all(r["n"] == 3 for r in json.loads(res.stdout)["rows"] if r["metric"] == "seconds")
    store.close()
    assert ours(workdir) == ([], [])


# -- errors: one line, no password ------------------------------------------------------


def test_errors_are_one_line_without_the_password(pg_cluster: Cluster, tmp_path: Path) -> None:
    password = pg_cluster.password
    wrong = pg_cluster.url().replace(password, "not-" + password[::-1])
    nobody = f"postgresql://fsbench:{password}@/fsbench?host={tmp_path}"  # no server there
    cases = {
        wrong: "password authentication failed",
        nobody: "No such file or directory",
        pg_cluster.url("no_such_db"): 'database "no_such_db" does not exist',
        f"mysql://fsbench:{password}@localhost/x": "give a file path, sqlite:///PATH or",
    }
    for url, message in cases.items():
        res = fsbench("list", "runs", "--db", url)
        assert res.returncode == 2
        assert res.stderr.count("\n") == 1 and message in res.stderr, res.stderr
        assert password not in res.stderr and "not-" + password[::-1] not in res.stderr
        assert "fsbench:***@" in res.stderr


def test_a_server_that_stops_under_an_open_store_is_one_line_without_the_password() -> None:
    with cluster() as own:
        store = Store(own.url())
        assert [r.id for r in store.list_runs()] == []
        own.stop()
        with pytest.raises(FsbenchError) as err:
            [r.id for r in store.list_runs()]
        store.close()
    text = str(err.value)
    assert text.startswith("result store postgresql://fsbench:***@/fsbench?host=")
    assert "\n" not in text and own.password not in text


# -- many writers at once ---------------------------------------------------------------


def _trial(seq: int, step: int, host: str) -> TrialRecord:
    return TrialRecord(
        seq=seq,
        rep=1 + seq % 3,
        step=step,
        chain="untar+tree-read",
        cell_key=f"ext4|alloc|{seq % 5}",
        config="ext4",
        fs="ext4",
        mkfs_options=["-E", "lazy_itable_init=0"],
        mount_options="noatime",
        workload="alloc",
        params={"method": "fallocate", "writer": host},
        status="ok",
        started_at=f"t{seq}",
        finished_at=f"t{seq + 1}",
        provenance={"notes": [f"written by {host}"]},
        metrics=[
            MetricRecord("seconds", seq + step / 10, "s", "lower"),
            MetricRecord("fragments", 1, "count", "lower", 1.0),
        ],
        samples=[{"t": i / 10, **dict.fromkeys(SAMPLE_NAMES, float(seq + i))} for i in range(4)],
    )


SAMPLE_NAMES = (
    "read_bps",
    "write_bps",
    "util_pct",
    "cpu_user_pct",
    "cpu_sys_pct",
    "cpu_iowait_pct",
    "dirty_bytes",
    "writeback_bytes",
)
CELLS = 30


def _run(
    db: str, host: str, cells: int = CELLS, start: Any = None, status: str = "finished"
) -> str:
    """A writer: its own run (a host's part of a fleet), one transaction per cell."""
    if start is not None:
        start.wait()
    store = Store(db)
    run_id = store.create_run(
        name=f"writer-{host}",
        fsbench_version="0.1.0",
        argv=["fsbench", "run", "--db", db],
        plan={"reps": 3},
        overrides={},
        schedule=[(1, "c")] * cells,
        host={"kernel": "6.18", "hostname": host},
        target={"kind": "loop", "summary": "loop image"},
        part_of="f" * 32,
        part_host=host,
        part_groups=["baseline"],
    )
    for seq in range(cells):
        store.record_trials(run_id, [_trial(seq, 0, host), _trial(seq, 1, host)])
    store.set_convergence(run_id, {"c": {"reps": 3}})
    store.finish_run(run_id, status)
    uid = store.get_run(run_id).uid
    store.close()
    return uid


def test_many_writers_at_once_never_collide(store_db: str) -> None:
    writers = 6
    ctx = multiprocessing.get_context("fork")
    start = ctx.Barrier(writers)  # all open the new store and write at the same moment
    procs = [
        ctx.Process(target=_run, args=(store_db, f"h{i}", CELLS, start)) for i in range(writers)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
    assert [proc.exitcode for proc in procs] == [0] * writers
    store = Store(store_db)
    runs = store.list_runs()
    assert sorted(r.part_host for r in runs) == [f"h{i}" for i in range(writers)]
    assert len({r.uid for r in runs}) == writers
    trial_ids, trial_uids = set(), set()
    for run in runs:
        trials = store.get_trials(run.id)
        host = run.part_host
        assert [(t.seq, t.step) for t in trials] == [(s, p) for s in range(CELLS) for p in (0, 1)]
        assert all(t.params["writer"] == host and len(t.metrics) == 2 for t in trials)
        assert all(len(store.get_samples(t.id or 0)) == 4 for t in trials)
        trial_ids |= {t.id for t in trials}
        trial_uids |= {t.uid for t in trials}
    assert len(trial_ids) == len(trial_uids) == writers * CELLS * 2
    store.close()


# -- merge ------------------------------------------------------------------------------


def _fingerprint(path: Path) -> tuple[str, list[str]]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), sorted(os.listdir(path.parent))


def _content(store: Store) -> dict[str, Any]:
    """What merge must keep: every run field but its id, every trial field but its id
    (and its run's id), metrics and samples."""
    out = {}
    for run in store.list_runs():
        trials = []
        for t in store.get_trials(run.id):
            trials.append(
                {**t.__dict__, "id": None, "samples": store.get_samples(t.id or 0)}
                | {"metrics": [m.__dict__ for m in t.metrics]}
            )
        out[run.uid] = {**run.__dict__, "id": None, "trials": trials}
    return out


def test_merge_is_idempotent_and_keeps_every_field(
    new_db: Callable[[], str], tmp_path: Path
) -> None:
    src_dir = tmp_path / "src"
    src_dir.mkdir()
    a, b = str(src_dir / "a.db"), new_db()
    _run(a, "h1", 5)
    _run(a, "h2", 3, status="interrupted")
    _run(b, "h3", 4)
    dest_db = new_db()
    dest = Store(dest_db)
    _run(dest_db, "h0", 2)  # DEST has runs of its own: ids differ, uids stay
    before = _fingerprint(Path(a))

    with source(a) as src:
        first = merge_store(src, dest)
    assert (len(first.runs_added), first.trials_added) == (2, 16)
    with source(b) as src:
        assert merge_store(src, dest).trials_added == 8
    for db in (a, b):
        with source(db) as src:
            again = merge_store(src, dest)
            assert again.as_dict() | {"uids": []} == {
                "runs_added": 0,
                "runs_updated": 0,
                "trials_added": 0,
                "trials_conflicting": 0,
                "uids": [],
            }
    assert _fingerprint(Path(a)) == before  # the source file is never written
    mine = _content(dest)
    for db in (a, b):
        with source(db) as src:
            theirs = _content(src)
        assert theirs and all(mine[uid] == run for uid, run in theirs.items())
    assert len(mine) == 4
    dest.close()


def test_merge_adds_what_a_resumed_run_lacks_and_takes_its_progress(
    new_db: Callable[[], str], tmp_path: Path
) -> None:
    early, later = str(tmp_path / "early.db"), str(tmp_path / "later.db")
    uid = _run(early, "h1", 3, status="running")
    shutil.copyfile(early, later)
    store = Store(later)  # the same run resumed: more cells, then finished
    run = next((r for r in store.list_runs() if r.uid == uid), None)
    assert run is not None
    for seq in range(3, 6):
        store.record_trials(run.id, [_trial(seq, 0, "h1"), _trial(seq, 1, "h1")])
    store.finish_run(run.id, "finished")
    store.close()
    dest = Store(new_db())
    with source(early) as src:
        merge_store(src, dest)
    with source(later) as src:
        got = merge_store(src, dest)
    assert got.runs_updated == [uid] and got.trials_added == 6
    merged = next((r for r in dest.list_runs() if r.uid == uid), None)
    assert merged is not None and merged.status == "finished" and merged.finished_at
    assert len(dest.get_trials(merged.id)) == 12
    with source(early) as src:  # an older copy never moves it back
        assert merge_store(src, dest).runs_updated == []
    assert dest.get_run(merged.id).status == "finished"
    dest.close()


def test_merge_of_the_v5_store_keeps_its_rows_and_leaves_it_untouched(
    store_db: str, tmp_path: Path
) -> None:
    path = DATA / "v5.db"
    before = _fingerprint(path)
    res = fsbench("merge", str(path), "--db", store_db, "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert (doc["runs_added"], doc["trials_added"]) == (2, 41)
    assert doc["sources"][0]["notes"] == [f"migrated from schema 5 to {SCHEMA_VERSION}"]
    assert _fingerprint(path) == before  # not migrated, no -wal, -shm, lock or backup
    again = fsbench("merge", str(path), "--db", store_db)
    assert again.returncode == 0, again.stderr
    assert "0 runs added, 0 updated, 0 trials added" in again.stdout
    dest = Store(store_db)
    assert_v5_rows(dest)
    dest.close()
    # The same store migrated in place names its runs and trials alike: nothing to add.
    copy = tmp_path / "v5-copy.db"
    shutil.copyfile(path, copy)
    Store(copy).close()
    third = fsbench("merge", str(copy), "--db", store_db, "--json")
    assert json.loads(third.stdout)["trials_added"] == 0


def test_merge_from_a_missing_store_is_one_line(tmp_path: Path) -> None:
    res = fsbench("merge", str(tmp_path / "nothing.db"), "--db", str(tmp_path / "d.db"))
    assert res.returncode == 2 and res.stderr.strip() == (
        f"fsbench: error: no store at {tmp_path / 'nothing.db'}"
    )
    assert not (tmp_path / "nothing.db").exists()


def test_merge_from_a_database_that_is_no_store_leaves_it_empty(
    new_db: Callable[[], str], tmp_path: Path
) -> None:
    empty, dest = new_db(), str(tmp_path / "d.db")
    if "://" not in empty:
        Path(empty).touch()
    res = fsbench("merge", empty, "--db", dest)
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1 and "fsbench: error: no fsbench store at " in res.stderr
    assert empty.split("@")[-1] in res.stderr and ":***@" * ("://" in empty) in res.stderr
    engine = create_engine(to_url(empty))
    with engine.connect() as conn:
        assert inspect(conn).get_table_names() == []  # nothing made in the source
    engine.dispose()


def test_the_latest_run_is_a_fleet_run_not_its_members(store_db: str) -> None:
    store = Store(store_db)

    def make(**fields: Any) -> int:
        return store.create_run(
            name="r",
            fsbench_version="0.1.0",
            argv=[],
            plan={},
            overrides={},
            schedule=[],
            host={},
            target={},
            **fields,
        )

    alone = make(part_of="a" * 32, part_host="h1")  # a host's own store: its part only
    assert store.latest_run_id() == alone
    fleet = make(kind="fleet")
    uid = store.get_run(fleet).uid
    make(part_of=uid, part_host="h1")  # written or merged after their fleet run
    make(part_of=uid, part_host="h2")
    assert store.latest_run_id() == fleet
    store.close()


def test_history_reads_either_store_alike(new_db: Callable[[], str]) -> None:
    """`fsbench history` over PostgreSQL as over SQLite (a fleet's nightly store): a 20%
    drop from run 9 is one change point between runs 8 and 9; the gate passes the night it
    arrives (one run may be a spike), fails the night run 10 confirms it and passes on the
    next night; the password is in no output."""
    db = new_db()
    stored(db, [RunSpec(1000.0)] * 8 + [RunSpec(800.0)], seed=3)
    first = fsbench("history", "--db", db, "--fail-on", "regression")
    assert first.returncode == 0, first.stderr
    assert "a change if the next run confirms it" in first.stdout
    stored(db, [RunSpec(800.0)], seed=4)
    alarm = fsbench("history", "--db", db, "--fail-on", "regression", "--format", "json")
    assert alarm.returncode == EXIT_REGRESSION, alarm.stderr
    (series,) = json.loads(alarm.stdout)["series"]
    assert [p["run"] for p in series["points"]] == list(range(1, 11))
    assert series["changes"][-1]["after_run"]["run"] == 9
    stored(db, [RunSpec(800.0)] * 2, seed=5)
    later = fsbench("history", "--db", db, "--fail-on", "regression", "--format", "json")
    assert later.returncode == 0, later.stderr
    (change,) = json.loads(later.stdout)["series"][0]["changes"]
    assert (change["before_run"]["run"], change["after_run"]["run"]) == (8, 9)
    assert change["direction"] == "worse" and change["ratio"] == pytest.approx(0.8, abs=0.05)
    password = make_url(to_url(db)).password
    if password:
        assert all(
            password not in out
            for out in (first.stdout, first.stderr, alarm.stdout, alarm.stderr, later.stdout)
        )
