"""Extending fsbench is one file per extension: a target kind (tests/extensions/
toy_target.py), a workload (toy_workload.py) and a report format (toy_format.py), each
registering itself, with no other file changed. One plan runs through all three, by the
CLI as a user runs it: the toy workload on ext4 and xfs made on the toy target, stored,
decided, and reported in the toy format."""

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
from fsbench.reports import render, source
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
        render.FORMATS.unregister("tsv")
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
    assert render.renderer("tsv") is toy_format.render_tsv and "tsv" in render.report_formats()
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
    lines = shown.stdout.splitlines()
    assert lines[0] == "config\tworkload\tmetric\tmean\tn\tverdict"
    by_config = {line.split("\t")[0]: line.split("\t") for line in lines[1:]}
    assert set(by_config) == {"ext4", "xfs"}
    assert all(cells[2] == "files_per_s" and cells[4] == "3" for cells in by_config.values())
    # The verdict is the run's own, as every shipped format states it.
    report = source.load(store, run.id)
    decision = next(
        d for key, d in report.decisions.items() if key[1] == "toy-files" and "files_per_s" in key
    )
    assert {cells[5] for cells in by_config.values()} == {decision.short}
