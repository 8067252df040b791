"""LoopImage: the default target, a sparse image file attached as a loop device.

The image is `WORKDIR/fsbench-<pid>.img` (`fsbench-<pid>-<n>.img` if that name is
taken), so that a crashed run's leftovers can be recognised and released by
`targets.stale.release_stale` once process <pid> is gone. Mount points of a run
belong in `WORKDIR/mnt-<pid>*` for the same reason (see `LoopImage.mount_dir`).

The loop device uses direct I/O (`losetup --direct-io=on`) so that the host page
cache does not cache the image a second time; a backing filesystem that refuses
O_DIRECT (ramfs, some network filesystems) gets a buffered loop device and
`describe()["direct_io"]` says so.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

from fsbench.execute.targets import devinfo
from fsbench.execute.targets.base import Target, discard
from fsbench.system import numbers, proc
from fsbench.system.errors import FsbenchError, TrialFailed

IMAGE_RE = re.compile(r"^fsbench-(\d+)(?:-\d+)?\.img$")
MOUNT_DIR_RE = re.compile(r"^mnt-(\d+)(?!\d)")


def image_name(pid: int, n: int = 0) -> str:
    return f"fsbench-{pid}.img" if n == 0 else f"fsbench-{pid}-{n}.img"


def _first_line(text: str, default: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return default


def attached_loops(image: Path) -> list[str]:
    """Loop devices (/dev/loopN) whose back-file is `image` (also once it is deleted)."""
    wanted = str(image)
    return [
        dev
        for dev, backing in devinfo.attached_loops()
        if backing.removesuffix(" (deleted)") == wanted
    ]


# How long a close waits for a deferred detach (the device open elsewhere) to happen.
DETACH_WAIT_SECONDS = 5.0


def detach_loop(device: str) -> str | None:
    """losetup -d; None on success or if already detached, else the error line. On a
    device still open (mounted, or probed by another program's blkid this moment), the
    kernel detaches it when the last user closes it: wait a little for that, so that a
    closed target has let its device go."""
    res = proc.run(["losetup", "-d", device], timeout=60)
    name = Path(device).name
    if res.ok:
        deadline = time.monotonic() + DETACH_WAIT_SECONDS
        while devinfo.loop_backing_file(name) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        return None
    if devinfo.loop_backing_file(name) is None:
        return None  # not attached (any more)
    return _first_line(res.output, f"losetup -d {device}: exit {res.returncode}")


class LoopImage(Target):
    kind = "loop"

    def __init__(self, workdir: Path, size_bytes: int, owner_pid: int | None = None) -> None:
        self.workdir = Path(workdir)
        self._size = int(size_bytes)
        self.owner_pid = os.getpid() if owner_pid is None else int(owner_pid)
        self._image: Path | None = None
        self._device: str | None = None
        self._direct_io: bool | None = None
        self._discard: str = "not tried"
        self._dio_error: str = ""

    # -- Target API -----------------------------------------------------------------

    @property
    def device(self) -> str:
        if self._device is None:
            raise FsbenchError("loop image target is not open")
        return self._device

    @property
    def size_bytes(self) -> int:
        return self._size

    @property
    def image(self) -> Path | None:
        """The image file while open, else None."""
        return self._image

    @property
    def diskstats_name(self) -> str:
        """Kernel name of the loop device ("loop0"): /sys/block/<name>/stat has its counters."""
        return Path(self.device).name

    @property
    def direct_io(self) -> bool | None:
        return self._direct_io

    def twin(self) -> LoopImage:
        """Another sparse image of the same size beside this one (its own loop device)."""
        return LoopImage(self.workdir, self._size, self.owner_pid)

    def mount_dir(self, tag: str = "") -> Path:
        """Where this run should mount: WORKDIR/mnt-<pid>[-tag] (not created here)."""
        suffix = f"-{tag}" if tag else ""
        return self.workdir / f"mnt-{self.owner_pid}{suffix}"

    def open(self) -> None:
        if self._device is not None:
            return
        if self._size <= 0 or self._size % 512:
            raise FsbenchError(
                f"image size {self._size} is not a positive multiple of 512 bytes: fix --image-size"
            )
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    def _open(self) -> None:
        try:
            self.workdir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise FsbenchError(
                f"cannot create workdir {self.workdir}: {exc.strerror}; choose another --workdir"
            ) from None
        self._check_space()
        self._image = self._create_image()
        self._device = self._attach(self._image)
        self._direct_io = devinfo.loop_direct_io(Path(self._device).name)

    def _check_space(self) -> None:
        st = os.statvfs(self.workdir)
        if st.f_blocks == 0:
            return  # ramfs and friends report no capacity at all: nothing to check against
        have = st.f_bavail * st.f_frsize
        if have < self._size:
            raise FsbenchError(
                f"not enough free space in {self.workdir}: need {numbers.size(self._size)} "
                f"for the image, have {numbers.size(have)}; "
                "choose another --workdir or a smaller --image-size"
            )

    def _create_image(self) -> Path:
        for n in range(100):
            path = self.workdir / image_name(self.owner_pid, n)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            except FileExistsError:
                continue
            except OSError as exc:
                raise FsbenchError(f"cannot create image {path}: {exc.strerror}") from None
            self._image = path  # from here on close() deletes it
            try:
                os.ftruncate(fd, self._size)  # sparse: no block is allocated
            except OSError as exc:
                raise FsbenchError(
                    f"cannot size image {path} to {numbers.size(self._size)}: {exc.strerror}; "
                    "choose another --workdir or a smaller --image-size"
                ) from None
            finally:
                os.close(fd)
            return path
        raise FsbenchError(
            f"too many fsbench-{self.owner_pid}*.img in {self.workdir}: run `fsbench doctor` "
            "to release stale images"
        )

    def _attach(self, image: Path) -> str:
        res = proc.run(["losetup", "--direct-io=on", "--find", "--show", str(image)], timeout=60)
        if res.ok and res.stdout.strip():
            return res.stdout.strip().splitlines()[-1]
        # The backing filesystem may refuse O_DIRECT (EINVAL): attach buffered instead.
        self._dio_error = _first_line(res.output, f"exit {res.returncode}")
        for leftover in attached_loops(image):
            detach_loop(leftover)
        plain = proc.run(["losetup", "--find", "--show", str(image)], timeout=60)
        if plain.ok and plain.stdout.strip():
            return plain.stdout.strip().splitlines()[-1]
        reason = _first_line(plain.output, f"exit {plain.returncode}")
        raise FsbenchError(f"cannot attach {image} to a loop device: {reason}")

    def close(self) -> None:
        device, image = self._device, self._image
        if device is not None:
            name = Path(device).name
            backing = devinfo.loop_backing_file(name)
            # Only touch the device if it still serves our image (never someone else's).
            if (
                image is not None
                and backing is not None
                and backing.removesuffix(" (deleted)") == str(image)
            ):
                devnums = {devinfo.devnum_of_kname(name)}
                devnums.update(devinfo.devnum_of_kname(p) for p in devinfo.partitions(name))
                for entry in devinfo.mounts_under("/"):
                    if entry.devnum in devnums or entry.source == device:
                        devinfo.unmount(entry.mountpoint)
                detach_loop(device)
            self._device = None
        if image is not None:
            try:
                image.unlink()
            except FileNotFoundError:
                pass
            self._image = None

    def reset(self) -> str:
        """Punch holes over the whole image (blkdiscard), so every trial starts from the
        same sparse state; a backing filesystem without hole punching is recorded. The device
        is discarded only while it still serves this image: one that was detached under us
        (and given to someone else's image since) is never touched."""
        backing = devinfo.loop_backing_file(Path(self.device).name)
        if self._image is None or (backing or "").removesuffix(" (deleted)") != str(self._image):
            raise TrialFailed(
                f"{self.device} no longer serves {self._image} (it serves "
                f"{backing or 'nothing'}): it was detached by someone else; not touched"
            )
        self._discard = discard(self.device, timeout=600)
        return self._discard

    def describe(self) -> dict[str, Any]:
        backing = devinfo.disk_info_of_path(self.workdir)
        return {
            "kind": self.kind,
            "image": str(self._image) if self._image is not None else None,
            "size_bytes": self._size,
            "loop_device": self._device,
            "diskstats_name": Path(self._device).name if self._device else None,
            "direct_io": bool(self._direct_io),
            "direct_io_error": self._dio_error or None,
            "discard": self._discard,
            "owner_pid": self.owner_pid,
            "workdir": str(self.workdir),
            "backing_fs": devinfo.fs_type_of(self.workdir),
            "backing_device": backing.device if backing else None,
            "backing_disk": backing.disk if backing else None,
            "backing_model": backing.model if backing else None,
            "rotational": backing.rotational if backing else None,
        }
