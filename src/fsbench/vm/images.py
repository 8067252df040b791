"""The guest image for a kernel: the cached root filesystem, staged, configured for the
kernel (guestfiles.py) and packed into a raw ext4 root; built once and cached.

    images/<key>/   root.img (raw ext4), vmlinuz, initrd.img, meta.json, guest.json

The key hashes the kernel, the root filesystem's key (its packages), what is written into
the guest, the recipe version and fsbench's version with its Python dependencies.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fsbench
from fsbench.execute import packages
from fsbench.system import proc
from fsbench.system.errors import FsbenchError
from fsbench.system.layout import FileIn
from fsbench.vm import guestfiles, pyenv, rootfs
from fsbench.vm.cache import (
    DEFAULT_CACHE,
    LogFn,
    build_step,
    content_key,
    damaged,
    json_files,
    locked,
    publish,
    quiet,
)
from fsbench.vm.kernels import Kernel, cached_kernels, resolve_kernel

# Bump when the way an image is made changes: old images are then rebuilt, not reused.
RECIPE_VERSION = "4"
ROOT_HEADROOM = 768 << 20
GUEST_FACTS = "guest.json"  # in the image's directory: what the last guest reported


@dataclass(frozen=True)
class GuestImage:
    """A built image: boot it with `kernel` + `initrd`, root on `root` (raw ext4)."""

    key: str
    dir: Path
    kernel_version: str
    kernel_source: str

    root = FileIn("dir", "root.img")
    kernel = FileIn("dir", "vmlinuz")
    initrd = FileIn("dir", "initrd.img")

    @property
    def meta(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.dir / "meta.json").read_text())
        return data

    def save_guest_facts(self, facts: dict[str, Any]) -> None:
        """What the guest kernel really offers (for doctor); best effort."""
        path = self.dir / GUEST_FACTS
        try:
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(facts, indent=1, default=str))
            os.replace(tmp, path)
        except OSError:
            pass


# What a usable image has: the files of its layout.
IMAGE_FILES = tuple(f.name for f in (GuestImage.root, GuestImage.kernel, GuestImage.initrd))


def image_key(kernel: Kernel) -> str:
    # A kernel from a path is identified by its files, not only by its version string.
    kid: Any = kernel.source
    if kernel.source.startswith("path:"):
        st = kernel.bzimage.stat()
        kid = [kernel.source, st.st_size, st.st_mtime_ns]
    return content_key(
        "image",
        RECIPE_VERSION,
        kernel.version,
        kid,
        rootfs.rootfs_key(),
        guestfiles.files_key(),
        fsbench.__version__,
        pyenv.python_deps(),
        f"{sys.version_info.major}.{sys.version_info.minor}",
    )


def cached_images(cache: Path = DEFAULT_CACHE) -> list[dict[str, Any]]:
    out = []
    for meta, data in json_files(sorted((cache / "images").glob("*/meta.json"))):
        size = sum(f.stat().st_blocks * 512 for f in meta.parent.iterdir() if f.is_file())
        facts = next((d for _, d in json_files([meta.parent / GUEST_FACTS])), None)
        out.append({**data, "dir": str(meta.parent), "disk_bytes": size, "last_guest": facts})
    return out


def ensure_image(
    kernel: str | Kernel | None = None, cache: Path = DEFAULT_CACHE, log: LogFn = quiet
) -> GuestImage:
    """The cached image for this kernel, built first if needed (as root; a few minutes the
    first time, ~30 s for another kernel, nothing when cached)."""
    cache = Path(cache)
    if os.geteuid() != 0:
        raise FsbenchError("building the VM image needs root (debootstrap, chroot)")
    pyenv.require_guest_python()
    k = kernel if isinstance(kernel, Kernel) else resolve_kernel(kernel, cache, log)
    if k.builtin:  # the default image's root with this kernel (builtin_image below)
        return builtin_image(k, cache, log)
    key = image_key(k)
    final = cache / "images" / key
    image = GuestImage(key, final, k.version, k.source)
    if damaged(final, IMAGE_FILES) is None:
        return image
    tree = rootfs.build_rootfs(cache, log)
    with locked(cache, f"image-{key}"):
        why = damaged(final, IMAGE_FILES)
        if why is None:
            return image
        if final.exists():
            log(f"image {key}: {why}; building it again")
        t0 = time.monotonic()
        tmp = cache / "images" / f"{key}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            _build(tree, k, key, tmp, log)
            meta = {
                "key": key,
                "kernel_version": k.version,
                "kernel_source": k.source,
                "suite": rootfs.SUITE,
                "packages": list(packages.guest_packages()),
                "python_deps": pyenv.python_deps(),
                "fsbench_version": fsbench.__version__,
                "recipe": RECIPE_VERSION,
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "build_seconds": round(time.monotonic() - t0, 1),
            }
            publish(tmp, final, meta)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        log(f"image {key} ready in {time.monotonic() - t0:.0f} s")
        return image


def _build(tree: Path, k: Kernel, key: str, out: Path, log: LogFn) -> None:
    """Stage the root in `out`, configure it for `k`, pack it into out/root.img."""
    stage = out / "root"
    log(f"staging the root filesystem for kernel {k.version}")
    build_step(["cp", "-a", "--reflink=auto", f"{tree}/.", str(stage)], "copy rootfs")
    guestfiles.configure(stage, k, key, log)
    shutil.copy2(k.bzimage, out / "vmlinuz")
    shutil.copy2(stage / "boot" / f"initrd.img-{k.version}", out / "initrd.img")
    used = int(proc.run(["du", "-sb", str(stage)], timeout=300).stdout.split()[0])
    size = ((used * 13 // 10 + ROOT_HEADROOM) >> 20) << 20
    log(f"making the root image ({size >> 20} MiB, sparse)")
    build_step(
        [
            "mkfs.ext4",
            "-q",
            "-F",
            "-L",
            "fsbench-root",
            "-E",
            "lazy_itable_init=0,lazy_journal_init=0",
            "-d",
            str(stage),
            str(out / "root.img"),
            f"{size >> 20}M",
        ],
        "mkfs.ext4 -d",
    )
    shutil.rmtree(stage)


def current_keys(cache: Path = DEFAULT_CACHE) -> set[str]:
    """The image key each cached Debian kernel gets with this fsbench and package list."""
    keys = set()
    for data in cached_kernels(cache):
        k = Kernel.from_dict(data)
        if k.bzimage.is_file():
            keys.add(image_key(k))
    return keys


# The guest image of a kernel with everything built in (a bisection's builds): the default
# image's root, this kernel, and an empty initrd. The kernel mounts the root itself
# (virtio-blk and ext4 built in); the guest's init loads no modules (it has none to load).
# Nothing is copied but the bzImage, so a bisection step costs no image build:
# images/builtin-<key>/ holds vmlinuz, initrd.img (empty), root.img -> the default image's.


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
