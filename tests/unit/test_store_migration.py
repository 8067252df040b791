"""A store written by an earlier fsbench is migrated forward in place and reports the same
rows, in each backend: SQLite (after a backup) and PostgreSQL (in one transaction, the v5
store's tables and rows loaded into a fresh database of the test cluster as that version
would have written them). A store from a newer fsbench is refused in one line."""

from __future__ import annotations

import json
import shutil
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import Column, Integer, MetaData, Table, create_engine, insert, inspect, select

from fsbench.reports import source
from fsbench.store import schema
from fsbench.store.dburl import to_url
from fsbench.store.results import Store
from fsbench.system.errors import FsbenchError
from tests.pgcluster import load_sqlite

DATA = Path(__file__).resolve().parents[1] / "data" / "stores"
KEYS = ("config", "workload", "chain", "params", "knobs", "metric", "status", "n")


def _key(row: dict[str, object]) -> tuple[str, ...]:
    return tuple(json.dumps(row.get(k), sort_keys=True) for k in KEYS)


@pytest.fixture
def v5(tmp_path: Path) -> Path:
    path = tmp_path / "results.db"
    shutil.copyfile(DATA / "v5.db", path)
    return path


@pytest.fixture(params=["sqlite", "postgresql"])
def v5_db(request: pytest.FixtureRequest, v5: Path) -> str:
    """The schema-5 store in each backend, as `--db` takes it."""
    if request.param == "sqlite":
        return str(v5)
    url = str(request.getfixturevalue("pg_url"))
    load_sqlite(v5, url)
    return url


def assert_v5_rows(store: Store) -> None:
    """The rows that version's `fsbench report RUN --format json` gave, the same."""
    expected = json.loads((DATA / "v5-rows.json").read_text())
    for run_id, want_rows in expected.items():
        got = {_key(r.as_dict()): r.as_dict() for r in source.load(store, int(run_id)).rows}
        want = {_key(r): r for r in want_rows}
        assert set(got) == set(want)
        for key, row in want.items():
            mine = got[key]
            assert mine["values"] == row["values"]
            if row["mean"] is None:
                assert mine["mean"] is None
            else:
                assert mine["mean"] == pytest.approx(row["mean"])


@pytest.fixture(params=["sqlite", "postgresql"])
def v6_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The schema-6 store (tests/data/stores/README.md) in each backend."""
    path = tmp_path / "v6.db"
    shutil.copyfile(DATA / "v6.db", path)
    if request.param == "sqlite":
        return str(path)
    url = str(request.getfixturevalue("pg_url"))
    load_sqlite(path, url)
    return url


# Every field of a report row that a later fsbench must reproduce from a stored run.
V6_FIELDS = (
    "fs", "unit", "better", "message", "values", "warmup_values", "outliers", "positions",
    "headline", "resolution", "host", "groups", "trials",
)  # fmt: skip


def test_a_schema_6_store_reports_the_same_rows(v6_db: str) -> None:
    """The store this version writes, reported by every later version: the same rows
    (the same statistics, flags and verdict inputs), whatever the report code becomes."""
    store = Store(v6_db)
    expected = json.loads((DATA / "v6-rows.json").read_text())
    assert len(expected) == 3 and store.get_run(3).kind == "calibration"
    for run_id, want_rows in expected.items():
        got = {_key(r.as_dict()): r.as_dict() for r in source.load(store, int(run_id)).rows}
        want = {_key(r): r for r in want_rows}
        assert set(got) == set(want)
        for key, row in want.items():
            mine = got[key]
            for name in V6_FIELDS:
                assert mine[name] == row[name], (key, name)
            for name in ("mean", "sd", "cv", "min_detectable"):
                assert mine[name] == pytest.approx(row[name]), (key, name)
            assert mine["reps_for_5pct"] == row["reps_for_5pct"], key
            assert sorted(mine["flags"]) == sorted(row["flags"]), key
    unsupported = [r for r in expected["2"] if r["status"] == "unsupported"]
    assert unsupported and "nomballoc" in unsupported[0]["message"]
    assert any(r["warmup_values"] for r in expected["1"])
    store.close()


def test_a_schema_5_store_reports_the_same_rows_after_migration(v5_db: str) -> None:
    store = Store(v5_db)
    assert (
        store.migrated and store.migrated[0] == f"migrated from schema 5 to {schema.SCHEMA_VERSION}"
    )
    if store.sqlite_path is not None:
        assert store.backup is not None and store.backup.exists()
    else:
        assert store.backup is None  # one transaction instead
    assert_v5_rows(store)
    run = store.get_run(1)
    assert run.target["summary"].startswith("loop image 1.0 GiB on ")
    assert "alloc" in run.workloads and run.workloads["alloc"]["headline"]
    trials = [t for r in store.list_runs() for t in store.get_trials(r.id)]
    assert len({t.uid for t in trials}) == len(trials) == 41 and all(trials[0].uid)
    store.close()


def test_old_rows_get_the_same_uids_wherever_they_are_migrated(v5_db: str, tmp_path: Path) -> None:
    """Derived from what each row is: a copy migrated elsewhere names them alike (merging
    the store and a copy of its backup adds nothing)."""
    other = tmp_path / "other.db"
    shutil.copyfile(DATA / "v5.db", other)

    def uids(db: str | Path) -> set[str]:
        store = Store(db)
        found = {r.uid for r in store.list_runs()}
        found |= {t.uid for r in store.list_runs() for t in store.get_trials(r.id)}
        store.close()
        return found

    assert uids(v5_db) == uids(other) and len(uids(other)) == 2 + 41


def test_migration_is_once(v5_db: str) -> None:
    Store(v5_db).close()
    again = Store(v5_db)
    assert again.migrated == [] and again.backup is None
    again.close()


def test_the_sqlite_backup_is_the_old_store(v5: Path) -> None:
    Store(v5).close()
    backup = v5.with_name(f"{v5.name}.schema-5.bak")
    with sqlite3.connect(backup) as conn:
        columns = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    assert "kind" not in columns and "convergence" in columns


def test_a_failed_migration_on_postgresql_leaves_the_store_as_it_was(
    pg_url: str, v5: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Columns, data and version in one transaction: a failure half-way undoes it all."""
    load_sqlite(v5, pg_url)

    def broken(conn: object) -> list[str]:
        raise RuntimeError("the data fill failed")

    monkeypatch.setitem(schema.DATA_MIGRATIONS, 6, broken)
    with pytest.raises(RuntimeError, match="the data fill failed"):
        Store(pg_url)
    monkeypatch.undo()
    engine = create_engine(to_url(pg_url))  # looked at without a Store (that migrates)
    with engine.connect() as conn:
        assert schema.stored_version(conn) == 5
        columns = {c["name"] for c in inspect(conn).get_columns("trials")}
        assert "uid" not in columns and "position" not in columns
        assert "meta" not in inspect(conn).get_table_names()
    engine.dispose()
    store = Store(pg_url)  # and it migrates the next time
    assert store.migrated[0] == f"migrated from schema 5 to {schema.SCHEMA_VERSION}"
    assert_v5_rows(store)
    store.close()


def test_a_newer_store_is_refused_in_one_line(store_db: str) -> None:
    store = Store(store_db)
    with store.engine.begin() as conn:
        conn.execute(schema.meta.update().values(value="99"))
        assert conn.execute(select(schema.meta.c.value)).scalar_one() == "99"
    store.close()
    with pytest.raises(FsbenchError, match="newer fsbench") as err:
        Store(store_db)
    assert "\n" not in str(err.value)


def test_every_column_any_version_added_can_be_added_in_both_backends(store_db: str) -> None:
    """Each ALTER TABLE of the history (types, defaults) on tables that lack the column,
    so that a store of any version migrates on either backend; rows already there get
    the default."""
    added = [
        a
        for v in sorted(schema.MIGRATIONS)
        for a in schema.MIGRATIONS[v]
        if isinstance(a, schema.Added)
    ]
    bare = MetaData()
    tables = {
        name: Table(f"old_{name}", bare, Column("id", Integer, primary_key=True))
        for name in {a.table for a in added}
    }
    engine = create_engine(to_url(store_db))
    with engine.begin() as conn:
        bare.create_all(conn)
        for table in tables.values():
            conn.execute(insert(table).values(id=1))
        for add in added:
            schema.add_column(conn, replace(add, table=f"old_{add.table}"))
        for name, table in tables.items():
            columns = {c["name"]: c for c in inspect(conn).get_columns(table.name)}
            row = conn.execute(select(Table(table.name, MetaData(), autoload_with=conn))).first()
            assert row is not None
            for add in (a for a in added if a.table == name):
                assert columns[add.column]["nullable"] is False
                value = row._mapping[add.column]
                assert str(value) in (add.default.strip("'"), "0.0"), (add, value)
    engine.dispose()
