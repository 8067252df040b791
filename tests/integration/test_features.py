"""`fsbench features` on real loop images: the facts the table must show on this machine.

One run of the probes serves every test (module-scoped fixture): the inode probe fills a
small filesystem and stops at a cap, which is enough to see whether the number of inodes
is fixed at mkfs. A machine without xfs or btrfs still runs every ext2/ext4 test (the
others skip one by one), and one test takes mkfs.xfs or mkfs.btrfs away for real (a
private mount namespace with the program covered) to see ext4's column stay whole.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fsbench.execute.features import registry
from fsbench.execute.features.base import MiB, Settings
from fsbench.execute.features.runner import run_features
from fsbench.store.features import FeatureTable, Result
from tests.conftest import TEST_ROOT, available_fs
from tests.helpers import TEST_DATA_HOME, fsbench, ours

pytestmark = pytest.mark.integration

FS = ["ext2", "ext4", "xfs", "btrfs"]
PROBES = ["inodes", "resize", "reflink", "fallocate", "names"]


@pytest.fixture(scope="module")
def work() -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("needs root for loop devices")
    if not {"ext2", "ext4"} <= set(available_fs()):
        pytest.skip("this machine cannot make ext2 and ext4")
    path = TEST_ROOT / f"features-{uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True)
    try:
        yield path
    finally:
        subprocess.run(["rm", "-rf", "--one-file-system", str(path)], check=False)


@pytest.fixture(scope="module")
def table(work: Path) -> FeatureTable:
    settings = Settings(inode_fs_size=320 * MiB, inode_cap=20_000, workers=2)
    probes = [registry.by_name(n) for n in PROBES]
    here = set(available_fs())
    return run_features([f for f in FS if f in here], work / "scratch", settings, probes)


def cell(table: FeatureTable, feature: str, fs: str) -> Result:
    """The result on `fs`; a test of a filesystem this machine cannot make skips."""
    if fs not in table.filesystems:
        pytest.skip(f"this machine cannot make {fs}")
    r = table.result(feature, fs)
    assert r.supported != "error", f"{feature} on {fs}: {r.note}"
    return r


def test_everything_is_released(table: FeatureTable, work: Path) -> None:
    loops, mounts = ours(work)
    assert loops == [] and mounts == []
    assert not list((work / "scratch").glob("fsbench-*.img"))
    assert not list((work / "scratch").glob("mnt-*"))


def test_ext4_shrinks_offline_not_online(table: FeatureTable) -> None:
    assert cell(table, "online shrink", "ext4").supported == "no"
    assert "On-line shrinking not supported" in table.result("online shrink", "ext4").note
    offline = cell(table, "offline shrink", "ext4")
    assert offline.supported == "yes", offline.note
    assert any("resize2fs" in e for e in offline.evidence)
    assert cell(table, "offline grow", "ext4").supported == "yes"


def test_xfs_refuses_to_shrink(table: FeatureTable) -> None:
    for feature in ("online shrink", "offline shrink"):
        r = cell(table, feature, "xfs")
        assert r.supported == "no", r.note
        assert r.evidence and any("xfs_growfs" in e for e in r.evidence)


def test_btrfs_shrinks_online(table: FeatureTable) -> None:
    online = cell(table, "online shrink", "btrfs")
    assert online.supported == "yes", online.note
    assert any("btrfs filesystem resize" in e for e in online.evidence)


@pytest.mark.parametrize("fs", ["xfs", "btrfs"])
def test_online_grow(table: FeatureTable, fs: str) -> None:
    assert cell(table, "online grow", fs).supported == "yes"


def test_ext4_inodes_fixed_at_mkfs(table: FeatureTable) -> None:
    ext4 = cell(table, "inodes: allocated as needed", "ext4")
    assert ext4.supported == "no"
    assert str(ext4.value).startswith("fixed at mkfs")
    assert any("Inode count" in e for e in ext4.evidence)


def test_xfs_inodes_grow_btrfs_has_no_table(table: FeatureTable) -> None:
    xfs = cell(table, "inodes: allocated as needed", "xfs")
    assert xfs.supported == "yes"
    assert str(xfs.value).startswith("grows: 64 → ")
    assert any("icount" in e for e in xfs.evidence)
    btrfs = cell(table, "inodes: allocated as needed", "btrfs")
    assert btrfs.supported == "yes" and btrfs.value == "no inode table"
    count = cell(table, "inodes: files until full", "xfs")
    assert isinstance(count.value, int) and count.value >= 20_000
    assert "cap" in count.note


def test_no_reflink_on_ext4(table: FeatureTable) -> None:
    ext4 = cell(table, "reflink copy", "ext4")
    assert ext4.supported == "no"
    assert "Operation not supported" in ext4.note


@pytest.mark.parametrize("fs", ["xfs", "btrfs"])
def test_reflink(table: FeatureTable, fs: str) -> None:
    assert cell(table, "reflink copy", fs).supported == "yes"


def test_fallocate_ext4_yes_ext2_no(table: FeatureTable) -> None:
    assert cell(table, "fallocate: punch hole", "ext4").supported == "yes"
    assert cell(table, "fallocate: allocate", "ext4").supported == "yes"
    ext2 = cell(table, "fallocate: allocate", "ext2")
    assert ext2.supported == "no"
    assert "EOPNOTSUPP" in ext2.note or "ENOTSUP" in ext2.note
    # ext2 is mounted by the ext4 driver, which punches holes in block-mapped files too.
    assert cell(table, "fallocate: punch hole", "ext2").supported == "yes"


def test_no_collapse_range_on_btrfs(table: FeatureTable) -> None:
    assert cell(table, "fallocate: collapse range", "btrfs").supported == "no"


@pytest.mark.parametrize("fs", FS)
def test_longest_name_is_255(table: FeatureTable, fs: str) -> None:
    r = cell(table, "longest file name", fs)
    assert (r.supported, r.value, r.unit) == ("yes", 255, "bytes")
    assert any("ENAMETOOLONG" in e for e in r.evidence)


def test_cli_json_with_an_unavailable_column(work: Path) -> None:
    res = fsbench(
        "features",
        "--fs",
        "ext4,jfs",
        "--probe",
        "fiemap,names",
        "--json",
        "--workdir",
        str(work / "cli"),
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["filesystems"] == ["ext4", "jfs"]
    assert [f["name"] for f in data["features"]] == ["longest file name", "FIEMAP"]
    fiemap = data["features"][1]["results"]
    assert fiemap["ext4"]["supported"] == "yes"
    if "jfs" not in available_fs():
        assert fiemap["jfs"]["supported"] == "unsupported"
        assert fiemap["jfs"]["note"].startswith("unavailable: ")
    assert ours(work / "cli") == ([], [])


@pytest.fixture(scope="module")
def ext4_every_probe(work: Path) -> FeatureTable:
    """Every probe of `fsbench features`, on ext4 alone (small sizes)."""
    settings = Settings(inode_fs_size=128 * MiB, inode_cap=5_000, inode_seconds=30, workers=1)
    return run_features(["ext4"], work / "every-probe", settings)


def test_every_probe_runs_on_ext4(ext4_every_probe: FeatureTable, work: Path) -> None:
    """No probe errs on ext4, each answers all its rows with measured facts and evidence
    or a reason; and nothing it made is left behind."""
    table = ext4_every_probe
    for probe in registry.probes():
        for feature in probe.features:
            r = table.result(feature.name, "ext4")
            assert r.supported in ("yes", "no", "n/a"), (probe.name, feature.name, r)
            assert r.evidence or r.note, (probe.name, feature.name)
    assert len(table.features) == sum(len(p.features) for p in registry.probes())
    assert ours(work / "every-probe") == ([], [])


@pytest.mark.alone  # its namespace copies every mount: see tests/conftest.py
@pytest.mark.parametrize(("fs", "program"), [("xfs", "mkfs.xfs"), ("btrfs", "mkfs.btrfs")])
def test_ext4_probes_run_when_another_filesystem_is_missing(
    work: Path, fs: str, program: str
) -> None:
    """`fsbench features --fs ext4,FS` where FS cannot be made: its mkfs is covered by a
    non-executable file in a private mount namespace (no other process sees it), as on a
    machine without its package. FS's column says why, in every row; ext4's is the same as
    with FS there."""
    found = shutil.which(program, path="/usr/sbin:/sbin:/usr/bin:/bin")
    if found is None or fs not in available_fs():
        pytest.skip(f"{program} is not here to take away")
    probes = "names,fiemap,fallocate,reflink"
    argv = ["features", "--fs", f"ext4,{fs}", "--probe", probes, "--json"]

    def features(workdir: Path, *hidden: str) -> dict[str, Any]:
        env = {**os.environ, "XDG_DATA_HOME": str(TEST_DATA_HOME)}
        command = [sys.executable, "-m", "fsbench.cli", *argv, "--workdir", str(workdir)]
        if hidden:
            # A fixed script; the paths are its arguments.
            cover = 'for p; do [ "$p" = -- ] && break; mount --bind /dev/null "$p"; done'
            script = cover + '; while [ "$1" != -- ]; do shift; done; shift; exec "$@"'
            unshare = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]
            command = [*unshare, "sh", *hidden, "--", *command]
        res = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
        assert res.returncode == 0, res.stderr
        assert ours(workdir) == ([], [])
        return dict(json.loads(res.stdout))

    without = features(work / f"without-{fs}", found)
    with_it = features(work / f"with-{fs}")
    for row, whole in zip(without["features"], with_it["features"], strict=True):
        lacking = row["results"][fs]
        assert lacking["supported"] == "unsupported", (row["name"], lacking)
        assert lacking["note"].startswith(f"unavailable: missing {program} (apt-get install"), (
            lacking["note"]
        )
        assert whole["results"][fs]["supported"] != "unsupported", (row["name"], whole)
        ext4 = row["results"]["ext4"]
        assert ext4["supported"] in ("yes", "no"), (row["name"], ext4)
        same = {k: ext4[k] for k in ("supported", "value", "unit")}
        assert same == {k: whole["results"]["ext4"][k] for k in same}, row["name"]
    # The program is back for everyone else: the namespace went with the process.
    assert os.access(found, os.X_OK)
