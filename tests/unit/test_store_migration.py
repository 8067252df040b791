"""A store written by an earlier fsbench is migrated forward in place (after a backup) and
reports the same rows; a store from a newer fsbench is refused in one line."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from fsbench import schema
from fsbench.errors import FsbenchError
from fsbench.reports import source
from fsbench.store import Store

DATA = Path(__file__).resolve().parents[1] / "data" / "stores"
KEYS = ("config", "workload", "chain", "params", "knobs", "metric", "status", "n")


def _key(row: dict[str, object]) -> tuple[str, ...]:
    return tuple(json.dumps(row.get(k), sort_keys=True) for k in KEYS)


@pytest.fixture
def v5(tmp_path: Path) -> Path:
    path = tmp_path / "results.db"
    shutil.copyfile(DATA / "v5.db", path)
    return path


def test_a_schema_5_store_reports_the_same_rows_after_migration(v5: Path) -> None:
    expected = json.loads((DATA / "v5-rows.json").read_text())
    store = Store(v5)
    assert (
        store.migrated and store.migrated[0] == f"migrated from schema 5 to {schema.SCHEMA_VERSION}"
    )
    assert store.backup is not None and store.backup.exists()
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
    run = store.get_run(1)
    assert run.target["summary"].startswith("loop image 1.0 GiB on ")
    assert "alloc" in run.workloads and run.workloads["alloc"]["headline"]


def test_migration_is_once_and_the_backup_is_the_old_store(v5: Path) -> None:
    Store(v5).close()
    again = Store(v5)
    assert again.migrated == [] and again.backup is None
    backup = v5.with_name(f"{v5.name}.schema-5.bak")
    with sqlite3.connect(backup) as conn:
        columns = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    assert "kind" not in columns and "convergence" in columns


def test_a_newer_store_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    Store(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(FsbenchError, match="newer fsbench") as err:
        Store(path)
    assert "\n" not in str(err.value)
