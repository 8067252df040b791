"""Real mkfs and mount of every available filesystem on a loop device."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from fsbench.system import filesystems, fsops, proc
from fsbench.system.errors import TrialFailed, Unsupported
from tests.conftest import MountFactory, available_fs

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("fs_name", available_fs())
def test_mkfs_mount_and_describe(fs_name: str, make_fs: MountFactory, loopdev: str) -> None:
    mnt = make_fs(fs_name)
    entry = fsops.mount_entry(mnt)
    assert entry is not None and entry.source == loopdev
    # ext2/ext3 are served by the ext4 driver on modern kernels; the type stays as asked.
    assert entry.fstype == fs_name
    (mnt / "hello").write_text("hi")
    geometry = fsops.geometry(filesystems.get(fs_name), loopdev)
    assert geometry and "error" not in geometry
    label_key = {"xfs": None, "btrfs": "label"}.get(fs_name, "Filesystem volume name")
    if label_key:
        assert geometry[label_key] == filesystems.FSBENCH_LABEL
    # The label is on every filesystem fsbench makes, xfs included: as libblkid reads it
    # from the device (-p: the superblock itself, not the cache).
    label = proc.run(["blkid", "-p", "-o", "value", "-s", "LABEL", loopdev])
    assert label.stdout.strip() == filesystems.FSBENCH_LABEL, label.output
    if fs_name == "xfs":
        assert geometry["data.bsize"] == "4096"


def test_ext4_is_made_without_lazy_init(make_fs: MountFactory, loopdev: str) -> None:
    make_fs("ext4")
    g = fsops.geometry(filesystems.get("ext4"), loopdev)
    # With lazy_itable_init=0 every group's inode table is zeroed at mkfs: no ITABLE_ZEROED
    # work is left for the ext4lazyinit thread. dumpe2fs -h says so via the flags below.
    assert "uninit_bg" not in g["Filesystem features"]
    groups = [
        line
        for line in proc.run(["dumpe2fs", loopdev]).stdout.splitlines()
        if re.match(r"Group \d+:", line)
    ]
    assert groups and all("ITABLE_ZEROED" in line for line in groups)


def test_effective_options_and_ignored_option(loopdev: str, workdir: Path) -> None:
    ext4 = filesystems.get("ext4")
    fsops.mkfs(ext4, [], loopdev)
    mnt = workdir / "m"
    made = fsops.mount(ext4, loopdev, mnt, "i_version,data=writeback,noatime")
    try:
        entry = fsops.mount_entry(mnt)
        assert entry is not None
        assert "data=writeback" in entry.options and "noatime" in entry.options
        notes = fsops.mount_option_notes(
            "i_version,data=writeback,noatime", entry.options, made.kernel
        )
        assert [(n.option, n.kind) for n in notes] == [("i_version", "ignored")]
        assert "Ignoring removed i_version option" in notes[0].evidence
    finally:
        fsops.umount(mnt)


def test_unknown_mount_option_is_unsupported_with_kernel_message(
    loopdev: str, workdir: Path
) -> None:
    ext4 = filesystems.get("ext4")
    fsops.mkfs(ext4, [], loopdev)
    with pytest.raises(Unsupported) as info:
        fsops.mount(ext4, loopdev, workdir / "m", "nomballoc")
    assert "Unknown parameter 'nomballoc'" in info.value.message
    assert not fsops.is_mounted(workdir / "m")


def test_refused_mkfs_option_is_unsupported(loopdev: str) -> None:
    with pytest.raises(Unsupported) as info:
        fsops.mkfs(filesystems.get("ext4"), ["-O", "lazy_bg"], loopdev)
    assert "mkfs refused" in info.value.message
    assert "lazy_bg" in info.value.message + info.value.detail


def test_superseded_mkfs_feature_is_noted(make_fs: MountFactory, loopdev: str) -> None:
    ext4 = filesystems.get("ext4")
    made = fsops.mkfs(ext4, ["-O", "uninit_bg"], loopdev)
    g = fsops.geometry(ext4, loopdev)
    notes = fsops.mkfs_feature_notes(ext4, ["-O", "uninit_bg"], g, made.output)
    assert [(n.option, n.kind) for n in notes] == [("uninit_bg", "ignored")]
    assert "metadata_csum" in notes[0].evidence


def test_busy_umount_falls_back_to_lazy(make_fs: MountFactory) -> None:
    mnt = make_fs("ext4")
    held = (mnt / "held").open("w")
    try:
        warning = fsops.umount(mnt, attempts=2)
    finally:
        held.close()
    assert warning is not None and "lazily unmounted" in warning
    assert not fsops.is_mounted(mnt)


@pytest.mark.parametrize("fs_name", ["ext4", "xfs", "btrfs"])
def test_a_busy_device_fails_the_trial_and_is_not_an_unsupported_option(
    fs_name: str, loopdev: str
) -> None:
    """A device held for a moment (here by an exclusive open, as another worker's mount
    namespace or a udev probe holds it) is a failed trial: the config was never refused,
    so the run does not drop it as `unsupported`. A fault campaign lost 11 trials so."""
    held = os.open(loopdev, os.O_RDONLY | os.O_EXCL)
    try:
        with pytest.raises(TrialFailed, match="mkfs: the device is busy: "):
            fsops.mkfs(filesystems.get(fs_name), [], loopdev)
    finally:
        os.close(held)
    fsops.mkfs(filesystems.get(fs_name), [], loopdev)  # let go: made
