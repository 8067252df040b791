"""Value formatting and the probes' pure helpers."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from fsbench.execute.features import base, registry, runner
from fsbench.execute.features.probes import checksums, fallocate, inodes
from fsbench.execute.features.values import value_text
from fsbench.store.features import Result
from fsbench.system import numbers, proc
from fsbench.system.filesystems import get


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (512, "512 B"),
        (4036, "4,036 B"),
        (16216, "16,216 B"),
        (65536, "64 KiB"),
        (128 << 20, "128 MiB"),
        ((1 << 63) - 1, "8 EiB − 1 B"),
        ((16 << 40) - 4096, "16 TiB − 4 KiB"),
        (56923104, "54.3 MiB"),
    ],
)
def test_exact_size(n: int, text: str) -> None:
    assert numbers.exact_size(n) == text


def test_value_text() -> None:
    assert value_text(Result(supported="yes", value=65458, unit="files")) == "65,458 files"
    assert value_text(Result(supported="yes", value="grows: 64 → 524,352")) == (
        "grows: 64 → 524,352"
    )
    assert value_text(Result(supported="no")) == ""


def test_family_groups_ext() -> None:
    assert {base.family(get(n)) for n in ("ext2", "ext3", "ext4")} == {"ext"}
    assert base.family(get("xfs")) == "xfs"


def test_trim_keeps_head_and_tail_and_drops_escapes() -> None:
    text = "\n".join(f"line {i}" for i in range(20)) + "\n\x1b[79;0H\x1b[Kdone"
    out = base.trim(text, lines=6)
    assert out.splitlines()[0] == "line 0"
    assert "lines omitted" in out
    assert out.splitlines()[-1] == "done"


def test_complaint_prefers_the_complaining_line() -> None:
    res = proc.Result(
        ("xfs_growfs", "-D", "1", "/mnt"),
        1,
        "meta-data=/dev/loop1 isize=512\n",
        "[EXPERIMENTAL] try to shrink unused space 1, old size is 9\n"
        "xfs_growfs: XFS_IOC_FSGROWFSDATA xfsctl failed: Invalid argument\n",
    )
    assert base.complaint(res) == "xfs_growfs: XFS_IOC_FSGROWFSDATA xfsctl failed: Invalid argument"


def test_own_kernel_lines_drop_other_devices() -> None:
    detail = (
        "$ mount -t xfs /dev/loop2 /mnt\nmount: wrong fs type\n"
        "kernel: BTRFS info (device loop3): first mount | XFS (loop2): quota support not "
        "available in this kernel. | EXT4-fs (loop22): mounted"
    )
    out = base.own_kernel_lines(detail, "/dev/loop2")
    assert (
        out.splitlines()[-1] == "kernel: XFS (loop2): quota support not available in this kernel."
    )


def test_lacks_capability(tmp_path: Path) -> None:
    status = tmp_path / "status"
    status.write_text("CapEff:\t000001fffeffffff\n")  # everything but CAP_SYS_RESOURCE
    assert base.lacks_capability("CAP_SYS_RESOURCE", status)
    assert not base.lacks_capability("CAP_SYS_ADMIN", status)
    status.write_text("CapEff:\t000001ffffffffff\n")
    assert not base.lacks_capability("CAP_SYS_RESOURCE", status)


def test_fill_stops_at_the_cap(tmp_path: Path) -> None:
    got = inodes.fill(str(tmp_path), cap=2500, seconds=30)
    assert got.stop == "cap of 2,500 files"
    assert 2500 <= got.created <= 2500 + inodes.THREADS * inodes.PER_DIR
    on_disk = sum(len(files) for _, _, files in os.walk(tmp_path))
    assert on_disk == got.created


def test_fill_stops_when_cancelled(tmp_path: Path) -> None:
    cancelled = threading.Event()
    cancelled.set()
    got = inodes.fill(str(tmp_path), cap=10**6, seconds=30, cancelled=cancelled)
    assert got.stop == "interrupted" and got.created == 0


def test_find_on_device_skips_holes(tmp_path: Path) -> None:
    image = tmp_path / "img"
    needle = os.urandom(64)
    with open(image, "wb") as f:
        f.truncate(64 << 20)
        f.seek(40 << 20)
        f.write(b"x" * 100 + needle)
    assert checksums.find_on_device(str(image), needle) == (40 << 20) + 100
    assert checksums.find_on_device(str(image), os.urandom(64)) is None


def test_fallocate_flag_names() -> None:
    mode = fallocate.FALLOC_FL_PUNCH_HOLE | fallocate.FALLOC_FL_KEEP_SIZE
    assert fallocate.flag_names(mode) == "FALLOC_FL_KEEP_SIZE|FALLOC_FL_PUNCH_HOLE"
    assert fallocate.flag_names(0) == "0"


def test_registry_rows_are_unique_and_grouped() -> None:
    names = [f.name for p in registry.probes() for f in p.features]
    assert len(names) == len(set(names))
    groups = runner.groups(registry.probes())
    assert groups[0][0] == "inodes"  # the slow group starts first
    shared = dict(groups)["shared"]
    assert shared[0].name == "overhead"  # measured on the empty filesystem, first
    for key, members in groups:
        setups = {(tuple(p.setup.mkfs.items()), tuple(p.setup.mount.items())) for p in members}
        assert len(setups) == 1, f"group {key} mixes setups"


def test_unavailable_filesystem_is_a_column_of_reasons(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fsbench.system import filesystems

    def lacking(
        fs: filesystems.FsType, kernel_fs: set[str] | None = None
    ) -> filesystems.Availability:
        return filesystems.Availability(False, f"kernel lacks {fs.name}", kernel=False)

    monkeypatch.setattr(filesystems, "availability", lacking)
    table = runner.run_features(["jfs"], tmp_path, probes=registry.probes())
    assert table.filesystems == ["jfs"]
    cells = [row.results["jfs"] for row in table.features]
    assert {c.supported for c in cells} == {"unsupported"}
    assert cells[0].note == "unavailable: kernel lacks jfs"
    assert len(table.features) == sum(len(p.features) for p in registry.probes())
