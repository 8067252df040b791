"""The boot workload's root disks: the guest image's root copied onto each filesystem
config, made once per (guest image, config) and cached under <cache>/boot-roots.

Made on the host for the filesystems its kernel writes (a copy of the cached image's
root, mounted read-only), in a guest for the others (jfs, reiserfs, ...: the guest copies
its own root onto its scratch disk). bootroot.py is what both copy and write.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from fsbench.execute.targets.loop import detach_loop
from fsbench.plan.model import FsConfig
from fsbench.system import filesystems, fsops, mounts, proc
from fsbench.system.errors import FsbenchError, TrialFailed, Unsupported
from fsbench.vm import bootroot
from fsbench.vm.cache import LogFn, content_key, json_files, locked, quiet
from fsbench.vm.images import GuestImage
from fsbench.vm.job import VmSpec, run_in_vm
from fsbench.vm.protocol import VmJob

# Bump when the way a boot root is made changes: cached roots are then remade.
BOOT_RECIPE = "2"  # 2: copied with tar (no ACLs/xattrs anywhere)
GUEST_ROOT_TIMEOUT = 1800.0  # making a root inside a guest: boot + mkfs + copying ~1 GB


@dataclass(frozen=True)
class BootRoot:
    path: Path
    key: str
    config: str  # the filesystem config's label
    made_in: str  # host | guest
    mkfs: list[str]
    seconds: float  # to make it

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "key": self.key,
            "config": self.config,
            "made_in": self.made_in,
            "mkfs": self.mkfs,
            "seconds": round(self.seconds, 1),
        }

    @classmethod
    def load(cls, meta: Path) -> BootRoot:
        data = json.loads(meta.read_text())
        return cls(
            Path(data["path"]),
            data["key"],
            data.get("config", ""),
            data["made_in"],
            data["mkfs"],
            data["seconds"],
        )


def root_key(img: GuestImage, config: FsConfig) -> str:
    return content_key(
        img.key,
        config.type,
        list(config.mkfs),
        config.mount,
        BOOT_RECIPE,
        bootroot.MARKER_SCRIPT_TEXT,
        bootroot.MARKER_UNIT_TEXT,
        bootroot.fstab(config.type, config.mount),
    )


def cached_boot_roots(cache: Path) -> list[dict[str, Any]]:
    """The boot roots in the cache whose image file is there (for doctor)."""
    metas = json_files(sorted((cache / "boot-roots").glob("*.json")))
    return [data for _, data in metas if Path(data.get("path", "")).is_file()]


def host_can_make(fs_type: str) -> bool:
    """The host kernel mounts it and its mkfs is installed."""
    fs = filesystems.get(fs_type)
    avail = filesystems.availability(fs, filesystems.kernel_filesystems())
    return avail.available and proc.which(fs.mkfs[0]) is not None


# root key -> why it could not be made: asked once per run, not again at every rep.
_refused: dict[str, Unsupported | TrialFailed] = {}


def ensure_boot_root(
    img: GuestImage, config: FsConfig, spec: VmSpec, log: LogFn = quiet
) -> BootRoot:
    key = root_key(img, config)
    if key in _refused:
        raise _refused[key]
    roots = spec.cache_dir / "boot-roots"
    path, meta = roots / f"{key}.img", roots / f"{key}.json"
    if path.is_file() and meta.is_file():
        return BootRoot.load(meta)
    roots.mkdir(parents=True, exist_ok=True)
    with locked(spec.cache_dir, f"bootroot-{key}"):
        if path.is_file() and meta.is_file():
            return BootRoot.load(meta)
        t0 = time.monotonic()
        try:
            if host_can_make(config.type):
                log(f"making the {config.display} root on the host")
                made_in, mkfs = "host", _make_on_host(img, config, spec.workdir, path)
            else:
                log(f"making the {config.display} root in a guest (not in the host's kernel)")
                made_in, mkfs = "guest", _make_in_guest(img, config, spec, path, log)
        except (Unsupported, TrialFailed) as exc:
            _refused[key] = exc
            raise
        root = BootRoot(path, key, config.display, made_in, mkfs, time.monotonic() - t0)
        meta.write_text(json.dumps(root.as_dict(), indent=1))
        return root


def _make_on_host(img: GuestImage, config: FsConfig, workdir: Path, dest: Path) -> list[str]:
    """mkfs on a sparse image the size of the guest's root, copy the cached root into it
    (mounted read-only, no journal replay), add the boot files; released on every path.
    Named like the loop target's images and mount directories, so a killed run's leftovers
    are found and released by `fsbench doctor` / the next run."""
    fs = filesystems.get(config.type)
    workdir.mkdir(parents=True, exist_ok=True)
    pid = os.getpid()
    tmp = workdir / f"fsbench-{pid}-{900 + int(time.time()) % 100}.img"
    src_mnt, dst_mnt = workdir / f"mnt-{pid}-bootroot-src", workdir / f"mnt-{pid}-bootroot-dst"
    with open(tmp, "wb") as fh:
        fh.truncate(img.root.stat().st_size)
    try:
        made = _fill_on_host(img, config, fs, tmp, src_mnt, dst_mnt)
        shutil.move(tmp, dest)  # a rename: the same filesystem by default
    finally:
        tmp.unlink(missing_ok=True)
    return made.argv


def _fill_on_host(
    img: GuestImage,
    config: FsConfig,
    fs: filesystems.FsType,
    tmp: Path,
    src_mnt: Path,
    dst_mnt: Path,
) -> fsops.Made:
    """mkfs on `tmp` and copy the root into it; everything unmounted and detached after."""
    with contextlib.ExitStack() as stack:
        res = proc.run(["losetup", "--find", "--show", str(tmp)], timeout=60)
        if not res.ok or not res.stdout.strip():
            raise FsbenchError(f"losetup {tmp}: {res.output.strip()}")
        device = res.stdout.strip().splitlines()[-1]
        stack.callback(detach_loop, device)
        made = fsops.mkfs(fs, list(config.mkfs), device)
        for mnt in (src_mnt, dst_mnt):
            mnt.mkdir(exist_ok=True)
            stack.callback(_rmdir_if_unmounted, mnt)
        # loop: autoclear, so the source's loop device goes with its umount.
        src = proc.run(
            ["mount", "-t", "ext4", "-o", "ro,noload,loop", str(img.root), str(src_mnt)],
            timeout=120,
        )
        if not src.ok:
            raise FsbenchError(f"cannot mount the guest image {img.root}: {src.output.strip()}")
        stack.callback(mounts.umount, src_mnt)
        fsops.mount(fs, device, dst_mnt, config.mount)
        stack.callback(mounts.umount, dst_mnt)
        bootroot.copy_root(src_mnt, dst_mnt)
        bootroot.install_boot_files(dst_mnt, fs.mount_type or fs.name, config.mount)
    return made


def _rmdir_if_unmounted(path: Path) -> None:
    # Never a recursive delete here: a mount that did not go would take its files along.
    if not os.path.ismount(path):
        with contextlib.suppress(OSError):
            path.rmdir()


def _make_in_guest(
    img: GuestImage, config: FsConfig, spec: VmSpec, dest: Path, log: LogFn
) -> list[str]:
    tmp = dest.with_name(f"{dest.name}.{os.getpid()}.tmp")
    try:
        result = run_in_vm(
            VmJob([], "tiny", make_root=config.model_dump(mode="json")),
            replace(
                spec,
                scratch_path=tmp,
                scratch_bytes=img.root.stat().st_size,
                init="script",
                throttle={},
            ),
            # Copying the root under TCG takes minutes; the default limit is for cells.
            timeout=GUEST_ROOT_TIMEOUT,
            log=log,
        )
        if not result.ok:
            said = re.search(r"fsbench\.errors\.Unsupported: (.*)", result.error)
            if said:
                raise Unsupported(f"{config.display} root: {said.group(1)}", detail=result.error)
            first = result.error.splitlines()[0] if result.error else "no DONE"
            guest_said = re.findall(r"fsbench\.errors\.\w+: (.*)", result.error)
            raise TrialFailed(
                f"making the {config.display} root in a guest failed: "
                f"{guest_said[-1] if guest_said else first}",
                result.error,
            )
        mkfs = next((r.get("mkfs") for r in result.records if "mkfs" in r), None) or []
        os.replace(tmp, dest)
        return list(mkfs)
    finally:
        tmp.unlink(missing_ok=True)
