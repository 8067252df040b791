"""Extending fsbench is one file per extension: a target kind (tests/extensions/
toy_target.py), a workload (toy_workload.py) and a report format (toy_format.py), each
registering itself, with no other file changed. One plan runs through all three, by the
CLI as a user runs it: the toy workload on ext4 and xfs made on the toy target, stored,
decided, and reported in the toy format; and the toy format writes every other document
too: a comparison, a race, a bisection, a history and the features table."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from typer.testing import CliRunner

from fsbench import workloads
from fsbench.cli import planflags, targetflags
from fsbench.cli.app import app
from fsbench.execute.executors import EXECUTORS
from fsbench.plan import targets
from fsbench.reports import source
from fsbench.reports.export import EXPORTERS
from fsbench.store.results import Store
from fsbench.workloads import all_workloads

pytestmark = pytest.mark.integration

PLAN = """
name = "toys"
fs = [{type = "ext4"}, {type = "xfs"}]
workload = [{name = "toy-files"}]
scale = "tiny"
reps = 3
warmup = 0
seed = 7
[target]
kind = "ram-image"
"""


TOYS = (
    "tests.extensions.toy_target",
    "tests.extensions.toy_workload",
    "tests.extensions.toy_format",
)


@pytest.fixture(scope="module")
def toys() -> Iterator[dict[str, ModuleType]]:
    """The three toys registered by importing them, and unregistered afterwards: the rest
    of the suite checks the shipped registries (every workload named, every format)."""
    modules = {name.rsplit(".", 1)[1]: importlib.import_module(name) for name in TOYS}
    try:
        yield modules
    finally:
        # The registries' own dicts: what registering added, taken out again.
        targets.KINDS.unregister("ram-image")
        EXECUTORS.unregister("ram-image")
        workloads.REGISTRY.unregister("toy-files")
        EXPORTERS.unregister("tsv")
        for name in TOYS:
            sys.modules.pop(name, None)


def test_each_extension_is_known_by_registering_itself(toys: dict[str, ModuleType]) -> None:
    toy_target, toy_workload, toy_format = (
        toys["toy_target"],
        toys["toy_workload"],
        toys["toy_format"],
    )
    assert targets.kinds()["ram-image"] is toy_target.RamImageSpec
    assert all_workloads()["toy-files"] is toy_workload.ToyFiles
    assert EXPORTERS.get("tsv").serialize is toy_format.serialize
    assert "ram-image-size" in {f.flag for f in targetflags.all_flags()}
    # The toy kind's flag sets its field, like any kind's; another kind's flag is refused.
    built = planflags.build(
        planflags.flags_of(
            {"fs": ["ext4"], "workload": ["toy-files"], "target_kind": "ram-image",
             "ram_image_size": "128M"}
        )
    )  # fmt: skip
    assert (built.plan.target.kind, built.plan.target.image_size) == ("ram-image", 128 << 20)
    with pytest.raises(Exception, match="--kernel needs --target vm"):
        planflags.build(
            planflags.flags_of({"target_kind": "ram-image", "kernel": "6.1", "fs": ["ext4"]})
        )


def test_a_plan_runs_through_a_toy_target_workload_and_format(
    toys: dict[str, ModuleType], tmp_path: Path
) -> None:
    plan = tmp_path / "toys.toml"
    plan.write_text(PLAN)
    db = tmp_path / "toys.db"
    cli = CliRunner()
    ran = cli.invoke(app, ["run", str(plan), "--db", str(db), "--json", "--no-report"])
    assert ran.exit_code == 0, ran.output
    doc = json.loads(ran.stdout)
    files = [r for r in doc["rows"] if r["metric"] == "files_per_s"]
    assert {r["config"] for r in files} == {"ext4", "xfs"}
    assert all(r["n"] == 3 and r["mean"] > 0 for r in files)
    store = Store(str(db))
    run = store.get_run(store.latest_run_id() or 0)
    assert run.target["kind"] == "ram-image"
    assert run.target["summary"].startswith("a loop image in RAM")
    assert str(run.target["backing_fs"]) == "tmpfs"
    # The stored trials ran on filesystems made in RAM, and were fsync'd and read back.
    trials = store.get_trials(run.id)
    assert len(trials) == 6 and all(t.status == "ok" for t in trials)
    assert all(m.value == 200 * 4096 for t in trials for m in t.metrics if m.name == "bytes_read")

    shown = cli.invoke(app, ["report", "--db", str(db), "--format", "tsv"])
    assert shown.exit_code == 0, shown.output
    lines = [line.split("\t") for line in shown.stdout.splitlines()]
    assert lines[0] == ["title", f"fsbench run {run.id}: toys"]
    at = lines.index(["table", "toy-files"])
    assert lines[at + 1][0] == "columns" and "files_per_s" in lines[at + 1][2]
    by_config = {cells[1]: cells[2:] for cells in lines[at + 2 : at + 5] if cells[0] == "row"}
    assert set(by_config) == {"ext4", "xfs", "verdict"}
    assert all(cells[0].endswith("(3)") for name, cells in by_config.items() if name != "verdict")
    # The verdict is the run's own, as every shipped format states it.
    report = source.load(store, run.id)
    decision = next(
        d for key, d in report.decisions.items() if key[1] == "toy-files" and "files_per_s" in key
    )
    assert decision.short in by_config["verdict"]


def _rows(lines: list[list[str]], table: str) -> list[list[str]]:
    """The rows of one table of a document in the toy format."""
    at = lines.index(["table", table]) + 2
    end = next((i for i in range(at, len(lines)) if lines[i][0] != "row"), len(lines))
    return lines[at:end]


def _tsv(cli: CliRunner, *args: str) -> list[list[str]]:
    shown = cli.invoke(app, [*args, "--format", "tsv"])
    assert shown.exit_code == 0, (args, shown.output)
    return [line.split("\t") for line in shown.stdout.splitlines()]


def test_the_toy_format_writes_every_document(toys: dict[str, ModuleType], tmp_path: Path) -> None:
    """A run's report, a comparison, a race, a bisection, a history and the features table,
    each through its command in the toy format: one file that knows only the blocks."""
    plan = tmp_path / "toys.toml"
    plan.write_text(PLAN)
    db = str(tmp_path / "toys.db")
    cli = CliRunner()
    ran = cli.invoke(app, ["run", str(plan), "--db", db, "--no-report"])
    assert ran.exit_code == 0, ran.output
    raced = cli.invoke(app, ["tune", str(plan), "--max-rounds", "3", "--db", db, "--no-report"])
    assert raced.exit_code == 0, raced.output
    store = Store(db)
    grid, race = (r.id for r in store.list_runs())
    bisection = store.create_run(
        name="bisect", fsbench_version="0", argv=[], plan={}, overrides={}, schedule=[],
        host={}, target={"accel": "tcg"}, kind="bisect", facts=BISECT_FACTS,
    )  # fmt: skip

    report = _tsv(cli, "report", str(grid), "--db", db)
    assert ["title", f"fsbench run {grid}: toys"] in report and ["table", "toy-files"] in report
    compared = _tsv(cli, "compare", str(grid), str(grid), "--db", db)
    assert compared[0] == ["title", f"fsbench compare: run {grid} (A) vs run {grid} (B)"]
    assert {c[1] for c in _rows(compared, "toy-files")} == {"ext4", "xfs"}  # each cell judged
    raced_doc = _tsv(cli, "report", str(race), "--db", db)
    assert raced_doc[0] == ["title", f"fsbench tune: run {race}, toy-files (finished)"]
    assert ["fact", "", "space: 2 configs (ext4 1, xfs 1)"] in raced_doc
    bisected = _tsv(cli, "report", str(bisection), "--db", db)
    assert ["verdict", "first bad commit: dddddddddddd ext4: slower (2024-01-06)"] in bisected
    assert ["table", "Commits measured"] in bisected
    history = _tsv(cli, "history", "--db", db)
    assert history[0] == ["title", "fsbench history"]
    points = [c for c in history if c[0] == "row"]
    assert {c[1] for c in points} == {str(grid)}  # the grid run is a point; a race is not
    features = _tsv(
        cli, "features", "--fs", "ext4", "--probe", "names", "--workdir", str(tmp_path / "f")
    )
    assert features[0][0] == "table" and features[0][1].startswith("Filesystem features")
    assert ["row", "longest file name", "255 bytes"] in features


BISECT_FACTS = {
    "linux": "/src/linux", "good": "a" * 40, "bad": "b" * 40, "metric": "files_per_s",
    "max_reps": 4, "unit": "files/s",
    "first_bad": {"commit": "d" * 40, "subject": "ext4: slower", "date": "2024-01-06"},
    "steps": [{"commit": "d" * 40, "role": "step", "verdict": "bad", "gate": None,
               "build_seconds": 9.0, "measure_seconds": 31.0, "seqs": []}],
    "log": "git bisect start\n", "seconds": 600.0,
}  # fmt: skip
