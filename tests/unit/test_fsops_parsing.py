"""Parsers of tool output and option bookkeeping, on outputs captured from the real tools."""

from __future__ import annotations

from pathlib import Path

from fsbench.system import filesystems, fsops, kmsg

XFS_INFO = """\
meta-data=/dev/loop0             isize=512    agcount=4, agsize=65536 blks
         =                       sectsz=512   attr=2, projid32bit=1
         =                       crc=1        finobt=1, sparse=1, rmapbt=0
         =                       reflink=1    bigtime=1 inobtcount=1 nrext64=0
data     =                       bsize=4096   blocks=262144, imaxpct=25
         =                       sunit=0      swidth=0 blks
naming   =version 2              bsize=4096   ascii-ci=0, ftype=1
log      =internal log           bsize=4096   blocks=16384, version=2
         =                       sectsz=512   sunit=0 blks, lazy-count=1
realtime =none                   extsz=4096   blocks=0, rtextents=0
"""


def test_xfs_geometry() -> None:
    g = fsops._parse_xfs(XFS_INFO)
    assert g["meta-data.isize"] == "512"
    assert g["meta-data.agcount"] == "4"
    assert g["meta-data.reflink"] == "1"
    assert g["data.bsize"] == "4096"
    assert g["data.blocks"] == "262144"
    assert g["log.blocks"] == "16384"
    assert g["naming.ftype"] == "1"


def test_colon_geometry() -> None:
    text = (
        "Filesystem volume name:   fsbench\n"
        "Inode size:\t          256\n"
        "Journal size:             64M\n"
    )
    g = fsops._parse_colon(text)
    assert g == {"Filesystem volume name": "fsbench", "Inode size": "256", "Journal size": "64M"}


def test_btrfs_geometry() -> None:
    text = (
        "superblock: bytenr=65536, device=/dev/loop0\ncsum_type\t\t0 (crc32c)\nsectorsize\t\t4096\n"
    )
    g = fsops._parse_btrfs(text)
    assert g["csum_type"] == "0 (crc32c)"
    assert g["sectorsize"] == "4096"


def test_ext4_lazy_init_defaults_merge_into_user_extended_options() -> None:
    ext4 = filesystems.get("ext4")
    argv = fsops.mkfs_argv(ext4, ["-I", "256"], "/dev/loop9")
    assert argv[-1] == "/dev/loop9"
    assert argv[argv.index("-E") + 1] == "lazy_itable_init=0,lazy_journal_init=0"
    argv = fsops.mkfs_argv(ext4, ["-E", "stride=4,lazy_itable_init=1"], "/dev/loop9")
    assert argv.count("-E") == 1  # mke2fs keeps only the last -E
    assert argv[argv.index("-E") + 1] == "lazy_journal_init=0,stride=4,lazy_itable_init=1"
    assert "-L" in argv and "fsbench" in argv
    xfs = fsops.mkfs_argv(filesystems.get("xfs"), [], "/dev/loop9")
    assert "-E" not in xfs and xfs[:3] == ["mkfs.xfs", "-q", "-f"]


def test_mount_option_notes() -> None:
    kernel = [
        "EXT4-fs: Ignoring removed i_version option",
        "EXT4-fs (loop0): mounted filesystem r/w with ordered data mode.",
    ]
    notes = fsops.mount_option_notes(
        "i_version,noatime,data=ordered,defaults", ["rw", "noatime"], kernel
    )
    by = {n.option: n for n in notes}
    assert by["i_version"].kind == "ignored" and "Ignoring removed" in by["i_version"].evidence
    assert by["data=ordered"].kind == "not-shown"
    assert "noatime" not in by and "defaults" not in by


def test_mkfs_feature_notes() -> None:
    ext4 = filesystems.get("ext4")
    geometry = {"Filesystem features": "has_journal extent flex_bg metadata_csum"}
    notes = fsops.mkfs_feature_notes(ext4, ["-O", "uninit_bg,^flex_bg,extent"], geometry, "")
    assert [(n.option, n.kind) for n in notes] == [
        ("uninit_bg", "ignored"),
        ("^flex_bg", "ignored"),
    ]
    assert fsops.mkfs_feature_notes(ext4, ["-O", "uninit_bg"], {}, "") == []


def test_mountinfo_parsing(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(
        "42 27 7:0 / /var/tmp/fsbench/mnt\\0401 rw,relatime - ext4 /dev/loop0 "
        "rw,nodelalloc,data=journal\n"
    )
    (e,) = fsops.mount_entries(info)
    assert e.mountpoint == "/var/tmp/fsbench/mnt 1"
    assert e.fstype == "ext4" and e.source == "/dev/loop0"
    assert e.options == ["rw", "relatime", "nodelalloc", "data=journal"]


def test_kmsg_filter_keeps_untagged_and_own_device() -> None:
    lines = [
        "ext4: Unknown parameter 'nomballoc'",
        "EXT4-fs (vda): resized",
        "EXT4-fs (loop3): mounted filesystem",
        "loop3: detected capacity change",
    ]
    assert kmsg.about_device(lines, "/dev/loop3") == [
        "ext4: Unknown parameter 'nomballoc'",
        "EXT4-fs (loop3): mounted filesystem",
        "loop3: detected capacity change",
    ]


def test_availability_reports_missing_kernel_support() -> None:
    a = filesystems.availability(filesystems.get("jfs"), kernel_fs={"ext4"})
    assert not a.available and "lacks jfs" in a.reason
    assert filesystems.availability(filesystems.get("raw"), kernel_fs=set()).available
