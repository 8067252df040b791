"""`fsbench resume [RUN]` picks its run whatever its kind, and refuses in one line: nothing
to resume, a finished run, a run of a kind this fsbench does not provide; a kind's own
spelling (`fsbench tune --resume`, `fsbench run --resume`) takes its kind's runs and names
`fsbench resume N` for another's. A race stored before its budget moved to its plan
(schema 11) keeps the same budget and space."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from fsbench.cli.app import app
from fsbench.execute import session
from fsbench.execute.race.trials import TuneSpec
from fsbench.store import schema
from fsbench.store.results import Store
from fsbench.store.runkinds import GRID, TUNE
from fsbench.system.errors import FsbenchError

PLAN = {"name": "p", "fs": [{"type": "ext4"}, {"type": "xfs"}], "workload": [{"name": "alloc"}]}


def _run(store: Store, kind: str, status: str, facts: dict[str, object] | None = None) -> int:
    rid = store.create_run(
        name="p", fsbench_version="0", argv=[], plan=PLAN, overrides={}, schedule=[],
        host={}, target={}, kind=kind, facts=facts,
    )  # fmt: skip
    store.finish_run(rid, status)
    return rid


def _error(*argv: str) -> str:
    res = CliRunner().invoke(app, list(argv))
    assert isinstance(res.exception, FsbenchError), res.output
    return str(res.exception)


def test_resume_refuses_in_one_line(tmp_path: Path) -> None:
    db = str(tmp_path / "r.db")
    store = Store(db)
    assert _error("resume", "--db", db) == f"no unfinished run in {store.url} to resume"
    done = _run(store, GRID.name, "finished")
    assert _error("resume", str(done), "--db", db) == f"run {done} is finished: nothing to resume"
    alien = _run(store, "replay", "interrupted")
    said = _error("resume", "--db", db)  # the newest unfinished run: of a kind not provided
    assert said.startswith(f"run {alien} is of kind 'replay', which this fsbench does not ")
    assert "\n" not in said and said == _error("resume", str(alien), "--db", db)


def test_a_kinds_spelling_takes_its_kind_and_names_the_one_resume_for_others(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "r.db")
    store = Store(db)
    race = _run(store, TUNE.name, "interrupted", {"metric": "seconds"})
    grid = _run(store, GRID.name, "interrupted")
    assert session.to_resume(store, None, None).id == grid  # any kind: the newest
    assert session.to_resume(store, TUNE, None).id == race  # the race's spelling: its own
    assert _error("run", "--resume", str(race), "--db", db) == (
        f"run {race} is a race of fsbench tune: `fsbench resume {race}` goes on with it"
    )
    assert _error("tune", "--resume", str(grid), "--db", db) == (
        f"run {grid} is a comparison of fsbench run: `fsbench resume {grid}` goes on with it"
    )
    assert _error("bisect", "--resume", "--db", db) == (
        f"no unfinished kernel bisection of fsbench bisect in {store.url} to resume; run "
        f"{grid} is a comparison of fsbench run: `fsbench resume {grid}` goes on with it"
    )  # --resume alone: no --linux, --good, --bad
    assert _error("bisect", "--good", "v6.0", "--db", db) == (
        "--linux, --good and --bad name a bisection (--resume needs none)"
    )
    assert session.driver_class(store.get_run(race)).__name__ == "RaceDriver"
    assert session.driver_class(store.get_run(grid)).__name__ == "GridDriver"


def test_a_race_stored_before_schema_11_keeps_its_budget_and_space(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    store = Store(db)
    old = {"metric": "seconds", "budget": 300.0, "duplicates": 2, "spent": 12.0}
    rid = _run(store, TUNE.name, "finished", old)
    store.close()
    with sqlite3.connect(db) as conn:  # as schema 10 left it
        conn.execute("UPDATE meta SET value = '10' WHERE key = 'schema_version'")
    migrated = Store(db)
    assert migrated.migrated[0] == f"migrated from schema 10 to {schema.SCHEMA_VERSION}"
    run = migrated.get_run(rid)
    spec = TuneSpec.model_validate(run.facts)
    assert (run.plan["budget"], spec.space.duplicates, spec.space.races) == (300.0, 2, 1)
    assert spec.space.budget(run.plan["budget"]) == 300.0 and spec.spent == 12.0
    assert "budget" not in run.facts and "duplicates" not in run.facts
    assert {k: v for k, v in run.plan.items() if k != "budget"} == PLAN  # the rest as it was
