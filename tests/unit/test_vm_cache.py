"""The VM cache reuses a build only after checking it: a published image whose files are
not all there at the sizes meta.json recorded is built again (cache.damaged), and a kept
kernel build whose bzImage does not name the release it was built as is built again."""

from __future__ import annotations

import json
from pathlib import Path

from fsbench.vm import kbuild
from fsbench.vm.cache import damaged, publish
from fsbench.vm.images import IMAGE_FILES


def _published(tmp_path: Path) -> Path:
    tmp = tmp_path / "key.tmp"
    tmp.mkdir()
    for name, size in zip(IMAGE_FILES, (4096, 300, 200), strict=True):
        (tmp / name).write_bytes(b"x" * size)
    final = tmp_path / "key"
    publish(tmp, final, {"key": "key"})
    return final


def test_a_published_build_lists_its_files_and_is_intact(tmp_path: Path) -> None:
    final = _published(tmp_path)
    meta = json.loads((final / "meta.json").read_text())
    assert meta["files"] == {"initrd.img": 200, "root.img": 4096, "vmlinuz": 300}
    assert damaged(final, IMAGE_FILES) is None
    (final / "guest.json").write_text("{}")  # written after publishing: not checked
    assert damaged(final, IMAGE_FILES) is None


def test_a_truncated_missing_or_unlisted_file_is_damage(tmp_path: Path) -> None:
    final = _published(tmp_path)
    with open(final / "root.img", "r+b") as fh:
        fh.truncate(1024)
    assert damaged(final, IMAGE_FILES) == "root.img is 1024 bytes, built as 4096"
    (final / "root.img").unlink()
    assert damaged(final, IMAGE_FILES) == "root.img missing"
    assert damaged(tmp_path / "nothing", IMAGE_FILES) == "no meta.json"
    # An image published before sizes were recorded: its files must still be there.
    old = tmp_path / "old"
    old.mkdir()
    (old / "meta.json").write_text('{"key": "old"}')
    for name in IMAGE_FILES:
        (old / name).write_bytes(b"x")
    assert damaged(old, IMAGE_FILES) is None
    (old / "vmlinuz").write_bytes(b"")
    assert damaged(old, IMAGE_FILES) == "vmlinuz empty"


def _bzimage(version: str) -> bytes:
    """The setup header bzimage_version reads: "HdrS" at 0x202, the version string's
    offset (less 0x200) at 0x20E."""
    head = bytearray(0x400)
    head[0x202:0x206] = b"HdrS"
    head[0x20E:0x210] = (0x100).to_bytes(2, "little")
    text = f"{version} (fsbench@fsbench) #1".encode()
    head[0x300 : 0x300 + len(text)] = text
    return bytes(head)


def test_a_kept_kernel_build_is_reused_only_when_its_header_says_so(tmp_path: Path) -> None:
    tree = tmp_path / "linux"
    tree.mkdir()
    (tree / "Makefile").write_text("all:\n\tfalse\n")
    (tree / "Kconfig").write_text('mainmenu "Linux"\n')
    builder = kbuild.KernelBuilder(tree, cache=tmp_path / "kbuild")
    done = builder.dir / "kernels" / "abc"
    done.mkdir(parents=True)
    builder.out.mkdir()
    builder.base_config.write_text("CONFIG_64BIT=y\n")
    (done / "bzImage").write_bytes(_bzimage("6.1.0-gabc"))
    (done / "version").write_text("6.1.0-gabc")
    kept = builder.build("abc")
    assert kept.ok and kept.version == "6.1.0-gabc" and kept.seconds == 0.0
    # Another release in the header (a bzImage overwritten since): not reused; built
    # again, which fails here (this tree builds nothing), and the stale one is gone.
    (done / "bzImage").write_bytes(_bzimage("6.1.0-gother"))
    again = builder.build("abc")
    assert not again.ok
    assert not (done / "bzImage").exists()
