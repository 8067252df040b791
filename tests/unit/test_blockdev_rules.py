"""The BlockDevice safety decision as a pure function over probed facts (no devices)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fsbench.execute.targets.blockdev import BlockNode, DeviceFacts, refusal
from fsbench.execute.targets.devinfo import MountEntry, parse_mountinfo
from fsbench.system.filesystems import FSBENCH_LABEL

DISK = BlockNode("/dev/sdb", "disk", "8:16")
SAFE = DeviceFacts(
    given="/dev/sdb",
    real="/dev/sdb",
    destroy_data=True,
    devnum="8:16",
    size_bytes=1 << 30,
    nodes=(DISK,),
    root_devnums=frozenset({"259:0"}),
    mounts=(MountEntry(27, 1, "259:0", "/", "/", "ext4", "/dev/nvme0n1"),),
)


def test_blank_unused_disk_is_accepted() -> None:
    assert refusal(SAFE) is None


def test_fsbench_own_filesystem_is_accepted() -> None:
    sig = {"TYPE": "xfs", "USAGE": "filesystem", "LABEL": FSBENCH_LABEL}
    assert refusal(replace(SAFE, signature=sig)) is None


def test_partition_entry_keys_alone_are_not_a_signature() -> None:
    sig = {"PART_ENTRY_SCHEME": "gpt", "PART_ENTRY_NUMBER": "2"}
    assert refusal(replace(SAFE, signature=sig)) is None


def test_destroy_data_is_required_first() -> None:
    facts = replace(SAFE, destroy_data=False, exists=False)
    msg = refusal(facts)
    assert msg == "--device needs --destroy-data: every byte on /dev/sdb is lost"


def test_missing_and_not_block_name_both_paths() -> None:
    link = replace(SAFE, given="/dev/disk/by-id/x", real="/dev/sdz", exists=False)
    msg = refusal(link)
    assert msg is not None and "/dev/disk/by-id/x (-> /dev/sdz)" in msg and "no such" in msg
    msg = refusal(replace(SAFE, given="/tmp/f", real="/tmp/f", is_block=False))
    assert msg is not None and "not a block device" in msg


def test_empty_device() -> None:
    msg = refusal(replace(SAFE, size_bytes=0))
    assert msg is not None and "0 bytes" in msg


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"root_devnums": frozenset({"8:16"})}, "holds the root filesystem"),
        (
            {
                "nodes": (DISK, BlockNode("/dev/dm-0", "crypt", "253:0")),
                "root_devnums": frozenset({"253:0"}),
            },
            "root filesystem / via /dev/dm-0",
        ),
        ({"nodes": (replace(DISK, mountpoints=("[SWAP]",)),)}, "used as swap"),
        ({"swaps": frozenset({"/dev/sdb"})}, "used as swap"),
        ({"nodes": (replace(DISK, mountpoints=("/srv",)),)}, "mounted (/dev/sdb on /srv)"),
        (
            {"mounts": (MountEntry(40, 27, "0:44", "/", "/data", "btrfs", "/dev/sdb"),)},
            "mounted (/dev/sdb on /data)",
        ),
        (
            {
                "mounts": (MountEntry(40, 27, "8:17", "/", "/boot", "ext4", "/dev/sdb1"),),
                "nodes": (DISK, BlockNode("/dev/sdb1", "part", "8:17")),
            },
            "mounted (/dev/sdb1 on /boot)",
        ),
        (
            {"nodes": (DISK, BlockNode("/dev/sdb1", "part", "8:17"))},
            "whole disk with partitions (/dev/sdb1)",
        ),
        ({"nodes": (DISK, BlockNode("/dev/dm-3", "lvm", "253:3"))}, "in use by /dev/dm-3"),
        ({"lsblk_error": "lsblk does not list it"}, "cannot list"),
        ({"blkid_error": "Permission denied"}, "cannot probe"),
        ({"blkid_ambivalent": True}, "conflicting signatures"),
        ({"signature": {"PTTYPE": "gpt"}}, "gpt partition table"),
        ({"nodes": (replace(DISK, pttype="dos"),)}, "dos partition table"),
        ({"signature": {"TYPE": "ext4", "USAGE": "filesystem", "LABEL": "home"}}, "'home'"),
        ({"signature": {"TYPE": "ext4", "USAGE": "filesystem"}}, "signature (ext4"),
        ({"signature": {"TYPE": "LVM2_member", "USAGE": "raid"}}, "LVM2_member"),
        (
            {"signature": {"TYPE": "swap", "USAGE": "other", "LABEL": FSBENCH_LABEL}},
            "signature (swap",
        ),
        ({"nodes": (replace(DISK, fstype="ntfs", label="Data"),)}, "signature (ntfs"),
        ({"busy": True}, "EBUSY"),
        ({"open_error": "Operation not permitted"}, "cannot open"),
    ],
)
def test_refusals(change: dict[str, object], expected: str) -> None:
    msg = refusal(replace(SAFE, **change))  # type: ignore[arg-type]
    assert msg is not None and expected in msg, msg
    assert "\n" not in msg


def test_root_is_reported_before_mount() -> None:
    facts = replace(
        SAFE,
        nodes=(replace(DISK, mountpoints=("/",)),),
        root_devnums=frozenset({"8:16"}),
    )
    msg = refusal(facts)
    assert msg is not None and "root filesystem" in msg


def test_parse_mountinfo_unescapes_and_skips_optional_fields() -> None:
    text = (
        "27 1 259:0 / / rw,relatime shared:1 - ext4 /dev/nvme0n1 rw\n"
        "90 27 7:3 / /var/tmp/a\\040b rw master:2 shared:5 - xfs /dev/loop3 rw\n"
    )
    entries = parse_mountinfo(text)
    assert [(e.devnum, e.mountpoint, e.fstype, e.source) for e in entries] == [
        ("259:0", "/", "ext4", "/dev/nvme0n1"),
        ("7:3", "/var/tmp/a b", "xfs", "/dev/loop3"),
    ]
