"""The guest image of a kernel with everything built in (a bisection's builds): the
default image's root, this kernel, and an empty initrd. The kernel mounts the root itself
(virtio-blk and ext4 built in); the guest's init loads no modules (it has none to load).
Nothing is copied but the bzImage, so a bisection step costs no image build.

    images/builtin-<key>/   vmlinuz, initrd.img (empty), root.img -> the default image's
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from fsbench.vm.cache import LogFn, content_key, damaged, locked, publish
from fsbench.vm.images import IMAGE_FILES, GuestImage, ensure_image
from fsbench.vm.kernels import Kernel


def empty_initrd() -> bytes:
    """A newc cpio archive with nothing in it (only its trailer): the kernel finds no
    /init there and mounts root= itself."""
    name = b"TRAILER!!!\0"
    fields = [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, len(name), 0]
    header = b"070701" + b"".join(b"%08X" % f for f in fields) + name
    header += b"\0" * (-len(header) % 4)
    return header + b"\0" * (-len(header) % 512)


def builtin_image(k: Kernel, cache: Path, log: LogFn) -> GuestImage:
    """The image for a built-in kernel `k`, made in a moment from the default image."""
    base = ensure_image(None, cache, log)
    st = k.bzimage.stat()
    key = "builtin-" + content_key("builtin", base.key, str(k.bzimage), st.st_size, st.st_mtime_ns)
    final = cache / "images" / key
    image = GuestImage(key, final, k.version, k.source)
    if damaged(final, IMAGE_FILES) is None:
        return image
    with locked(cache, f"image-{key}"):
        if damaged(final, IMAGE_FILES) is None:
            return image
        tmp = cache / "images" / f"{key}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            shutil.copy2(k.bzimage, tmp / "vmlinuz")
            (tmp / "initrd.img").write_bytes(empty_initrd())
            (tmp / "root.img").symlink_to(base.root)
            meta = {
                **base.meta,
                "key": key,
                "kernel_version": k.version,
                "kernel_source": k.source,
                "base_image": base.key,
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            }
            publish(tmp, final, meta)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return image
