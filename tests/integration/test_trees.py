"""Kernel-tree workloads on real filesystems at tiny scale (a small synthetic tree)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from fsbench.system import cache as system
from fsbench.system import fiemap, filesystems, proc, sourcetree
from fsbench.workloads import fsck
from tests.helpers import fsbench, ours

pytestmark = pytest.mark.integration


def _run(workdir: Path, *args: str) -> tuple[int, list[dict[str, Any]], str]:
    res = fsbench(
        "run",
        "--workdir",
        str(workdir / "work"),
        "--db",
        str(workdir / "r.db"),
        "--image-size",
        "1G",
        "--scale",
        "tiny",
        "--reps",
        "1",
        "--json",
        "--set",
        "files=600",
        *args,
    )
    rows = json.loads(res.stdout)["rows"] if res.stdout.strip() else []
    return res.returncode, rows, res.stderr


def _metric(rows: list[dict[str, Any]], fs: str, workload: str, metric: str) -> dict[str, Any]:
    return next(
        r for r in rows if r["fs"] == fs and r["workload"] == workload and r["metric"] == metric
    )


def test_classic_chain_on_every_filesystem(workdir: Path) -> None:
    rc, rows, err = _run(
        workdir, "--fs", "ext4,xfs,btrfs", "--workload", "untar+tree-read+fsck+tree-rm"
    )
    assert rc == 0, err
    for fs in ("ext4", "xfs", "btrfs"):
        for step in ("untar", "tree-read", "fsck", "tree-rm"):
            row = _metric(rows, fs, step, "seconds")
            assert row["status"] == "ok" and row["n"] == 1 and row["mean"] > 0, row
            assert row["chain"] == "untar+tree-read+fsck+tree-rm"
        read = {r["metric"]: r for r in rows if r["fs"] == fs and r["workload"] == "tree-read"}
        # Cold for real: the device read at least the tree's data.
        assert read["device_read_bytes"]["mean"] >= read["data_bytes"]["mean"] > 0
        assert "not-cold" not in read["seconds"]["flags"]
        untar = {r["metric"]: r for r in rows if r["fs"] == fs and r["workload"] == "untar"}
        assert untar["files"]["mean"] == 600
        assert untar["frag_mean_fragments"]["mean"] >= 1
        assert 0 <= untar["frag_pct_fragmented"]["mean"] <= 100
        assert _metric(rows, fs, "fsck", "fsck_exit")["mean"] == 0
    assert _metric(rows, "ext4", "fsck", "noncontiguous_pct")["mean"] >= 0
    assert _metric(rows, "xfs", "fsck", "fragmentation_factor_pct")["mean"] >= 0
    assert ours(workdir) == ([], [])


@pytest.mark.parametrize(
    "workload, extra, metric",
    [
        ("tree-read", ["--set", "trees=2"], "mb_per_s"),
        ("tree-copy", ["--set", "copies=2"], "mb_per_s"),
        ("tree-rm", ["--set", "trees=2"], "files_per_s"),
        ("fsck", [], "noncontiguous_pct"),
    ],
)
def test_each_workload_runs_alone(
    workdir: Path, workload: str, extra: list[str], metric: str
) -> None:
    rc, rows, err = _run(workdir, "--fs", "ext4", "--workload", workload, *extra)
    assert rc == 0, err
    row = _metric(rows, "ext4", workload, metric)
    assert row["status"] == "ok" and row["mean"] > 0 or metric == "noncontiguous_pct", row


def test_inline_decompression_and_kernel_build_need_the_real_source(workdir: Path) -> None:
    rc, rows, err = _run(
        workdir,
        "--fs",
        "ext4",
        "--workload",
        "untar,kernel-build",
        "--set",
        "decompress=inline",
        "--set",
        "source=synthetic",
    )
    assert rc == 3, err  # kernel-build on a synthetic tree: unsupported, not an error
    build = next(r for r in rows if r["workload"] == "kernel-build")
    assert build["status"] == "unsupported" and "real kernel source" in build["message"]
    assert _metric(rows, "ext4", "untar", "seconds")["status"] == "ok"


@pytest.mark.skipif(sourcetree.find_kernel_tarball() is None, reason="no linux-source")
def test_kernel_build_of_a_small_target(workdir: Path) -> None:
    res = fsbench(
        "run",
        "--workdir",
        str(workdir / "work"),
        "--db",
        str(workdir / "r.db"),
        "--image-size",
        "8G",
        "--scale",
        "tiny",
        "--reps",
        "1",
        "--json",
        "--fs",
        "ext4",
        "--workload",
        "kernel-build",
        "--set",
        "target=scripts/basic/",
        timeout=900,
    )
    assert res.returncode == 0, res.stderr
    row = _metric(json.loads(res.stdout)["rows"], "ext4", "kernel-build", "seconds")
    assert row["status"] == "ok" and row["mean"] > 0


def _resident_bytes(path: Path) -> int:
    out = proc.run(["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)])
    assert out.ok, out.output
    return int(out.stdout.strip())


def test_warm_archive_stays_cached_across_drop_caches(workdir: Path) -> None:
    archive = workdir / "source.tar"
    archive.write_bytes(os.urandom(8 << 20))
    try:
        sourcetree.warm(archive)
        assert sourcetree.pinned() == [archive]
        system.drop_caches()
        assert _resident_bytes(archive) == 8 << 20
        sourcetree.unpin_all()
        system.drop_caches()
        assert _resident_bytes(archive) < 8 << 20  # released: the kernel may drop it again
    finally:
        sourcetree.unpin_all()


def test_tree_files_in_inode_order_without_symlinks(workdir: Path) -> None:
    tree = workdir / "tree"
    (tree / "a" / "b").mkdir(parents=True)
    names = [tree / "z", tree / "a" / "y", tree / "a" / "b" / "x", tree / "a" / "w"]
    for name in names:
        name.write_text("data")
    (tree / "link").symlink_to(tree / "z")
    found = fiemap.regular_files_by_inode(tree)
    assert sorted(found) == sorted(str(n) for n in names)
    inodes = [os.stat(p).st_ino for p in found]
    assert inodes == sorted(inodes)


@pytest.mark.parametrize("fs_name", ["ext4", "xfs", "btrfs"])
def test_a_checker_that_cannot_check_fails_the_trial(workdir: Path, fs_name: str) -> None:
    """The real e2fsck (exit 8), xfs_repair and btrfs check (exit 1, as for problems found)
    on a device that is not there: the checker failed, with its own words; not a timing."""
    argv = [*filesystems.get(fs_name).fsck_readonly, str(workdir / "no-such-device")]
    res = proc.run(argv, timeout=60)
    assert res.returncode != 0
    failed = fsck.checker_failed(argv, res)
    assert failed is not None, res.output
    assert "No such file or directory" in failed.message + failed.detail
