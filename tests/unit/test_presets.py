"""The presets table (docs/running.md), preset by preset: the names `fsbench list presets` shows and
what each shipped plan holds."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fsbench import workloads
from fsbench.cli import planflags
from fsbench.cli.app import app
from fsbench.plan import model as planning
from fsbench.plan import presets
from fsbench.plan.model import Cell, Plan
from fsbench.system.errors import FsbenchError
from fsbench.vm.crash.patterns import PATTERNS
from fsbench.workloads.base import Scale

# The presets table is in the guide to running fsbench, linked from the README.
GUIDE = Path(__file__).resolve().parents[2] / "docs" / "running.md"
PRESETS = (
    "aging",
    "alloc",
    "boot",
    "classic-suite",
    "databases",
    "ext4-vs-xfs",
    "kernel-tree",
    "kernels",
    "quick",
    "safety",
    "small-files",
    "tune-databases",
    "tune-ext4-options",
)


def _readme_preset_names() -> list[str]:
    text = GUIDE.read_text()
    section = text.split("## Presets", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE)


def _types(p: Plan) -> list[str]:
    return [c.type for c in p.fs]


def _names(p: Plan) -> list[str]:
    return [w.name for w in p.workloads]


def _cells(name: str, scale: Scale | None = None) -> list[Cell]:
    p = presets.load_preset(name)
    return planning.expand(p if scale is None else p.model_copy(update={"scale": scale}))


def _params(cell: Cell) -> Any:
    """The cell's parameters as its workload reads them (sizes in bytes, defaults filled)."""
    return workloads.get(cell.workload).params_model.model_validate(cell.params)


def test_the_presets_are_the_readme_table() -> None:
    assert sorted(_readme_preset_names()) == list(PRESETS)
    assert presets.preset_names() == list(PRESETS)
    res = CliRunner().invoke(app, ["list", "presets", "--json"])
    assert res.exit_code == 0, res.output
    listed = json.loads(res.output)
    assert [p["name"] for p in listed] == list(PRESETS)
    assert all(p["description"].strip() for p in listed)


def test_quick_is_the_default_of_fsbench_run() -> None:
    built = planflags.build_plan(planflags.PlanFlags())
    quick = presets.load_preset("quick")
    assert built.name == "quick"
    assert built.model_dump() == quick.model_dump()


def test_quick() -> None:
    p = presets.load_preset("quick")
    assert _types(p) == ["ext4", "xfs", "btrfs"]
    assert _names(p) == ["alloc", "untar+tree-read", "fs_mark", "fio", "fileserver"]
    # Repetitions where the answer is open, within the time a fixed 3 took.
    assert p.reps == "decide" and p.max_reps == 10 and p.budget == 480
    # The CPUs held out of deep idle for the run (README, docs/running.md).
    assert p.cpu_idle == "shallow"
    by_name = {w.name: w for w in p.workloads}
    assert by_name["untar+tree-read"].params["source"] == "synthetic"
    # Streaming writes with O_DIRECT: the page cache's speed in a VM is the hypervisor's.
    assert by_name["fio"].params["profile"] == "seq-write-direct"
    # The README says "synthetic 20k files"; the preset's file count is deliberately not
    # asserted here (see the audit report: the preset has 50000).


def test_alloc_five_methods_on_seven_configs() -> None:
    p = presets.load_preset("alloc")
    assert _types(p) == ["ext2", "ext3", "ext3", "ext3", "ext4", "xfs", "btrfs"]
    ext3_modes = [c.mount for c in p.fs if c.type == "ext3"]
    assert ext3_modes == ["data=ordered", "data=writeback", "data=journal"]
    methods = {c.params["method"] for c in _cells("alloc")}
    assert methods == {"fallocate", "posix_fallocate", "mmap", "write-4k", "write-8k"}
    assert len(_cells("alloc")) == 7 * 5


def test_kernel_tree_option_matrix_and_chain() -> None:
    p = presets.load_preset("kernel-tree")
    ext = [c for c in p.fs if c.type in ("ext3", "ext4")]
    mkfs_words = [" ".join(c.mkfs) for c in ext]
    mount_words = [o for c in ext for o in c.mount.split(",") if o]
    assert "-I 256" in mkfs_words
    assert "-G 64" in mkfs_words
    assert any("uninit_bg" in w for w in mkfs_words)
    assert any(re.search(r"-O \S*\^flex_bg", w) for w in mkfs_words)
    for option in (
        "data=writeback",
        "nodelalloc",
        "nomballoc",
        "i_version",
        "journal_checksum",
        "journal_async_commit",
    ):
        assert option in mount_words, option
    assert {c.type for c in ext} == {"ext3", "ext4"}
    assert [c.type for c in p.fs if c.type not in ("ext3", "ext4")] == ["xfs", "btrfs"]
    chain = next(w for w in p.workloads if "+" in w.name)
    assert chain.steps == ["untar", "tree-read", "fsck", "tree-rm"]
    # One mkfs for the whole chain: one cell per config, its steps inside it.
    assert len([c for c in _cells("kernel-tree") if c.is_chain]) == len(p.fs)
    for scale in Scale:
        built = {c.workload for c in _cells("kernel-tree", scale)}
        assert ("kernel-build" in built) == (scale == Scale.FULL), scale


def test_ext4_vs_xfs() -> None:
    p = presets.load_preset("ext4-vs-xfs")
    assert _types(p) == ["ext4", "xfs"]
    cells = [c for c in _cells("ext4-vs-xfs") if c.config.type == "ext4"]

    def of(name: str) -> list[Cell]:
        return [c for c in cells if c.workload == name]

    assert sorted(c.params["copies"] for c in of("tree-copy")) == [1, 4]
    assert [c.params["trees"] for c in of("tree-read")] == [3]
    assert [c.params["trees"] for c in of("tree-rm")] == [3]
    assert len(of("fs_mark")) == 1
    sysbench = of("sysbench-fileio")
    for cell in sysbench:
        params = _params(cell)
        assert params.block_size == 16 * 1024 and params.direct is True
        assert params.mode.startswith("rnd")
    assert len({c.params["layout"] for c in sysbench}) == 3
    for name in ("sysbench-fileio", "fileserver"):
        assert {c.knobs["vm.dirty_ratio"] for c in of(name)} == {"1", "20"}, name


def test_small_files() -> None:
    p = presets.load_preset("small-files")
    assert _names(p) == ["fs_mark", "postmark", "sqlite"]


def test_classic_suite() -> None:
    p = presets.load_preset("classic-suite")
    assert _types(p) == ["ext3", "ext4", "xfs", "btrfs"]
    assert set(_names(p)) == {"dbench", "fio", "sqlite", "postmark", "gzip", "fs_mark"}
    cells = [c for c in _cells("classic-suite") if c.config.type == "ext4"]
    assert len({c.params["clients"] for c in cells if c.workload == "dbench"}) > 1  # a sweep
    profiles = {c.params["profile"] for c in cells if c.workload == "fio"}
    assert profiles == {"seq-write", "seq-read", "threaded-io"}


def test_boot_is_a_vm_preset_of_six_roots_and_ten_reps() -> None:
    p = presets.load_preset("boot")
    assert p.target.kind == "vm"
    assert _types(p) == ["ext3", "ext4", "xfs", "reiserfs", "jfs", "btrfs"]
    assert _names(p) == ["boot"] and p.reps == 10


def test_kernels_runs_the_classic_suite_under_two_kernels() -> None:
    p = presets.load_preset("kernels")
    assert p.target.kind == "vm"
    assert _types(p) == ["ext4", "xfs", "btrfs"]
    classic = presets.load_preset("classic-suite")
    assert [w.model_dump() for w in p.workloads] == [w.model_dump() for w in classic.workloads]
    assert {c.knobs.get("kernel") for c in _cells("kernels")} == {"6.1", "6.12"}


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_runs_at_every_scale_through_the_cli_flags(name: str) -> None:
    """`--scale tiny|quick|full` on any preset builds a plan of that scale with cells
    (tests/unit/test_plan.py expands the presets themselves at each scale)."""
    for scale in Scale:
        built = planflags.build(planflags.PlanFlags(preset=name, scale=scale))
        assert built.plan.scale == scale and built.cells


def test_aging_ages_ext4_xfs_and_btrfs_by_git_pulls_with_three_reps() -> None:
    p = presets.load_preset("aging")
    assert _types(p) == ["ext4", "xfs", "btrfs"] and p.reps == 3
    assert _names(p) == ["aging"] and [a.text for a in p.age] == ["git-pulls"]
    assert {c.knobs.get("age") for c in _cells("aging")} == {"git-pulls"}


def test_databases_compares_databases_in_and_out_of_memory() -> None:
    p = presets.load_preset("databases")
    assert [c.display for c in p.fs] == ["ext4", "xfs", "xfs 16k", "btrfs", "btrfs zstd"]
    cells = _cells("databases")
    pg = [c for c in cells if c.workload == "pgbench"]
    assert {c.knobs.get("mem") for c in pg} == {"512M"}
    assert {c.params["scale_to_mem"] for c in pg} == {0.5, 2.0}
    fpw_off = {c.config.display for c in pg if c.params["full_page_writes"] is False}
    assert fpw_off == {"btrfs", "btrfs zstd"}  # safe only where pages never tear
    oltp = [c for c in cells if c.workload == "sysbench-oltp"]
    assert {(c.config.display, c.params["doublewrite"]) for c in oltp} == {
        (fs, dw) for fs in ("ext4", "xfs") for dw in (True, False)
    }


def test_a_workload_limited_to_some_configs() -> None:
    with pytest.raises(FsbenchError, match="no config labelled 'zfs'"):
        planning.expand(
            planning.load_toml(
                '[[fs]]\ntype = "ext4"\n[[workload]]\nname = "alloc"\nconfigs = ["zfs"]\n',
                "plan",
            )
        )


def test_safety_crosses_the_options_with_every_crash_pattern_and_untar_beside() -> None:
    p = presets.load_preset("safety")
    assert p.target.kind == "vm"
    assert [c.display for c in p.fs] == [
        "ext4 data=ordered",
        "ext4 data=writeback",
        "ext4 data=journal",
        "ext4 journal_async_commit",
        "ext4 nodelalloc",
        "ext4 nobarrier",
        "ext4 -O ^has_journal",
        "xfs",
        "btrfs",
    ]
    cells = _cells("safety")
    crash = [c for c in cells if c.workload == "crash"]
    assert {c.params["pattern"] for c in crash} == set(PATTERNS)
    assert len(crash) == len(PATTERNS) * len(p.fs)
    assert all(c.params["crashes"] == 20 for c in crash)  # quick scale
    assert {c.config.display for c in cells if c.workload == "untar"} == {c.display for c in p.fs}
