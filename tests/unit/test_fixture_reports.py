"""Stores written before a change report the same after it: every JSON report of the
committed stores (run, target, rows), against what the version that wrote them printed;
and their comparisons as today's rule decides them.

`v6-fleet.db` is a run on two hosts as fsbench stored it before the parts of a run were
named by what they are (schema 7 renames the columns); `v7.db` a real alloc run and a run
on two hosts (schema 7); `v8.db` schema 8, one step behind today's (a real decided
run, its design planned from its budget). The rows must not change; the comparisons
follow the decision rule (`*-comparisons.json`, written by
`tests/data/stores/comparisons.py` when the rule changes on purpose, the change said in its
commit)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from fsbench.reports import export, formats, run_report, source
from fsbench.store.results import Store
from fsbench.store.schema import SCHEMA_VERSION

DATA = Path(__file__).resolve().parents[1] / "data" / "stores"
# Row fields a later version added, and the value a row of an older store gets.
ADDED_ROW_FIELDS = {"n_max": None}


def _report(store: Store, run_id: int) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(
        export.write(run_report.of(source.load(store, run_id)), formats.JSON)
    )
    return found


def _as_written(report: dict[str, Any], written: dict[str, Any]) -> dict[str, Any]:
    """The report without what this version adds to what `written` holds: the fields it
    added to rows (which must hold their old-store value), and the comparisons."""
    out = {k: v for k, v in report.items() if k in written and k != "comparisons"}
    rows = []
    for row in report["rows"]:
        for name, value in ADDED_ROW_FIELDS.items():
            if name not in written["rows"][0]:
                assert row.pop(name) == value, (name, row)
        rows.append(row)
    out["rows"] = rows
    return out


@pytest.fixture
def copied(tmp_path: Path) -> object:
    def copy(name: str) -> Store:
        path = tmp_path / name
        shutil.copyfile(DATA / name, path)
        return Store(str(path))

    return copy


def _comparisons(name: str, run_id: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads((DATA / f"{name}-comparisons.json").read_text())[
        str(run_id)
    ]
    return found


def test_a_run_on_many_hosts_stored_by_schema_6_reports_the_same(copied) -> None:  # type: ignore[no-untyped-def]
    store = copied("v6-fleet.db")
    assert store.migrated[0] == f"migrated from schema 6 to {SCHEMA_VERSION}"
    got = _report(store, 1)
    written = json.loads((DATA / "v6-fleet-report.json").read_text())
    assert _as_written(got, written) == {k: v for k, v in written.items() if k != "comparisons"}
    assert got["comparisons"] == _comparisons("v6-fleet", 1)
    # The trials are the parts', each with its host and the host's groups.
    files = {(r["host"], tuple(r["groups"])) for r in got["rows"]}
    assert files == {("h2", ("baseline",)), ("h3", ("dev",))}
    assert [p.part_host for p in store.parts(store.get_run(1).uid)] == ["h2", "h3"]


@pytest.mark.parametrize("run_id", [1, 2])
def test_a_schema_7_store_reports_the_same(copied, run_id: int) -> None:  # type: ignore[no-untyped-def]
    store = copied("v7.db")
    assert store.migrated[0] == f"migrated from schema 7 to {SCHEMA_VERSION}"
    written = json.loads((DATA / "v7-reports.json").read_text())[str(run_id)]
    got = _report(store, run_id)
    assert _as_written(got, written) == {k: v for k, v in written.items() if k != "comparisons"}
    assert got["comparisons"] == _comparisons("v7", run_id)


def test_a_schema_8_store_moves_its_design_into_facts_and_reports_the_same(copied) -> None:  # type: ignore[no-untyped-def]
    store = copied("v8.db")
    # Schema 9: a run's kind keeps its facts in runs.facts (the grid's design moves there);
    # schema 10 added runs.tag (fsbench run --tag, fsbench history --tag).
    assert store.migrated == [
        f"migrated from schema 8 to {SCHEMA_VERSION}",
        "schema 9: runs.facts",
        "schema 9: run 1 (run) keeps its facts in runs.facts",
        "schema 10: runs.tag",
    ]
    run = store.get_run(1)
    assert run.tag == "" and run.facts["design"]["budget_s"] == 60.0
    expected = json.loads((DATA / "v8-reports.json").read_text())["1"]
    got = _report(store, 1)
    assert {k: v for k, v in got.items() if k != "comparisons"} == {
        k: v for k, v in expected.items() if k != "comparisons"
    }
    assert got["comparisons"] == _comparisons("v8", 1)
