"""A run kind is one file (tests/extensions/toy_kind.py: `fsbench laps`, a driver and no
life-cycle code), and every command that deals in runs deals with it through the run-kind
registry: an interrupt ends it `interrupted` with the line that names `fsbench resume`,
`list runs` names its kind, `fsbench run --resume` (the grid's spelling) refuses it and
names `fsbench resume N`, `fsbench resume` goes on where the interrupt left it through its
driver, `report` writes it in every format by its kind's report, `compare` refuses it (its
kind is not comparable)."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from typer.testing import CliRunner

from fsbench.cli.app import app
from fsbench.reports import formats
from fsbench.store.results import Store
from fsbench.store.runkinds import KINDS
from fsbench.system.errors import FsbenchError

pytestmark = pytest.mark.integration

TOY = "tests.extensions.toy_kind"


@pytest.fixture
def toy() -> Iterator[ModuleType]:
    module = importlib.import_module(TOY)
    try:
        yield module
    finally:
        KINDS.unregister(module.NAME)
        app.registered_commands[:] = [c for c in app.registered_commands if c.name != module.NAME]
        sys.modules.pop(TOY, None)


def test_a_toy_run_kind_is_listed_reported_and_resumed_by_its_own_command(
    toy: ModuleType, tmp_path: Path
) -> None:
    db = str(tmp_path / "laps.db")
    cli = CliRunner()
    stopped = cli.invoke(app, ["laps", "--laps", "3", "--stop-after", "1", "--db", db])
    assert stopped.exit_code == 130, stopped.output
    store = Store(db)
    run = store.get_run(store.latest_run_id() or 0)
    assert (run.kind, run.status, len(run.facts["seconds"])) == ("laps", "interrupted", 1)
    assert run.plan == {} and run.schedule == []  # a stopwatch runs no plan
    assert f"interrupted; run {run.id} keeps what it did (`fsbench resume {run.id}`" in (
        stopped.output
    )

    listed = cli.invoke(app, ["list", "runs", "--db", db, "--json"])
    assert listed.exit_code == 0, listed.output
    assert [(r["id"], r["kind"], r["status"]) for r in json.loads(listed.stdout)] == [
        (run.id, "laps", "interrupted")
    ]

    # `fsbench run --resume` goes on with grid runs only: the toy's run is named with the
    # one resume, by id and without one, and nothing runs.
    for args in (["run", "--resume", str(run.id)], ["run", "--resume"]):
        refused = cli.invoke(app, [*args, "--db", db])
        assert isinstance(refused.exception, FsbenchError), refused.output
        assert f"`fsbench resume {run.id}` goes on with it" in str(refused.exception)
        assert "stopwatch of fsbench laps" in str(refused.exception)
    assert store.get_run(run.id).status == "interrupted"

    resumed = cli.invoke(app, ["resume", "--db", db])
    assert resumed.exit_code == 0, resumed.output
    assert f"fsbench: resuming run {run.id} (0 trials stored)" in resumed.output
    assert f"laps run {run.id}: 3 of 3 laps" in resumed.output  # its report, as report's
    done = store.get_run(run.id)
    assert (done.status, len(done.facts["seconds"]), store.latest_run_id()) == (
        "finished", 3, run.id
    )  # fmt: skip
    again = cli.invoke(app, ["resume", str(run.id), "--db", db])
    assert str(again.exception) == f"run {run.id} is finished: nothing to resume"
    nothing = cli.invoke(app, ["resume", "--db", db])
    assert str(nothing.exception) == f"no unfinished run in {store.url} to resume"

    # Its kind says compare does not take it (comparable=False): refused, its report named.
    compared = cli.invoke(app, ["compare", str(run.id), str(run.id), "--db", db])
    assert isinstance(compared.exception, FsbenchError), compared.output
    assert str(compared.exception) == (
        f"run {run.id} is a stopwatch of fsbench laps, which compare does not take: "
        f"`fsbench report {run.id}` tells it"
    )

    for fmt in formats.REPORT:
        shown = cli.invoke(app, ["report", str(run.id), "--format", fmt, "--db", db])
        assert shown.exit_code == 0, (fmt, shown.output)
        if fmt == formats.JSON:
            assert len(json.loads(shown.stdout)["seconds"]) == 3
        else:
            assert f"laps run {run.id}: 3 of 3 laps" in shown.stdout, fmt
