"""Monitors are extensions (system/monitors): the toy monitor of tests/extensions/ is one
file that registers itself, and a plan naming it runs through the CLI, its output stored
with each trial and shown in the report beside the sampler's. A tracer's child process is
killed and reaped on every way out of a trial (it failed, it was interrupted), and a
tracer never runs beside counted trials. Unknown names and plugins of another contract
version are refused in one line."""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from pydantic import Field
from typer.testing import CliRunner

from fsbench import workloads
from fsbench.cli.app import app
from fsbench.execute import runner
from fsbench.plan.model import Cell, FsConfig
from fsbench.store.records import TrialRecord
from fsbench.store.results import Store
from fsbench.system import monitors
from fsbench.workloads.base import Params, Scale, TrialContext, Workload
from fsbench.workloads.metric import Metric
from tests.helpers import cli_args, cli_env, fsbench
from tests.runcell import CACHE, Bench, loop_bench

REPO = Path(__file__).resolve().parents[2]  # where `tests.extensions` imports from

pytestmark = pytest.mark.integration

TOYS = (
    "tests.extensions.toy_workload",
    "tests.extensions.toy_monitor",
    "tests.extensions.toy_tracer",
)
FILES = 200  # the toy workload's files at tiny scale, one 4 KiB page each


def _plan(tmp: Path, monitors_line: str, workload: str = "toy-files") -> Path:
    plan = tmp / "plan.toml"
    plan.write_text(
        f"""
name = "watched"
{monitors_line}
fs = [{{type = "ext4"}}]
workload = [{{name = "{workload}"}}]
scale = "tiny"
reps = 2
warmup = 0
seed = 7
[target]
image_size = "1G"
workdir = "{tmp / "work"}"
"""
    )
    return plan


@pytest.fixture(scope="module")
def toys() -> Iterator[dict[str, ModuleType]]:
    """The toy workload, monitor and tracer, registered by importing them and unregistered
    after: the rest of the suite checks the shipped registries."""
    modules = {name.rsplit(".", 1)[1]: importlib.import_module(name) for name in TOYS}
    try:
        yield modules
    finally:
        workloads.REGISTRY.unregister("toy-files")
        monitors.REGISTRY.unregister("page-writes")
        monitors.REGISTRY.unregister("sleeper")
        for name in TOYS:
            sys.modules.pop(name, None)


def test_a_plan_naming_the_toy_monitor_runs_it_beside_every_trial(
    toys: dict[str, ModuleType], workdir: Path
) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root for loop devices")
    cli = CliRunner()
    listed = cli.invoke(app, ["list", "monitors", "--json"])
    assert listed.exit_code == 0, listed.output
    known = {m["name"]: m for m in json.loads(listed.stdout)}
    assert known["page-writes"]["role"] == "monitor" and not known["page-writes"]["default"]
    assert known["sleeper"]["role"] == "tracer" and known["sleeper"]["needs"] == [
        "sleep (coreutils)"
    ]
    assert known["sampler"]["default"]

    db = workdir / "r.db"
    plan = _plan(workdir, 'monitors = ["sampler", "page-writes"]')
    ran = cli.invoke(app, ["run", str(plan), "--db", str(db), "--json", "--no-report"])
    assert ran.exit_code == 0, ran.output
    store = Store(str(db))
    run = store.get_run(store.latest_run_id() or 0)
    assert run.plan["monitors"] == ["sampler", "page-writes"]  # a non-default list is kept
    trials = store.get_trials(run.id)
    assert len(trials) == 2 and all(t.status == "ok" for t in trials)
    for t in trials:
        values = {m.name: m.value for m in t.metrics}
        # Its own metrics: every file the workload wrote dirtied at least its page.
        assert values["pages_dirtied"] >= FILES and values["pages_written"] >= 0
        # The sampler's still beside it, timeline included.
        assert values["device_write_bytes"] > 0 and len(store.get_samples(t.id or 0)) >= 1
        said = t.provenance["monitors"]["page-writes"]
        assert said["role"] == "monitor"
        grew = said["facts"]["after"]["nr_dirtied"] - said["facts"]["before"]["nr_dirtied"]
        assert grew == values["pages_dirtied"]
        (log,) = said["artefacts"]
        assert Path(log).read_text().startswith(f"nr_dirtied +{int(grew)}\n")
        assert "sampler" not in t.provenance["monitors"]  # it said nothing beyond metrics

    # The report shows its metrics where the sampler's are: the run's rows.
    shown = cli.invoke(app, ["report", str(run.id), "--db", str(db), "--format", "json"])
    assert shown.exit_code == 0, shown.output
    rows = {r["metric"]: r for r in json.loads(shown.stdout)["rows"]}
    assert rows["pages_dirtied"]["n"] == 2 and rows["pages_dirtied"]["mean"] >= FILES
    assert "device_write_bytes" in rows
    every = ["report", str(run.id), "--db", str(db), "--format", "md", "--all-metrics"]
    table = cli.invoke(app, every)
    assert table.exit_code == 0 and "pages_dirtied" in table.stdout, table.output


def test_the_default_plan_stores_what_it_stored_before_monitors_were_named(
    toys: dict[str, ModuleType], workdir: Path
) -> None:
    """No `monitors` in the stored plan, none in a trial's provenance: the sampler's
    metrics and timeline only."""
    if os.geteuid() != 0:
        pytest.skip("needs root for loop devices")
    db = workdir / "r.db"
    ran = CliRunner().invoke(
        app, ["run", str(_plan(workdir, "")), "--db", str(db), "--json", "--no-report"]
    )
    assert ran.exit_code == 0, ran.output
    store = Store(str(db))
    run = store.get_run(store.latest_run_id() or 0)
    assert "monitors" not in run.plan
    for t in store.get_trials(run.id):
        names = {m.name for m in t.metrics}
        assert {"device_write_bytes", "cpu_user_s", "cpu_sys_s"} <= names
        assert "pages_dirtied" not in names and "monitors" not in t.provenance
        assert len(store.get_samples(t.id or 0)) >= 1


def test_a_plan_naming_an_unknown_monitor_is_refused_in_one_line(tmp_path: Path) -> None:
    plan = _plan(tmp_path, 'monitors = ["sampler", "nope"]', "alloc")
    ran = fsbench("run", str(plan), "--db", str(tmp_path / "r.db"))
    assert ran.returncode == 2, ran.stderr
    assert ran.stderr.splitlines() == [
        f"fsbench: error: {plan}: monitors: unknown monitor 'nope' "
        "(known: sampler, block-trace, offcpu, profile)"
    ]
    assert not (tmp_path / "work").exists()


# -- a tracer: its child process never outlives the trial -------------------------------


class Trouble(Params):
    how: str = Field(default="raise", description="raise, interrupt or succeed")


class Troubled(Workload[Trouble]):
    """Ends its timed phase as told: an exception, Ctrl-C (a real SIGINT), or success."""

    name = "test-troubled"
    summary = "test workload: its run raises or is interrupted"
    scale_defaults = {scale: {} for scale in Scale}

    def run(self, ctx: TrialContext, params: Trouble) -> list[Metric]:
        if params.how == "interrupt":
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(10)  # KeyboardInterrupt comes first
        elif params.how == "raise":
            raise OSError("the workload's own failure")
        return []


@pytest.fixture(scope="module")
def bench(toys: dict[str, ModuleType]) -> Iterator[Bench]:
    workloads.register(Troubled)
    try:
        yield from loop_bench(1 << 30)
    finally:
        workloads.REGISTRY.unregister(Troubled.name)


def _traced(bench: Bench, how: str) -> list[TrialRecord]:
    """One instrumented trial of the troubled workload, the toy tracer beside the sampler."""
    tracing = runner.Runner(
        bench.target,
        runner.mount_root(bench.workdir),
        Scale.TINY,
        CACHE,
        600,
        monitor_names=("sampler", "sleeper"),
        instrumented=True,
    )
    cell = Cell(FsConfig(type="ext4"), Troubled.name, {"how": how})
    try:
        return tracing.run_cell(1, 1, cell)
    finally:
        tracing.close()


@pytest.mark.parametrize("how", ["raise", "interrupt", "succeed"])
def test_a_tracers_child_is_killed_and_reaped_on_every_way_out(
    toys: dict[str, ModuleType], bench: Bench, how: str
) -> None:
    sleeper = toys["toy_tracer"].Sleeper
    before = len(sleeper.started)
    if how == "interrupt":
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            with pytest.raises(KeyboardInterrupt):
                _traced(bench, how)
        finally:
            signal.signal(signal.SIGINT, previous)
    else:
        (record,) = _traced(bench, how)
        assert record.status == ("failed" if how == "raise" else "ok"), record.message
        if how == "raise":
            assert record.message == "OSError: the workload's own failure"
    (pid,) = sleeper.started[before:]
    # Still running when detach came (nothing else ended it), and then gone: no process,
    # not even a zombie.
    assert sleeper.alive_at_detach[before:] == [True]
    assert not Path(f"/proc/{pid}").exists()
    assert not os.path.ismount(runner.mount_root(bench.workdir))


def test_a_tracer_never_runs_beside_counted_trials(
    toys: dict[str, ModuleType], bench: Bench, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match="^monitor 'sleeper' is a tracer: tracers run only in"):
        runner.Runner(
            bench.target,
            runner.mount_root(bench.workdir),
            Scale.TINY,
            CACHE,
            monitor_names=("sampler", "sleeper"),
        )
    # Nor in a plan: the toy tracer as a real plugin (an entry point of the current
    # contract), loaded by a fresh fsbench, is listed and refused in one line.
    site = _dist(tmp_path, "[fsbench.monitors.v1]\nsleeper = tests.extensions.toy_tracer:Sleeper\n")
    listed = _fsbench(site, "list", "monitors", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {m["name"]: m["role"] for m in json.loads(listed.stdout)}["sleeper"] == "tracer"
    plan = _plan(tmp_path, 'monitors = ["sleeper"]', "alloc")
    ran = _fsbench(site, "run", str(plan), "--db", str(tmp_path / "r.db"))
    assert ran.returncode == 2, ran.stderr
    assert ran.stderr.splitlines() == [
        f"fsbench: error: {plan}: monitors: monitor 'sleeper' is a tracer: tracers run only "
        "in an instrumented pass, never beside counted trials"
    ]


# -- a plugin built for another version of the contract ---------------------------------


def _dist(tmp: Path, entry_points: str) -> Path:
    """A real installed distribution's metadata (a .dist-info, as pip leaves it) on a
    directory a fresh fsbench gets on its path."""
    site = tmp / "site"
    info = site / "toytracer-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toytracer\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)
    # Importing it would fail loudly: a refused plugin must never be imported.
    (site / "toytracer.py").write_text("raise ImportError('a refused plugin was imported')\n")
    return site


def _fsbench(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**cli_env(), "PYTHONPATH": os.pathsep.join((str(site), str(REPO)))}
    return subprocess.run(
        [sys.executable, "-m", "fsbench.cli", *cli_args(*args)],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_a_monitor_plugin_of_another_contract_is_refused_in_one_line(tmp_path: Path) -> None:
    """A monitor declared for contract v0: a plan naming it is refused in one line, the
    plugin is never imported, and `list monitors` goes on without it."""
    site = _dist(tmp_path, "[fsbench.monitors.v0]\nold-trace = toytracer:Old\n")
    plan = _plan(tmp_path, 'monitors = ["sampler", "old-trace"]', "alloc")
    ran = _fsbench(site, "run", str(plan), "--db", str(tmp_path / "r.db"))
    assert ran.returncode == 2, ran.stderr
    assert ran.stderr.splitlines() == [
        "fsbench: error: monitor 'old-trace' (package toytracer 1.0) was built for fsbench's "
        "monitor contract v0; this fsbench offers v1"
    ]
    listed = _fsbench(site, "list", "monitors", "--json")
    assert listed.returncode == 0 and "old-trace" not in listed.stdout, listed.stderr
