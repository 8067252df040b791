"""`fsbench history` over a store holding runs on many hosts (`fsbench fleet run`): each
host's part of every run is a point of that host's series, with that host's own facts;
its change points are its own. The runs are written through the store API as the fleet
stores them (a real fleet run needs sshd and Ansible: tests/integration/test_fleet.py),
beside a race, which forms no series."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsbench.store.results import Store
from tests.helpers import fsbench
from tests.history_runs import METRIC, RunSpec, stored_on_hosts

pytestmark = pytest.mark.integration


def test_each_host_of_runs_on_many_hosts_is_a_series_of_its_own(tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    steady = [RunSpec(1000.0, kernel="6.1.0") for _ in range(12)]
    dropped = [RunSpec(1000.0, kernel="6.6.0") for _ in range(6)] + [
        RunSpec(700.0, kernel="6.6.0", mount="sync") for _ in range(6)
    ]
    runs = stored_on_hosts(db, {"h1": steady, "h2": dropped}, seed=3)
    store = Store(db)
    race = store.create_run(
        name="nightly", fsbench_version="0.1.0", argv=["fsbench", "tune"], plan={},
        overrides={}, schedule=[], host={"hostname": "h1.lab"}, target={}, kind="tune",
        tag="nightly",
    )  # fmt: skip
    store.finish_run(race, "finished")
    parts = {h: [p.id for r in runs for p in store.parts(store.get_run(r).uid) if p.part_host == h]
             for h in ("h1", "h2")}  # fmt: skip

    res = fsbench("history", "--db", str(db), "--tag", "nightly", "--format", "json")
    assert res.returncode == 0, res.stderr
    series = {s["host"]: s for s in json.loads(res.stdout)["series"]}
    assert set(series) == {"h1", "h2"} and {s["metric"] for s in series.values()} == {METRIC}
    # One point per run and host: its part, with that host's facts (not the controller's).
    for name, kernel in (("h1", "6.1.0"), ("h2", "6.6.0")):
        points = series[name]["points"]
        assert [p["run"] for p in points] == parts[name]
        assert {p["host"] for p in points} == {name} and {p["kernel"] for p in points} == {kernel}
        assert {p["tag"] for p in points} == {"nightly"}
    assert series["h1"]["changes"] == []
    (change,) = series["h2"]["changes"]
    assert (change["before_run"]["run"], change["after_run"]["run"]) == tuple(parts["h2"][5:7])
    assert change["direction"] == "worse"
    assert {"what": "mount options", "before": "", "after": "sync"} in [
        {k: c[k] for k in ("what", "before", "after")} for c in change["coincident"]
    ]

    # --host keeps one host's series; the table names both hosts.
    one = fsbench("history", "--db", str(db), "--host", "h2", "--format", "json")
    assert [s["host"] for s in json.loads(one.stdout)["series"]] == ["h2"]
    table = fsbench("history", "--db", str(db))
    assert table.returncode == 0, table.stderr
    assert "@ h1" in table.stdout and "@ h2" in table.stdout
