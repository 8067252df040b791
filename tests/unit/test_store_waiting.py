"""How a run's store waits out an outage (store/waiting.py, outage.py, spool.py): the
bounded backoff, the words the run is told, what an error means, the spool file. The
server really stopping is tests/integration/test_store_outage.py."""

from __future__ import annotations

import random
import sqlite3
import time
from pathlib import Path

import pytest

from fsbench.store.outage import (
    FIRST_DELAY,
    JITTER,
    MAX_DELAY,
    Backoff,
    Kind,
    StoreError,
    StoreUnreachable,
    classify,
)
from fsbench.store.records import MetricRecord, TrialRecord
from fsbench.store.results import Store
from fsbench.store.spool import Cell, Spool
from fsbench.store.waiting import Waiter
from fsbench.system.errors import FsbenchError


def _trial(seq: int) -> TrialRecord:
    return TrialRecord(
        seq=seq,
        rep=1,
        cell_key="ext4|alloc|{}",
        config="ext4",
        fs="ext4",
        mkfs_options=[],
        mount_options="",
        workload="alloc",
        params={"method": "fallocate"},
        status="ok",
        started_at="t0",
        finished_at="t1",
        metrics=[MetricRecord("seconds", 1.0 + seq, "s", "lower")],
    )


def _run(store: Store) -> int:
    return store.create_run(
        name="alloc",
        fsbench_version="0.1.0",
        argv=["fsbench", "run"],
        plan={},
        overrides={},
        schedule=[],
        host={"kernel": "6.18"},
        target={},
    )


def test_the_backoff_grows_is_capped_jittered_and_ends_at_the_limit() -> None:
    delays = list(Backoff(120.0, random.Random(7)).delays())
    assert JITTER * FIRST_DELAY <= delays[0] <= FIRST_DELAY
    assert max(delays) <= MAX_DELAY and max(delays) > MAX_DELAY * JITTER
    assert sum(delays) == pytest.approx(120.0)
    assert Backoff(0.0).next_delay(0.0) is None


def test_an_outage_is_said_then_past_its_limit_ends_in_one_line(tmp_path: Path) -> None:
    now = [0.0]
    said: list[str] = []
    waiter = Waiter("postgresql://fsbench:***@db/fsbench", limit=10.0, say=said.append)
    waiter.clock, waiter.sleep = (lambda: now[0]), (lambda s: None)
    waiter.spool = Spool(tmp_path / "spool" / "run.jsonl")
    error = StoreError("result store X: connection refused", Kind.TRANSIENT)
    with pytest.raises(StoreUnreachable) as ended:
        while True:
            now[0] += waiter.failed(error)
    assert said[0].startswith("store unreachable, retrying (")
    assert len(said) >= 4 and now[0] == pytest.approx(10.0)
    text = str(ended.value)
    assert text == (
        "result store postgresql://fsbench:***@db/fsbench unreachable for 10 s "
        "(result store X: connection refused)"
    )
    waiter.recovered()
    assert waiter.since is None


def test_sqlite_errors_mean_what_they_say(tmp_path: Path) -> None:
    db = tmp_path / "locked.db"
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")
    other = sqlite3.connect(db, timeout=0)
    with pytest.raises(sqlite3.OperationalError) as busy:
        other.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(sqlite3.OperationalError) as missing:
        other.execute("SELECT * FROM no_such_table")
    holder.rollback()
    holder.close()
    other.close()
    assert classify(busy.value) is Kind.TRANSIENT
    assert classify(missing.value) is Kind.PERMANENT


def test_a_missing_table_fails_a_run_at_once_in_one_line(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    run_id = _run(store)
    store.waiter.limit = 300.0
    store.waiter.spool = Spool(tmp_path / "spool" / "run.jsonl")
    store.record_trials(run_id, [_trial(0)])
    with sqlite3.connect(tmp_path / "r.db") as conn:
        conn.execute("DROP TABLE metrics")
    began = time.monotonic()
    with pytest.raises(FsbenchError) as refused:
        store.record_trials(run_id, [_trial(1)])
    assert time.monotonic() - began < 5  # not waited for: no retry fixes it
    assert str(refused.value).startswith(f"result store {store.url}: no such table: metrics")
    assert "\n" not in str(refused.value)
    assert store.waiting == 0 and not (tmp_path / "spool" / "run.jsonl").exists()
    store.close()


def test_the_spool_keeps_cells_in_order_and_a_cut_line_is_none(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool" / "run.jsonl")
    spool.keep([Cell(3, [_trial(0)]), Cell(3, [_trial(1), _trial(2)])])
    with open(spool.path, "a") as out:
        out.write('{"run_id": 3, "records": [{"seq"')  # a crash in the middle of a line
    cells = Spool(spool.path).read()
    assert [[t.seq for t in c.records] for c in cells] == [[0], [1, 2]]
    assert all(c.tried and c.run_id == 3 for c in cells)
    assert cells[1].records[1].metrics == [MetricRecord("seconds", 3.0, "s", "lower")]
    spool.keep([])
    assert not spool.path.exists()


def test_spooled_cells_are_written_once_by_a_resume(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    run_id = _run(store)
    store.record_trials(run_id, [_trial(0)])
    stored = store.get_trials(run_id)[0]
    spool = Spool(tmp_path / "spool" / "run.jsonl")
    # The first cell's commit happened before the run was stopped; the second's did not.
    spool.keep([Cell(run_id, [stored]), Cell(run_id, [_trial(1)])])
    store.waiter.spool = spool
    assert store.write_spooled() == 2
    assert sorted(t.seq for t in store.get_trials(run_id)) == [0, 1]
    assert not spool.path.exists()
    store.close()
