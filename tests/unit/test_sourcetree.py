from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from fsbench.plan import model as planning
from fsbench.plan import presets
from fsbench.plan.model import FsConfig, Plan, WorkloadSpec
from fsbench.system import sourcetree
from fsbench.system.fiemap import Extent, gaps
from fsbench.workloads.base import Scale


def test_synthetic_layout_is_deterministic_and_kernel_like() -> None:
    dirs_a, files_a = sourcetree.synthetic_layout(3000, seed=7)
    dirs_b, files_b = sourcetree.synthetic_layout(3000, seed=7)
    assert (dirs_a, files_a) == (dirs_b, files_b)
    assert sourcetree.synthetic_layout(3000, seed=8) != (dirs_a, files_a)
    assert len(files_a) == 3000
    assert 150 <= len(dirs_a) <= 250  # ~15 files per directory
    sizes = sorted(size for _, size in files_a)
    median = sizes[len(sizes) // 2]
    assert 3000 < median < 8000  # kernel sources: median ~5 KB
    assert max(d.count("/") for d in dirs_a) <= 6
    # Every file's directory exists: parents come first.
    known = {""} | set(dirs_a)
    assert all(name.rsplit("/", 1)[0] in known for name, _ in files_a if "/" in name)


def test_synthetic_archive_is_cached_and_counted(tmp_path: Path) -> None:
    tree = sourcetree.synthetic_source(tmp_path, 200, seed=3)
    assert tree.kind == "synthetic" and tree.files == 200
    with tarfile.open(tree.tar) as archive:
        members = archive.getmembers()
    assert sum(m.isfile() for m in members) == 200
    assert sum(m.size for m in members if m.isfile()) == tree.bytes
    mtime = Path(tree.tar).stat().st_mtime
    again = sourcetree.synthetic_source(tmp_path, 200, seed=3)
    assert again == tree and Path(tree.tar).stat().st_mtime == mtime  # not rebuilt
    first = Path(tree.tar).read_bytes()
    other = sourcetree.synthetic_source(tmp_path / "other", 200, seed=3)
    assert Path(other.tar).read_bytes() == first  # byte-identical from the same seed


def test_kernel_tarball_picks_newest_version(tmp_path: Path) -> None:
    for v in ("6.1", "6.12", "5.10"):
        (tmp_path / f"linux-source-{v}.tar.xz").write_bytes(b"")
    found = sourcetree.find_kernel_tarball(tmp_path)
    assert found is not None and found.name == "linux-source-6.12.tar.xz"
    assert sourcetree.find_kernel_tarball(tmp_path / "none") is None


def test_gaps_between_fragments() -> None:
    mib = 1 << 20
    contiguous = [Extent(0, 10 * mib, mib, 0), Extent(mib, 11 * mib, mib, 0)]
    assert gaps(contiguous) == []
    split = [Extent(0, 10 * mib, mib, 0), Extent(mib, 20 * mib, mib, 0)]
    assert gaps(split) == [9 * mib]
    backwards = [Extent(0, 10 * mib, mib, 0), Extent(mib, 2 * mib, mib, 0)]
    assert gaps(backwards) == [9 * mib]


def test_chain_expands_to_one_cell_with_steps() -> None:
    p = Plan(
        fs=[FsConfig(type="ext4"), FsConfig(type="xfs")],
        workload=[WorkloadSpec(name="untar + tree-read+tree-rm")],
        scale=Scale.TINY,
    )
    assert p.workloads[0].name == "untar+tree-read+tree-rm"
    cells = planning.expand(p, {"trees": ["2"]})
    assert len(cells) == 2 and cells[0].is_chain
    steps = dict(cells[0].steps)
    assert list(steps) == ["untar", "tree-read", "tree-rm"]
    assert steps["untar"] == {"source": "synthetic", "files": 3000, "decompress": "cache"}
    assert steps["tree-read"]["trees"] == 2 and steps["tree-rm"]["trees"] == 2
    assert "trees" not in steps["untar"]


def test_scale_limited_workloads_are_skipped() -> None:
    p = presets.load_preset("kernel-tree")
    names = {c.workload for c in planning.expand(p)}
    assert names == {"untar+tree-read+fsck+tree-rm"}
    full = p.model_copy(update={"scale": Scale.FULL})
    assert "kernel-build" in {c.workload for c in planning.expand(full)}


def test_unknown_step_in_chain() -> None:
    with pytest.raises(ValueError, match="unknown workload 'tar'"):
        WorkloadSpec(name="tar+tree-read")
