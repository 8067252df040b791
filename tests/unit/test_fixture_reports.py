"""Stores written before a change report identically after it: every JSON report of the
committed stores, whole (run, target, rows, comparisons), against what the version that
wrote them printed. `v6-fleet.db` is a run on two hosts as fsbench stored it before the
parts of a run were named by what they are (schema 7 renames the columns); `v7.db` is
today's store (a real alloc run on ext4 and xfs, and a run on two hosts)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fsbench.reports import formats, render, source
from fsbench.store.results import Store
from fsbench.store.schema import SCHEMA_VERSION

DATA = Path(__file__).resolve().parents[1] / "data" / "stores"


def _report(store: Store, run_id: int) -> dict[str, object]:
    return json.loads(render.RENDERERS[formats.JSON](source.load(store, run_id), False))


@pytest.fixture
def copied(tmp_path: Path) -> object:
    def copy(name: str) -> Store:
        path = tmp_path / name
        shutil.copyfile(DATA / name, path)
        return Store(str(path))

    return copy


def test_a_run_on_many_hosts_stored_by_schema_6_reports_the_same(copied) -> None:  # type: ignore[no-untyped-def]
    store = copied("v6-fleet.db")
    assert store.migrated[0] == f"migrated from schema 6 to {SCHEMA_VERSION}"
    got = _report(store, 1)
    assert got == json.loads((DATA / "v6-fleet-report.json").read_text())
    # The trials are the parts', each with its host and the host's groups.
    files = {(r["host"], tuple(r["groups"])) for r in got["rows"]}  # type: ignore[index]
    assert files == {("h2", ("baseline",)), ("h3", ("dev",))}
    assert [p.part_host for p in store.parts(store.get_run(1).uid)] == ["h2", "h3"]


@pytest.mark.parametrize("run_id", [1, 2])
def test_todays_store_reports_the_same(copied, run_id: int) -> None:  # type: ignore[no-untyped-def]
    store = copied("v7.db")
    assert store.migrated == []
    expected = json.loads((DATA / "v7-reports.json").read_text())[str(run_id)]
    assert _report(store, run_id) == expected
