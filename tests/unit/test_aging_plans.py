"""Aging without a filesystem: the age as a dimension of plans, the recipes' parameters,
the synthesized history (deterministic, with the documented shape), the stages of the
`aging` workload, and the parsers of free-space fragmentation."""

from __future__ import annotations

import statistics
import subprocess
from pathlib import Path

import pytest

from fsbench.cli import planflags as pf
from fsbench.plan import model as planning
from fsbench.system import sourcetree
from fsbench.system.errors import FsbenchError
from fsbench.vm import qemu
from fsbench.workloads import aging, get
from fsbench.workloads.aging import history, measure
from fsbench.workloads.aging.apply import Ager
from fsbench.workloads.base import Scale


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("none", "none"),
        ("git-pulls", "git-pulls"),
        (" git-pulls : pulls=500 ", "git-pulls:pulls=500"),
        ("churn:written=2:fullness=0.7", "churn:fullness=0.7:written=2"),
    ],
)
def test_an_age_is_stored_as_recipe_and_sorted_parameters(given: str, stored: str) -> None:
    assert planning.knob_value(aging.KNOB, given) == stored


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("gitpulls", r"a recipe \(git-pulls, churn\) or none"),
        ("none:pulls=3", "none takes no parameters"),
        ("git-pulls:pulls", "parameters are NAME=VALUE"),
        ("git-pulls:pulls=x", "pulls: Input should be a valid integer"),
        ("churn:fullness=1.5", "fullness: Input should be less than 1"),
        ("churn:nope=1", "nope: Extra inputs are not permitted"),
    ],
)
def test_a_bad_age_is_one_line(given: str, message: str) -> None:
    with pytest.raises(FsbenchError, match=message):
        planning.knob_value(aging.KNOB, given)


def test_age_is_a_dimension_from_the_flag_and_from_toml() -> None:
    built = pf.build(
        pf.PlanFlags(fs=["ext4,xfs"], workload=["fs_mark"], age=["none,git-pulls:pulls=5"])
    )
    ages = [c.knobs[aging.KNOB] for c in built.cells]
    assert ages == ["none", "none", "git-pulls:pulls=5", "git-pulls:pulls=5"]
    plan = planning.load_toml(
        """
        [[fs]]
        type = "ext4"
        [[workload]]
        name = "fs_mark"
        [[age]]
        recipe = "none"
        [[age]]
        recipe = "churn"
        fullness = 0.7
        """,
        "plan",
    )
    assert [c.knobs[aging.KNOB] for c in planning.expand(plan)] == ["none", "churn:fullness=0.7"]
    with pytest.raises(FsbenchError, match="age 'rot'"):
        planning.load_toml(
            '[[fs]]\ntype = "ext4"\n[[workload]]\nname = "alloc"\n[[age]]\nrecipe = "rot"\n', "plan"
        )


def test_the_aging_workload_ages_by_git_pulls_unless_told() -> None:
    alone = pf.build(pf.PlanFlags(fs=["ext4"], workload=["aging"]))
    assert [c.knobs[aging.KNOB] for c in alone.cells] == ["git-pulls"]
    churned = pf.build(pf.PlanFlags(fs=["ext4"], workload=["aging"], age=["churn"]))
    assert [c.knobs[aging.KNOB] for c in churned.cells] == ["churn"]


def test_recipe_parameters_per_scale() -> None:
    tiny, full = Ager("git-pulls", Scale.TINY), Ager("git-pulls:pulls=7", Scale.FULL)
    assert tiny.end == 24 and tiny.params.model_dump()["source"] == "synthetic"  # type: ignore[attr-defined]
    assert full.end == 7
    assert Ager("churn", Scale.QUICK).params.model_dump()["written"] == 3.0  # type: ignore[attr-defined]


def test_stages_of_the_aging_workload() -> None:
    wl = get("aging")()
    params = wl.params_model.model_validate({"steps": 2})
    stages = wl.stages(params, "git-pulls", Scale.TINY)  # type: ignore[arg-type]
    assert [(s["at"], s["state"], s["read"]) for s in stages] == [
        (12.0, "aged", "grep"),
        (12.0, "aged", "tar"),
        (12.0, "clean", "grep"),
        (12.0, "clean", "tar"),
        (24.0, "aged", "grep"),
        (24.0, "aged", "tar"),
        (24.0, "clean", "grep"),
        (24.0, "clean", "tar"),
    ]
    churn = wl.stages(wl.params_model.model_validate({"steps": 4}), "churn", Scale.TINY)  # type: ignore[arg-type]
    assert sorted({s["at"] for s in churn}) == [0.25, 0.5, 0.75, 1.0]
    assert wl.stages(params, "none", Scale.TINY) == [{}]  # type: ignore[arg-type]


def _sizes(files: int) -> dict[str, int]:
    _, entries = sourcetree.synthetic_layout(files, 7)
    return dict(entries)


def test_pulls_have_the_documented_shape() -> None:
    sizes = _sizes(20_000)
    pulls = list(history.plan_pulls(sizes, 400, seed=3))
    modified = [len([p for p in pull.written if p in sizes]) for pull in pulls]
    assert 6 <= statistics.median(modified) <= 20
    assert max(modified) <= 20_000 * history.MODIFIED_MAX_SHARE
    added = [len([p for p in pull.written if p not in sizes]) for pull in pulls[:50]]
    assert 0.8 < statistics.mean(added) < 2.5  # Poisson 1.5, first pulls (before renames)
    assert 0.2 < statistics.mean(len(p.deleted) for p in pulls) < 0.9
    assert 0.15 < statistics.mean(len(p.renamed) for p in pulls) < 0.8
    # Most of a pull's files come from one directory tree (its subsystem).
    shared = []
    for pull in pulls:
        tops = [p.split("/")[0] for p in pull.written]
        if len(tops) >= 5:
            shared.append(max(tops.count(t) for t in tops) / len(tops))
    assert statistics.median(shared) >= 0.6


def test_the_same_seed_gives_the_same_history(tmp_path: Path) -> None:
    tree = sourcetree.synthetic_source(tmp_path / "cache", 300)
    one = history.write_history(tmp_path / "a.git", Path(tree.tar), tree.top, 6, seed=5)
    two = history.write_history(tmp_path / "b.git", Path(tree.tar), tree.top, 6, seed=5)
    other = history.write_history(tmp_path / "c.git", Path(tree.tar), tree.top, 6, seed=6)
    assert one == two and len(one) == 7  # commit ids: the tree, then one per pull
    assert other[0] == one[0] and other[1:] != one[1:]
    log = subprocess.run(
        ["git", "-C", str(tmp_path / "a.git"), "rev-list", "--first-parent", "p0006"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert log[::-1] == one  # each pull's branch extends the one before


def test_free_space_parsers() -> None:
    e2 = """Device: /dev/loop0
Blocksize: 4096 bytes
Total blocks: 131072
Free blocks: 124719 (95.2%)

Min. free extent: 114688 KB
Num. free extent: 4
"""
    found = measure.PARSERS["e2freefrag"](e2, 4096)
    assert found is not None and found.extents == 4 and found.free_bytes == 124719 * 4096
    xfs = (
        "   from      to extents  blocks    pct\ntotal free extents 21\ntotal free blocks 114656\n"
    )
    found = measure.PARSERS["xfs_db"](xfs, 4096)
    assert found is not None and (found.extents, found.free_bytes) == (21, 114656 * 4096)
    assert found.mean_extent_bytes == pytest.approx(114656 * 4096 / 21)
    assert measure.PARSERS["e2freefrag"]("nothing", 4096) is None


def test_a_guest_with_clean_copies_has_a_second_scratch_disk(tmp_path: Path) -> None:
    base = {
        "kernel": tmp_path / "k",
        "initrd": tmp_path / "i",
        "root_overlay": tmp_path / "r",
        "scratch": tmp_path / "s",
        "share": tmp_path / "sh",
        "console_log": tmp_path / "c",
    }
    drives = [a for a in qemu.Machine(**base, twin=tmp_path / "t").argv() if a.startswith("file=")]  # type: ignore[arg-type]
    assert [d.split(",")[0] for d in drives] == [f"file={tmp_path / p}" for p in ("r", "s", "t")]
    assert len([a for a in qemu.Machine(**base).argv() if a.startswith("file=")]) == 2  # type: ignore[arg-type]
