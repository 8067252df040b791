"""Shared fixtures. Integration fixtures make real sparse images and loop devices under
/var/tmp and release them (mounts first, then loop devices) even when a test fails."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fsbench.system import filesystems, fsops
from fsbench.vm import ensure_image
from fsbench.vm.images import GuestImage
from tests.helpers import VM_CACHE

# A real PostgreSQL, started once per session; where the suite's time goes (printed at
# the end, and kept by bench/suite_time.py).
pytest_plugins = ["tests.pgcluster", "tests.suitetime"]

TEST_ROOT = Path("/var/tmp/fsbench-tests")
CORE_FS = ("ext2", "ext3", "ext4", "xfs", "btrfs")


def available_fs() -> list[str]:
    kernel = filesystems.kernel_filesystems()
    return [
        name
        for name in CORE_FS
        if filesystems.availability(filesystems.get(name), kernel).available
    ]


def _release(mountpoints: list[Path], loop: str | None, image: Path | None) -> None:
    for mnt in reversed(mountpoints):
        if fsops.is_mounted(mnt):
            subprocess.run(["umount", str(mnt)], check=False)
            if fsops.is_mounted(mnt):
                subprocess.run(["umount", "-l", str(mnt)], check=False)
    if loop:
        subprocess.run(["losetup", "-d", loop], check=False, capture_output=True)
    if image and image.exists():
        image.unlink()


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A private directory under /var/tmp (a real disk filesystem, not tmpfs)."""
    path = TEST_ROOT / uuid.uuid4().hex[:12]
    path.mkdir(parents=True)
    try:
        yield path
    finally:
        # Whatever a killed fsbench left under it (a test that SIGKILLs a run and then
        # fails before the run is resumed): mounts first, then loop devices.
        _release_under(path)
        subprocess.run(["rm", "-rf", "--one-file-system", str(path)], check=False)


def _release_under(path: Path) -> None:
    top = str(path)
    for entry in sorted(fsops.mount_entries(), key=lambda e: -len(e.mountpoint)):
        if entry.mountpoint.startswith(top):
            subprocess.run(["umount", "-l", entry.mountpoint], check=False)
    out = subprocess.run(["losetup", "-J", "--list"], capture_output=True, text=True).stdout
    for dev in json.loads(out or '{"loopdevices": []}').get("loopdevices", []):
        if str(dev.get("back-file") or "").startswith(top):
            subprocess.run(["losetup", "-d", dev["name"]], check=False)


@pytest.fixture
def loopdev(workdir: Path) -> Iterator[str]:
    """A 1 GiB sparse image attached with direct I/O: big enough for xfs and btrfs."""
    if os.geteuid() != 0:
        pytest.skip("needs root for loop devices")
    image = workdir / "disk.img"
    with image.open("wb") as f:
        f.truncate(1 << 30)
    loop = subprocess.run(
        ["losetup", "--direct-io=on", "--find", "--show", str(image)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    mounts_before = {e.mountpoint for e in fsops.mount_entries()}
    try:
        yield loop
    finally:
        stray = [
            Path(e.mountpoint)
            for e in fsops.mount_entries()
            if e.source == loop and e.mountpoint not in mounts_before
        ]
        _release(stray, loop, image)


MountFactory = Callable[..., Path]


@pytest.fixture
def make_fs(loopdev: str, workdir: Path) -> Iterator[MountFactory]:
    """make_fs("ext4", mkfs=["-I", "256"], mount="noatime") -> mounted path on the loop device."""
    made: list[Path] = []

    def factory(fs_name: str, mkfs: list[str] | None = None, mount: str = "") -> Path:
        fs = filesystems.get(fs_name)
        fsops.mkfs(fs, mkfs or [], loopdev)
        mnt = workdir / f"mnt{len(made)}"
        made.append(mnt)
        fsops.mount(fs, loopdev, mnt, mount)
        return mnt

    try:
        yield factory
    finally:
        _release(made, None, None)


# -- what the suite builds once and shares --------------------------------------------------
# Each is built at most once per session (a session fixture; under pytest-xdist, the
# cache's own lock makes the second worker wait for the first and reuse its build) and
# across sessions while its inputs are unchanged (the cache's content key, the artefact
# checked before it is reused: fsbench.vm.cache.damaged). Each build is timed by name in
# the session's report (tests/suitetime.py).


@pytest.fixture(scope="session")
def guest_images() -> Callable[[str | None], GuestImage]:
    """guest_images(None | "6.1" | "6.12") -> the cached guest image of that kernel."""
    from tests.suitetime import build  # a plugin of this conftest's (pytest_plugins)

    made: dict[str | None, GuestImage] = {}

    def image(kernel: str | None = None) -> GuestImage:
        if kernel not in made:
            with build(f"guest image, kernel {kernel or 'default'}") as log:
                made[kernel] = ensure_image(kernel, VM_CACHE, log)
        return made[kernel]

    return image


@pytest.fixture(scope="session")
def guest_image(guest_images: Callable[[str | None], GuestImage]) -> GuestImage:
    """The default kernel's guest image (debootstrap + kernel + initrd the first time)."""
    return guest_images(None)
