"""Claims of the README and its guides (docs/*.md) that had no test: defaults, where
results go, what overrides a plan, the documented JSON row, the features list, the
commands shown, argv-only commands."""

from __future__ import annotations

import ast
import itertools
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from fsbench.analysis import validity
from fsbench.cli import planflags
from fsbench.cli.app import app
from fsbench.cli.run import report_dir
from fsbench.execute import loop as matrix
from fsbench.execute.features.registry import probes
from fsbench.plan import model as planning
from fsbench.plan import targets
from fsbench.plan.model import FsConfig, Plan, WorkloadSpec
from fsbench.plan.targets import LoopTargetSpec
from fsbench.reports import source
from fsbench.store import dburl
from fsbench.store.results import Store
from fsbench.store.summaries import target_summary
from fsbench.system import filesystems, fsops
from fsbench.workloads.base import Scale
from tests.fakes import FakeExecutor, Ran, steady
from tests.helpers import report_as
from tests.unit.test_docs_links import argvs, command_lines, documents

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SRC = ROOT / "src" / "fsbench"


def _readme() -> str:
    """The README and every guide under docs/, one after the other."""
    return "\n".join(path.read_text() for path in documents())


def _flat(text: str) -> str:
    return " ".join(text.split())


# -- Quick start: `make run` --------------------------------------------------------------


def test_make_run_is_a_bare_fsbench_run() -> None:
    """`make run` runs the quick preset with fsbench's own defaults: no flag of its own."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^run:.*\n((?:\t.*\n)+)", makefile, flags=re.MULTILINE)
    assert recipe is not None
    assert [line.strip() for line in recipe.group(1).splitlines()] == ["$(BIN)/fsbench run"]


def test_a_bare_run_is_the_quick_preset_on_an_8_gib_image_under_var_tmp() -> None:
    assert targets.DEFAULT_IMAGE_SIZE == 8 << 30
    assert targets.DEFAULT_WORKDIR == Path("/var/tmp/fsbench")
    target = LoopTargetSpec()
    assert (target.image_size, target.workdir, target.device) == (
        8 << 30,
        Path("/var/tmp/fsbench"),
        None,
    )
    plan = planflags.build_plan(planflags.PlanFlags())
    assert plan.name == "quick"
    assert isinstance(plan.target, LoopTargetSpec)
    assert plan.target.image_size == 8 << 30
    assert plan.target.workdir == Path("/var/tmp/fsbench")
    assert plan.target.device is None  # an image file, not a disk


def test_results_go_to_the_xdg_data_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    default = tmp_path / ".local" / "share" / "fsbench" / "results.db"
    assert dburl.default_db_path() == default
    assert dburl.to_url(None) == f"sqlite:///{default}"  # no --db: the default store
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert dburl.default_db_path() == tmp_path / "xdg" / "fsbench" / "results.db"


def test_the_html_report_goes_next_to_the_database(tmp_path: Path) -> None:
    store = Store(tmp_path / "somewhere" / "results.db")
    try:
        assert report_dir(store, 7) == tmp_path / "somewhere" / "reports" / "run-7"
    finally:
        store.close()


# -- The report states the backing device and whether it is rotational -------------------

_LOOP = {"kind": "loop", "size_bytes": 8 << 30, "backing_fs": "ext4", "direct_io": True}


@pytest.mark.parametrize(("rotational", "word"), [(True, "rotational"), (False, "non-rotational")])
def test_the_target_line_names_the_backing_device_and_rotational(
    rotational: bool, word: str
) -> None:
    line = target_summary({**_LOOP, "backing_device": "/dev/sdb2", "rotational": rotational})
    assert line == f"loop image 8.0 GiB on ext4 (/dev/sdb2, {word}), direct I/O on"


def test_an_unknown_backing_device_is_not_called_non_rotational() -> None:
    line = target_summary({**_LOOP, "backing_device": None, "rotational": None})
    assert "non-rotational" not in line and "rotational?" in line


# -- Plans: flags override the plan -------------------------------------------------------

PLAN_TOML = """
name = "mine"
reps = 5
scale = "quick"

[target]
image_size = "8G"
workdir = "/var/tmp/fsbench-plan"

[[fs]]
type = "ext3"
mount = "data=writeback"

[[workload]]
name = "alloc"
[workload.params]
method = ["fallocate", "write-4k"]
"""


def test_flags_override_the_plan(tmp_path: Path) -> None:
    plan_file = tmp_path / "PLAN.toml"
    plan_file.write_text(PLAN_TOML)
    as_written = planflags.build_plan(planflags.PlanFlags(plan_file=plan_file))
    assert (as_written.scale, as_written.reps) == (Scale.QUICK, 5)
    assert [c.display for c in as_written.fs] == ["ext3 data=writeback"]
    assert [w.name for w in as_written.workloads] == ["alloc"]
    assert as_written.target.image_size == 8 << 30
    assert as_written.target.workdir == Path("/var/tmp/fsbench-plan")

    flags = planflags.flags_of(
        {
            "plan_file": plan_file,
            "scale": Scale.TINY,
            "reps": "7",
            "fs": ["xfs,btrfs"],
            "workload": ["alloc,fs_mark"],
            "image_size": "2G",
            "workdir": tmp_path / "work",
        }
    )
    plan = planflags.build_plan(flags)
    assert (plan.scale, plan.reps) == (Scale.TINY, 7)
    assert [c.type for c in plan.fs] == ["xfs", "btrfs"]
    assert [w.name for w in plan.workloads] == ["alloc", "fs_mark"]
    # The plan's own parameters stay with the workloads it has.
    assert plan.workloads[0].params == {"method": ["fallocate", "write-4k"]}
    assert plan.target.image_size == 2 << 30
    assert plan.target.workdir == tmp_path / "work"
    assert plan.name == "mine"


# -- Repetitions: the defaults the README states ------------------------------------------


def _ad_hoc(**flags: Any) -> Plan:
    given = {"fs": ["ext4"], "workload": ["alloc"], **flags}
    return planflags.build_plan(planflags.flags_of(given))


def test_repetition_defaults() -> None:
    plan = _ad_hoc(reps="auto")
    assert plan.reps == "auto"
    assert plan.max_reps == 10  # --max-reps (default 10)
    assert plan.ci_target == 0.05  # --ci-target (default 5%)
    assert plan.warmup == 1  # --warmup N, default 1
    assert planning.MIN_AUTO_REPS == 3  # --reps auto runs at least 3
    with pytest.raises(Exception, match="at least 3"):
        _ad_hoc(reps="auto", max_reps=2)


def test_the_default_is_decide_with_its_margin_and_no_budget() -> None:
    plan = _ad_hoc()
    assert plan.reps == "decide" and plan.margin == 0.05 and plan.budget is None
    assert _ad_hoc(budget="9m", margin=0.03).budget == 540
    assert _ad_hoc(reps="5").reps == 5


@pytest.mark.parametrize(
    "args, message",
    [
        (["--max-reps", "2"], "at least 3"),
        (["--budget", "soon"], "--budget: duration 'soon'"),
        (["--margin", "0"], "margin"),
        (["--reps", "many"], "a number, decide or auto"),
    ],
)
def test_bad_repetition_flags_are_one_line_before_anything_runs(
    args: list[str], message: str, tmp_path: Path
) -> None:
    import subprocess
    import sys

    argv = ["run", "--fs", "ext4", "-w", "alloc", "--db", str(tmp_path / "r.db"), *args]
    res = subprocess.run(
        [sys.executable, "-m", "fsbench.cli", *argv], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 2, res.stderr
    assert message in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert res.stdout == ""


def test_trial_timeout_defaults_by_scale() -> None:
    expected = {Scale.TINY: 10 * 60.0, Scale.QUICK: 3600.0, Scale.FULL: 12 * 3600.0}
    for scale, seconds in expected.items():
        assert _ad_hoc(scale=scale).timeout == seconds
        assert _ad_hoc(scale=scale, trial_timeout=5.0).timeout == 5.0


def _auto_run(tmp_path: Path, noise: float) -> list[int]:
    """Counted repetitions per config of a --reps auto run with every other default."""
    plan = Plan(
        fs=[FsConfig(type="ext4", label="A"), FsConfig(type="ext4", label="B")],
        workloads=[WorkloadSpec(name="alloc", params={"method": "write-4k"})],
        scale=Scale.TINY,
        reps="auto",
        seed=3,
    )
    cells = planning.expand(plan)
    executor = FakeExecutor(plan, cells, steady(noise=noise, seed=4))
    store = Store(tmp_path / f"auto-{noise}.db")
    try:
        matrix.run(plan, cells, store, argv=["fsbench"], overrides={}, executor=executor)
    finally:
        store.close()
    counted = [s for s in executor.ran if not s.warmup]
    return [len([s for s in counted if s.cell.config.label == lab]) for lab in ("A", "B")]


def test_reps_auto_runs_three_to_ten_by_default(tmp_path: Path) -> None:
    assert _auto_run(tmp_path, noise=0.001) == [3, 3]  # steady: at least 3, no more
    assert _auto_run(tmp_path, noise=0.5) == [10, 10]  # never converges: at most 10


# -- Workloads: `fsbench list workloads` --------------------------------------------------


def test_list_workloads_shows_parameters_per_scale() -> None:
    res = CliRunner().invoke(app, ["list", "workloads", "--json"])
    assert res.exit_code == 0, res.output
    listed = {w["name"]: w for w in json.loads(res.output)}
    scales = [s.value for s in Scale]
    for name, item in listed.items():
        assert list(item["defaults"]) == scales, name
        for scale in scales:
            assert set(item["defaults"][scale]) <= set(item["params"]), (name, scale)
        assert set(item["descriptions"]) == set(item["params"]), name
        assert all(text.strip() for text in item["descriptions"].values()), name
    alloc = listed["alloc"]
    assert [alloc["defaults"][s]["size"] for s in scales] == ["64M", "1G", "4G"]
    assert "size" in alloc["descriptions"] and "method" in alloc["descriptions"]
    # The table a person reads shows the same values, per scale.
    res = CliRunner().invoke(app, ["list", "workloads"], terminal_width=200)
    assert res.exit_code == 0, res.output
    assert "[64M | 1G | 4G]" in res.output


# -- The JSON rows ------------------------------------------------------------------------

JSON_ROW_KEYS = (
    "config",
    "fs",
    "workload",
    "params",
    "metric",
    "unit",
    "better",
    "status",
    "message",
    "n",
    "mean",
    "sd",
    "ci95",
    "values",
    "warmup_values",
    "outliers",
    "min_detectable",
    "reps_for_5pct",
    "positions",
    "resolution",
    "flags",
)


def test_every_documented_key_is_in_every_json_row(tmp_path: Path) -> None:
    text = _flat(_readme())
    documented = text.split("`fsbench report --format json` prints", 1)[1]
    documented = documented.split("`fsbench run --json`", 1)[0]
    for key in JSON_ROW_KEYS[5:]:
        assert f"`{key}`" in documented, key
    listed = re.search(r"`flags` \(validity flags with their detail: ([^)]*)\)", documented)
    assert listed is not None
    flags = re.findall(r"`([^`]+)`", listed.group(1))
    assert len(flags) >= 8 and set(flags) <= set(validity.FLAGS), set(flags) - set(validity.FLAGS)

    plan = Plan(
        fs=[FsConfig(type="ext4"), FsConfig(type="xfs"), FsConfig(type="btrfs")],
        workloads=[WorkloadSpec(name="alloc", params={"method": "write-4k"})],
        scale=Scale.TINY,
        reps=3,
        seed=11,
    )

    def place(ran: Ran) -> float:
        # The value says where its trial ran: the report must put each one with its place.
        return 100.0 * ran.slot.position + ran.slot.rep

    cells = planning.expand(plan)
    store = Store(tmp_path / "r.db")
    try:
        outcome = matrix.run(
            plan,
            cells,
            store,
            argv=["fsbench"],
            overrides={},
            executor=FakeExecutor(plan, cells, place),
        )
        loaded = source.load(store, outcome.run_id)
        doc = json.loads(report_as("json", loaded.run, loaded.rows))
    finally:
        store.close()
    assert doc["run"] == outcome.run_id and doc["rows"]
    seen: set[int] = set()
    for row in doc["rows"]:
        assert set(JSON_ROW_KEYS) <= set(row), set(JSON_ROW_KEYS) - set(row)
        assert row["status"] == "ok" and row["n"] == 3
        assert len(row["warmup_values"]) == 1  # the warm-up round, not counted
        assert len(row["positions"]) == len(row["values"])
        assert row["positions"] == [int(v // 100) for v in row["values"]]
        seen.update(row["positions"])
    assert seen == {1, 2, 3}  # three configs: every place of the round is taken


# -- fsbench features: what it probes -----------------------------------------------------

# Each item of the README's list, and the feature rows that answer it.
FEATURE_ITEMS = {
    "inode allocation": ("inodes: files until full", "inodes: allocated as needed"),
    "metadata overhead": ("space lost when empty",),
    "the largest allocation unit": ("largest allocation unit",),
    "grow/shrink online and offline": (
        "online grow",
        "online shrink",
        "offline grow",
        "offline shrink",
    ),
    "reflink": ("reflink copy",),
    "snapshots": ("snapshots",),
    "compression": ("transparent compression",),
    "data checksums": ("data checksums",),
    "fallocate modes": (
        "fallocate: allocate",
        "fallocate: punch hole",
        "fallocate: collapse range",
        "fallocate: zero range",
        "fallocate: insert range",
    ),
    "limits": ("largest file", "longest file name", "largest xattr value"),
    "casefold": ("case-insensitive names",),
    "quotas": ("quotas",),
    "O_DIRECT": ("O_DIRECT",),
    "FIEMAP": ("FIEMAP",),
    "online defrag": ("online defragmentation",),
}


def test_every_feature_the_readme_lists_has_a_probe() -> None:
    text = _flat(_readme())
    found = re.search(r"what this kernel and these tools actually do \((.*?)\), each cell", text)
    assert found is not None
    items = [item.strip() for item in found.group(1).split(",")]
    assert items == list(FEATURE_ITEMS)
    probed = {f.name for p in probes() for f in p.features}
    for item, rows in FEATURE_ITEMS.items():
        missing = set(rows) - probed
        assert not missing, f"README lists {item!r}: no probe answers {sorted(missing)}"
    # And the other way: every row the probes answer is one the README names.
    assert probed == {row for rows in FEATURE_ITEMS.values() for row in rows}


# -- Commands are argv lists, never shell strings -----------------------------------------

_SHELL_CALLS = {
    ("os", "system"),
    ("os", "popen"),
    ("subprocess", "getoutput"),
    ("subprocess", "getstatusoutput"),
    ("asyncio", "create_subprocess_shell"),
}
# The process runners whose first argument is the argv: a string there is a command line.
_ARGV_CALLS = {
    ("subprocess", name) for name in ("run", "Popen", "call", "check_call", "check_output")
} | {("proc", name) for name in ("run", "run_to_file", "tool_version", "read_through_cat")}
_SHELLS = {"sh", "bash", "dash", "/bin/sh", "/bin/bash", "/usr/bin/sh", "/usr/bin/bash"}


def _call_name(func: ast.expr) -> tuple[str, str]:
    if isinstance(func, ast.Attribute):
        owner = func.value.id if isinstance(func.value, ast.Name) else ""
        return owner, func.attr
    if isinstance(func, ast.Name):
        return "", func.id
    return "", ""


def _shell_uses(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            owner, name = _call_name(node.func)
            if (owner, name) in _SHELL_CALLS:
                found.append((node.lineno, f"{owner}.{name}"))
            for kw in node.keywords:
                if kw.arg == "shell" and not (
                    isinstance(kw.value, ast.Constant) and kw.value.value is False
                ):
                    found.append((node.lineno, "shell=" + ast.unparse(kw.value)))
            if (owner, name) in _ARGV_CALLS and node.args:
                first = node.args[0]
                if isinstance(first, ast.JoinedStr) or (
                    isinstance(first, ast.Constant) and isinstance(first.value, str)
                ):
                    found.append((node.lineno, f"{name}({ast.unparse(first)}) takes a string"))
        if isinstance(node, ast.List | ast.Tuple) and len(node.elts) >= 2:
            head, flag = node.elts[0], node.elts[1]
            if (
                isinstance(head, ast.Constant)
                and head.value in _SHELLS
                and isinstance(flag, ast.Constant)
                and flag.value == "-c"
            ):
                found.append((node.lineno, f"a shell command line: {ast.unparse(node)[:60]}"))
    return found


def test_the_scan_finds_shell_strings() -> None:
    bad = """
import os, subprocess
os.system("ls")
subprocess.run("ls -l", shell=True)
subprocess.getoutput("ls")
proc.run(f"mkfs {dev}")
argv = ["sh", "-c", "echo hi"]
"""
    assert len(_shell_uses(ast.parse(bad))) == 6  # shell=True's call also takes a string
    good = 'subprocess.run(["ls", "-l"], shell=False)\nproc.run(["mkfs.ext4", dev])\n'
    assert _shell_uses(ast.parse(good)) == []


def test_commands_are_argv_lists_never_shell_strings() -> None:
    trees = {path: ast.parse(path.read_text(), str(path)) for path in sorted(SRC.rglob("*.py"))}
    found = [
        f"{path.relative_to(SRC)}:{line}: {what}"
        for path, tree in trees.items()
        for line, what in _shell_uses(tree)
    ]
    assert found == []
    # The scan saw the commands it vouches for.
    runs = [
        node
        for tree in trees.values()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _call_name(node.func) in _ARGV_CALLS
    ]
    assert len(runs) > 50


# -- mkfs: the label and ext lazy init ----------------------------------------------------


@pytest.mark.parametrize("name", ["ext2", "ext3", "ext4"])
def test_ext_filesystems_are_made_without_lazy_init(name: str) -> None:
    argv = fsops.mkfs_argv(filesystems.get(name), [], "/dev/loop9")
    assert argv[argv.index("-E") + 1] == "lazy_itable_init=0,lazy_journal_init=0"
    # Unless the config sets those keys itself.
    mine = fsops.mkfs_argv(filesystems.get(name), ["-E", "lazy_itable_init=1"], "/dev/loop9")
    assert mine[mine.index("-E") + 1] == "lazy_journal_init=0,lazy_itable_init=1"


@pytest.mark.parametrize(
    "name", [n for n, fs in filesystems.catalogue().items() if not fs.pseudo and fs.mkfs]
)
def test_every_mkfs_writes_the_fsbench_label(name: str) -> None:
    fs = filesystems.get(name)
    argv = fsops.mkfs_argv(fs, [], "/dev/loop9")
    assert fs.label_flag
    at = argv.index(fs.label_flag)
    assert argv[at + 1] == filesystems.FSBENCH_LABEL == "fsbench"


# -- The Commands block -------------------------------------------------------------------

COMMANDS = (
    "run", "doctor", "list", "report", "compare", "calibrate", "features", "merge", "fleet", "tune",
    "bisect", "history", "resume", "explain", "record",
)  # fmt: skip
_PLACEHOLDERS = {"RUN": "1", "RUN_A": "1", "RUN_B": "2", "FILE": "report.html"}


def _readme_command_lines() -> list[list[str]]:
    """Each command of the README's Commands block, then every `fsbench` command line of
    the guides (code blocks and inline code), as argv (after `fsbench`): optional parts in, each
    alternative of `a|b|c` on a line of its own, placeholders filled."""
    block = README.read_text().split("## Commands", 1)[1].split("```", 2)[1]
    shown = block.strip().splitlines()
    assert len(shown) == 10, shown  # the ten commands people use most
    lines: list[list[str]] = []
    for line in shown:
        words = [w.strip("[]") for w in shlex.split(line, comments=True)]
        assert words[0] == "fsbench", line
        choices = [
            w.split("|") if "|" in w and ":" not in w else [_PLACEHOLDERS.get(w, w)]
            for w in words[1:]
        ]
        lines += [list(argv) for argv in itertools.product(*choices)]
    for guide in documents()[1:]:
        for _, line in command_lines(guide.read_text()):
            lines += argvs(line)
    return lines


def test_every_command_shown_exists_and_takes_the_flags_shown() -> None:
    group = typer.main.get_command(app)
    assert set(group.commands) == set(COMMANDS)  # type: ignore[attr-defined]
    lines = _readme_command_lines()
    assert {argv[0] for argv in lines} <= set(COMMANDS)
    assert len(lines) > 20
    for argv in lines:
        command = group.commands[argv[0]]  # type: ignore[attr-defined]
        # Parsing checks every option exists and every value has the right type.
        ctx = command.make_context(f"fsbench {argv[0]}", argv[1:])
        if argv[0] != "run" or ctx.params["resume"] or ctx.params["plan_file"]:
            continue
        # Every run shown builds its plan (nothing is run).
        built = planflags.build(planflags.flags_of(ctx.params))
        assert built.cells, argv


def test_every_host_variable_fsbench_reads_is_in_the_readme() -> None:
    from fsbench.fleet.inventory import HOST_VARS

    text = (ROOT / "docs" / "fleet.md").read_text()
    section = text.split("## Host variables", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^- `(fsbench_[a-z_]+)`", section, flags=re.MULTILINE))
    assert listed == set(HOST_VARS)


def test_every_test_module_has_a_name_of_its_own() -> None:
    """`make test` collects tests/ as one rootdir without packages: two test files with
    one basename stop the whole run at collection (CI failed on it twice)."""
    tests = Path(__file__).resolve().parents[1]
    names = [p.name for p in tests.rglob("test_*.py")]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []


def test_steady_state_is_both_criteria_unless_the_plan_says_one() -> None:
    assert _ad_hoc().steady == "both"
    assert _ad_hoc(steady="slope").steady == "slope"
    with pytest.raises(Exception, match="'both', 'spread' or 'slope'"):
        _ad_hoc(steady="either")
