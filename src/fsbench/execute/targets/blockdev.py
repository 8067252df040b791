"""BlockDevice: a real disk or partition, only after explicit consent and safety checks.

Probing (`probe_device`) only reads: sysfs, /proc, `lsblk`, `blkid -p`, and an
O_RDONLY|O_EXCL open that is closed at once. The decision (`refusal`) is a pure
function over the probed `DeviceFacts`, so every rule is unit-tested without disks.
Nothing is written to the device before `refusal()` has returned None.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fsbench.execute.targets import devinfo
from fsbench.execute.targets.base import Target, discard
from fsbench.system import proc
from fsbench.system.errors import FsbenchError, UnsafeDeviceError
from fsbench.system.filesystems import FSBENCH_LABEL

LSBLK_COLUMNS = "PATH,TYPE,MOUNTPOINTS,FSTYPE,PTTYPE,LABEL,MAJ:MIN"
SWAP_MARK = "[SWAP]"


@dataclass(frozen=True)
class BlockNode:
    """The device itself or one of its partitions/holders, as lsblk and sysfs list them."""

    path: str
    type: str  # disk, part, loop, lvm, crypt, raid1, dm, md...
    devnum: str  # "MAJ:MIN"
    mountpoints: tuple[str, ...] = ()
    fstype: str = ""
    pttype: str = ""
    label: str = ""


@dataclass(frozen=True)
class DeviceFacts:
    """Everything the safety decision needs, probed beforehand (all read-only)."""

    given: str  # as the user wrote it
    real: str  # os.path.realpath(given)
    destroy_data: bool
    exists: bool = True
    is_block: bool = True
    devnum: str = ""
    size_bytes: int | None = None  # from sysfs; None if unknown
    # The device first, then every partition and holder below it (dm, md, ...).
    nodes: tuple[BlockNode, ...] = ()
    lsblk_error: str = ""
    signature: Mapping[str, str] = field(default_factory=dict)  # blkid -p -o export
    blkid_error: str = ""
    blkid_ambivalent: bool = False
    root_devnums: frozenset[str] = frozenset()  # MAJ:MIN of what holds /
    mounts: tuple[devinfo.MountEntry, ...] = ()  # all of /proc/self/mountinfo
    swaps: frozenset[str] = frozenset()  # real paths from /proc/swaps
    busy: bool = False  # O_EXCL open failed with EBUSY
    open_error: str = ""  # any other failure of that open


def _name(f: DeviceFacts) -> str:
    return f.given if f.given == f.real else f"{f.given} (-> {f.real})"


def refusal(f: DeviceFacts) -> str | None:
    """The reason to refuse this device (one line: why, and what to do), or None if safe."""
    name = _name(f)
    if not f.destroy_data:
        return f"--device needs --destroy-data: every byte on {name} is lost"
    if not f.exists:
        return f"--device {name}: no such device; check the path (lsblk lists block devices)"
    if not f.is_block:
        return (
            f"--device {name} is not a block device; give a disk or partition such as "
            "/dev/sdX, or drop --device to use a loop image"
        )
    if f.size_bytes == 0:
        return (
            f"{name} is empty (0 bytes): an unattached loop device or a drive without "
            "medium; choose another device"
        )
    others = f.nodes[1:]
    devnums = {n.devnum for n in f.nodes if n.devnum} | ({f.devnum} if f.devnum else set())
    paths = {n.path for n in f.nodes} | {f.real}
    for node in f.nodes or (BlockNode(f.real, "", f.devnum),):
        if node.devnum and node.devnum in f.root_devnums:
            via = "" if node.path == f.real else f" via {node.path}"
            return (
                f"{name} holds the root filesystem /{via}; choose a spare disk or partition, "
                "or drop --device to use a loop image"
            )
    for node in f.nodes:
        if SWAP_MARK in node.mountpoints or node.path in f.swaps:
            return (
                f"{name} is used as swap ({node.path}); swapoff it first or choose another device"
            )
    if f.real in f.swaps:
        return f"{name} is used as swap; swapoff it first or choose another device"
    for node in f.nodes:
        mps = [m for m in node.mountpoints if m and m != SWAP_MARK]
        if mps:
            return (
                f"{name} is mounted ({node.path} on {mps[0]}); unmount it first "
                "or choose another device"
            )
    for entry in f.mounts:
        if entry.devnum in devnums or entry.source in paths:
            return (
                f"{name} is mounted ({entry.source} on {entry.mountpoint}); unmount it first "
                "or choose another device"
            )
    if f.lsblk_error:
        return (
            f"cannot list {name} with lsblk ({f.lsblk_error}); "
            "fsbench only uses devices it can inspect"
        )
    parts = [n.path for n in others if n.type == "part"]
    if parts:
        return (
            f"{name} is a whole disk with partitions ({', '.join(parts)}); give one unused "
            f"partition, or wipe the table yourself (wipefs -a {f.real}) if the whole disk "
            "is expendable"
        )
    held = [n for n in others if n.type != "part"]
    if held:
        return (
            f"{name} is in use by {held[0].path} ({held[0].type or 'holder'}); stop it "
            "(dmsetup, mdadm, lvchange, cryptsetup) or choose another device"
        )
    if f.blkid_error:
        return (
            f"cannot probe {name} for signatures ({f.blkid_error}); "
            "fsbench only uses devices it can inspect"
        )
    wipe = f"wipe it yourself (wipefs -a {f.real}) if its data is expendable"
    if f.blkid_ambivalent:
        return f"{name} carries several conflicting signatures; {wipe}"
    me = f.nodes[0] if f.nodes else BlockNode(f.real, "", f.devnum)
    pttype = f.signature.get("PTTYPE") or me.pttype
    if pttype:
        return f"{name} carries a {pttype} partition table; {wipe}"
    sig_type = f.signature.get("TYPE") or me.fstype
    usage = f.signature.get("USAGE", "filesystem" if me.fstype else "")
    label = f.signature.get("LABEL") or me.label
    if sig_type or usage:
        if usage == "filesystem" and label == FSBENCH_LABEL:
            pass  # made by fsbench itself: ours to overwrite
        else:
            what = sig_type or usage
            lab = f" labelled {label!r}" if label else ""
            return (
                f"{name} carries a signature ({what}{lab}); fsbench only overwrites blank "
                f"devices or filesystems labelled {FSBENCH_LABEL!r}; {wipe}"
            )
    if f.busy:
        return (
            f"{name} is in use (the kernel refuses exclusive access: EBUSY); stop whatever "
            "holds it (mount, swap, dm, md, another program) or choose another device"
        )
    if f.open_error:
        return f"cannot open {name} ({f.open_error}); run as root or choose another device"
    return None


# -- probing (read-only) -------------------------------------------------------------


def _flatten(devices: list[Any]) -> Iterator[dict[str, Any]]:
    for dev in devices:
        if isinstance(dev, dict):
            yield dev
            yield from _flatten(dev.get("children") or [])


def _lsblk_nodes(real: str) -> tuple[list[BlockNode], str]:
    res = proc.run(["lsblk", "-J", "-b", "-o", LSBLK_COLUMNS, real], timeout=30)
    if res.returncode == 32:
        return [], "lsblk does not list it"
    if not res.ok:
        err = res.stderr.strip()
        return [], err.splitlines()[0] if err else f"lsblk exit {res.returncode}"
    try:
        data = json.loads(res.stdout or "{}")
    except json.JSONDecodeError as exc:
        return [], f"unreadable lsblk output: {exc}"
    nodes = []
    for dev in _flatten(data.get("blockdevices") or []):
        mps = tuple(m for m in (dev.get("mountpoints") or []) if m)
        nodes.append(
            BlockNode(
                path=str(dev.get("path") or ""),
                type=str(dev.get("type") or ""),
                devnum=str(dev.get("maj:min") or ""),
                mountpoints=mps,
                fstype=str(dev.get("fstype") or ""),
                pttype=str(dev.get("pttype") or ""),
                label=str(dev.get("label") or ""),
            )
        )
    return nodes, ""


def _sysfs_nodes(kname: str, depth: int = 0) -> Iterator[BlockNode]:
    """Partitions and holders below `kname`, recursively, from sysfs (lsblk may miss some)."""
    if depth > 8:
        return
    for part in devinfo.partitions(kname):
        yield BlockNode(f"/dev/{part}", "part", devinfo.devnum_of_kname(part) or "")
        yield from _sysfs_nodes(part, depth + 1)
    for holder in devinfo.holders(kname):
        kind = "dm" if holder.startswith("dm-") else "md" if holder.startswith("md") else ""
        yield BlockNode(f"/dev/{holder}", kind or "holder", devinfo.devnum_of_kname(holder) or "")
        yield from _sysfs_nodes(holder, depth + 1)


def _blkid(real: str) -> tuple[dict[str, str], str, bool]:
    res = proc.run(["blkid", "-p", "-o", "export", real], timeout=60)
    sig: dict[str, str] = {}
    for line in res.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            sig[key.strip()] = value.strip()
    err = res.stderr.strip()
    if res.returncode == 0:
        return sig, "", False
    if res.returncode == 2 and not err:
        return {}, "", False  # nothing found: blank
    if res.returncode == 8:
        return sig, "", True
    return sig, (err.splitlines()[0] if err else f"blkid exit {res.returncode}"), False


def _root_devnums(mounts: list[devinfo.MountEntry]) -> frozenset[str]:
    found = {devinfo.devnum_str(os.stat("/").st_dev)}
    for entry in mounts:
        if entry.mountpoint == "/":
            found.add(entry.devnum)
            if entry.source.startswith("/"):
                try:
                    st = os.stat(entry.source)
                except OSError:
                    continue
                if stat.S_ISBLK(st.st_mode):
                    found.add(devinfo.devnum_str(st.st_rdev))
    return frozenset(found)


def _swaps() -> frozenset[str]:
    try:
        lines = Path("/proc/swaps").read_text().splitlines()[1:]
    except OSError:
        return frozenset()
    return frozenset(
        os.path.realpath(devinfo.unescape(ln.split()[0])) for ln in lines if ln.split()
    )


def probe_device(path: str, destroy_data: bool) -> DeviceFacts:
    """Gather the facts `refusal` needs. Reads only; writes nothing anywhere."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        return DeviceFacts(path, real, destroy_data, exists=False, is_block=False)
    if not stat.S_ISBLK(st.st_mode):
        return DeviceFacts(path, real, destroy_data, is_block=False)
    devnum = devinfo.devnum_str(st.st_rdev)
    nodes, lsblk_error = _lsblk_nodes(real)
    # The device itself first, however lsblk orders or names it.
    me = [n for n in nodes if n.devnum == devnum]
    if me:
        nodes = [replace(me[0], path=real)] + [n for n in nodes if n.devnum != devnum]
    else:
        nodes = [BlockNode(real, "", devnum)] + nodes
    kname = devinfo.kname_of_devnum(devnum)
    size: int | None = None
    if kname is not None:
        sectors = devinfo.SYS_BLOCK / kname / "size"
        try:
            size = int(sectors.read_text().strip()) * 512
        except (OSError, ValueError):
            size = None
        seen = {n.devnum for n in nodes}
        for extra in _sysfs_nodes(kname):
            if extra.devnum not in seen:
                nodes.append(extra)
                seen.add(extra.devnum)
    sig, blkid_error, ambivalent = _blkid(real)
    busy, open_error = False, ""
    try:
        fd = os.open(real, os.O_RDONLY | os.O_EXCL | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.EBUSY:
            busy = True
        else:
            open_error = exc.strerror or str(exc)
    else:
        os.close(fd)
    mounts = devinfo.read_mountinfo()
    return DeviceFacts(
        given=path,
        real=real,
        destroy_data=destroy_data,
        devnum=devnum,
        size_bytes=size,
        nodes=tuple(nodes),
        lsblk_error=lsblk_error,
        signature=sig,
        blkid_error=blkid_error,
        blkid_ambivalent=ambivalent,
        root_devnums=_root_devnums(mounts),
        mounts=tuple(mounts),
        swaps=_swaps(),
        busy=busy,
        open_error=open_error,
    )


def check_device(path: str, destroy_data: bool) -> DeviceFacts:
    """Probe and decide: raises UnsafeDeviceError with the reason, else returns the facts."""
    if not destroy_data:  # no need to even look
        reason = refusal(DeviceFacts(path, os.path.realpath(path), destroy_data))
    else:
        facts = probe_device(path, destroy_data)
        reason = refusal(facts)
        if reason is None:
            return facts
    raise UnsafeDeviceError(reason or "refused")


class BlockDevice(Target):
    kind = "device"

    def __init__(self, path: str, destroy_data: bool, twin_path: str | None = None) -> None:
        self.path = str(path)
        self.destroy_data = bool(destroy_data)
        # A second device like this one, given by whoever knows there is one (the VM guest's
        # second scratch disk); it passes the same safety checks when opened.
        self.twin_path = twin_path
        self._real: str | None = None
        self._size: int | None = None
        self._discard = "not tried"

    @property
    def device(self) -> str:
        if self._real is None:
            raise FsbenchError(f"device target {self.path} is not open")
        return self._real

    @property
    def size_bytes(self) -> int:
        if self._size is None:
            raise FsbenchError(f"device target {self.path} is not open")
        return self._size

    @property
    def diskstats_name(self) -> str:
        name = devinfo.kname_of_device(self.device)
        return name if name is not None else Path(self.device).name

    def open(self) -> None:
        if self._real is not None:
            return
        facts = check_device(self.path, self.destroy_data)
        self._size = self._read_size(facts.real)
        self._real = facts.real

    @staticmethod
    def _read_size(real: str) -> int:
        res = proc.run(["blockdev", "--getsize64", real], timeout=30)
        if res.ok and res.stdout.strip().isdigit():
            return int(res.stdout.strip())
        kname = devinfo.kname_of_device(real)
        sectors = (devinfo.SYS_BLOCK / str(kname) / "size") if kname else None
        try:
            if sectors is not None:
                return int(sectors.read_text().strip()) * 512
        except (OSError, ValueError):
            pass
        raise FsbenchError(f"cannot read the size of {real}: {res.output or 'no size in sysfs'}")

    def twin(self) -> BlockDevice | None:
        return BlockDevice(self.twin_path, self.destroy_data) if self.twin_path else None

    def close(self) -> None:
        self._real = None  # nothing attached, nothing to release

    def reset(self) -> str:
        """Discard the whole device if it supports it; otherwise leave it as it is."""
        self._discard = discard(self.device, timeout=3600)
        return self._discard

    def describe(self) -> dict[str, Any]:
        real = self._real or os.path.realpath(self.path)
        kname = devinfo.kname_of_device(real)
        info = devinfo.disk_info_of_device(kname) if kname else None
        return {
            "kind": self.kind,
            "path": real,
            "given": self.path,
            "size_bytes": self._size,
            "model": info.model if info else None,
            "rotational": info.rotational if info else None,
            "disk": info.disk if info else None,
            "diskstats_name": kname,
            "discard": self._discard,
        }
