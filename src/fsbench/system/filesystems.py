"""The filesystem catalogue: data, not code paths.

Each record says how to make, check and describe one filesystem type. Code that
formats or mounts reads these records (see fsops.py); nothing branches on a name. The
records are known through a registry like every extension (`catalogue()`, `get`): the
shipped ones by name in `BUILTIN`, a package's as entry points of `fsbench.filesystems.v1`.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field
from pathlib import Path

from fsbench.system import proc
from fsbench.system.plugins import Registry


@dataclass(frozen=True)
class FsType:
    name: str
    summary: str
    package: str  # Debian package that ships the tools
    mkfs: tuple[str, ...] = ()  # argv prefix; the device is appended last
    force: tuple[str, ...] = ()  # overwrite an existing signature without asking
    label_flag: str = "-L"
    label_max: int = 12
    # Extended options fsbench adds unless the config sets the same key (ext4 lazy init:
    # the ext4lazyinit thread would otherwise write ~128 MiB behind the workload's back).
    extended_flag: str = ""
    extended_defaults: tuple[tuple[str, str], ...] = ()
    fsck_readonly: tuple[str, ...] = ()
    # The fsck's own fragmentation figure, where its output has one (e2fsck's
    # "N/M files (X% non-contiguous)"); else a separate read-only tool that reports it.
    fsck_frag_regex: str = ""
    frag_report: tuple[str, ...] = ()  # argv prefix; device appended
    frag_report_regex: str = ""
    geometry: tuple[str, ...] = ()  # argv prefix; device appended
    geometry_format: str = ""  # colon | xfs | btrfs
    # Free-space fragmentation, where the tools report it (aging/measure.py parses it).
    freefrag: tuple[str, ...] = ()  # argv prefix; device appended
    freefrag_format: str = ""  # e2freefrag | xfs_db
    version: tuple[str, ...] = ()
    # The name in /proc/filesystems, the kernel module, the `mount -t` type: the type's own
    # name unless said otherwise.
    kernel_name: str = ""
    module: str = ""
    mount_type: str = ""
    pseudo: bool = False  # `raw`: the bare device, no filesystem

    def __post_init__(self) -> None:
        if not self.pseudo:
            for name in ("kernel_name", "module", "mount_type"):
                if not getattr(self, name):
                    object.__setattr__(self, name, self.name)

    @property
    def tools(self) -> tuple[str, ...]:
        return tuple(t for t in (self.mkfs[:1] + self.fsck_readonly[:1] + self.geometry[:1]) if t)


_EXT_LAZY = (("lazy_itable_init", "0"), ("lazy_journal_init", "0"))


def _ext(name: str, summary: str) -> FsType:
    return FsType(
        name=name,
        summary=summary,
        package="e2fsprogs",
        mkfs=(f"mkfs.{name}", "-q"),
        force=("-F",),
        label_max=16,
        extended_flag="-E",
        extended_defaults=_EXT_LAZY,
        fsck_readonly=("e2fsck", "-fn"),
        fsck_frag_regex=r"\(([\d.]+)% non-contiguous\)",
        geometry=("dumpe2fs", "-h"),
        geometry_format="colon",
        freefrag=("e2freefrag",),
        freefrag_format="e2freefrag",
        version=("mke2fs", "-V"),
        module="ext4" if name != "ext2" else "ext2",
    )


EXT2 = _ext("ext2", "second extended filesystem (no journal)")
EXT3 = _ext("ext3", "ext2 + journal (mounted by the ext4 driver on modern kernels)")
EXT4 = _ext("ext4", "extents, delayed allocation, flex_bg, metadata checksums")

XFS = FsType(
    name="xfs",
    summary="allocation groups, B+tree extents, delayed allocation",
    package="xfsprogs",
    mkfs=("mkfs.xfs", "-q"),
    force=("-f",),
    label_max=12,
    fsck_readonly=("xfs_repair", "-n"),
    frag_report=("xfs_db", "-r", "-c", "frag"),
    frag_report_regex=r"fragmentation factor ([\d.]+)%",
    geometry=("xfs_info",),
    geometry_format="xfs",
    freefrag=("xfs_db", "-r", "-c", "freesp -s"),
    freefrag_format="xfs_db",
    version=("mkfs.xfs", "-V"),
)

BTRFS = FsType(
    name="btrfs",
    summary="copy-on-write, checksums, snapshots, multiple devices",
    package="btrfs-progs",
    mkfs=("mkfs.btrfs", "-q"),
    force=("-f",),
    label_max=255,
    fsck_readonly=("btrfs", "check", "--readonly"),
    geometry=("btrfs", "inspect-internal", "dump-super"),
    geometry_format="btrfs",
    version=("mkfs.btrfs", "--version"),
)

JFS = FsType(
    name="jfs",
    summary="IBM's journaled filesystem",
    package="jfsutils",
    mkfs=("mkfs.jfs", "-q"),
    label_max=16,
    fsck_readonly=("fsck.jfs", "-n"),
    version=("mkfs.jfs", "-V"),
)

REISERFS = FsType(
    name="reiserfs",
    summary="balanced trees, tail packing (removed from Linux 6.13)",
    package="reiserfsprogs",
    mkfs=("mkfs.reiserfs", "-q"),
    force=("-f", "-f"),
    label_flag="-l",
    label_max=16,
    fsck_readonly=("reiserfsck", "--check", "-y"),
    version=("mkfs.reiserfs", "-V"),
)

F2FS = FsType(
    name="f2fs",
    summary="log-structured, for flash",
    package="f2fs-tools",
    mkfs=("mkfs.f2fs", "-q"),
    force=("-f",),
    label_flag="-l",
    label_max=512,
    fsck_readonly=("fsck.f2fs", "--dry-run"),
    version=("mkfs.f2fs", "-V"),
)

NILFS2 = FsType(
    name="nilfs2",
    summary="log-structured with continuous snapshots",
    package="nilfs-tools",
    mkfs=("mkfs.nilfs2", "-q"),
    force=("-f",),
    label_max=80,
    version=("mkfs.nilfs2", "-V"),
)

RAW = FsType(
    name="raw",
    summary="the bare device: the physical limit every filesystem is shown against",
    package="util-linux",
    pseudo=True,
)

# The catalogue: every filesystem known, as records registered like any extension (a
# package adds one as an entry point of `fsbench.filesystems.v1`, naming its FsType).
CONTRACT = 1
BUILTIN: tuple[str, ...] = (
    "fsbench.system.filesystems:EXT2",
    "fsbench.system.filesystems:EXT3",
    "fsbench.system.filesystems:EXT4",
    "fsbench.system.filesystems:XFS",
    "fsbench.system.filesystems:BTRFS",
    "fsbench.system.filesystems:JFS",
    "fsbench.system.filesystems:REISERFS",
    "fsbench.system.filesystems:F2FS",
    "fsbench.system.filesystems:NILFS2",
    "fsbench.system.filesystems:RAW",
)
REGISTRY: Registry[FsType] = Registry("filesystems", "filesystem", CONTRACT, BUILTIN)


def catalogue() -> dict[str, FsType]:
    """Every filesystem known, by name, the shipped ones first."""
    return REGISTRY.all()


# The label fsbench writes on every filesystem it makes: BlockDevice accepts a device
# whose only signature carries it ("written by fsbench"), and refuses any other.
FSBENCH_LABEL = "fsbench"


def get(name: str) -> FsType:
    """The filesystem of this name; a KeyError naming the known ones."""
    return REGISTRY.get(name)


@dataclass(frozen=True)
class Availability:
    available: bool
    reason: str
    kernel: bool
    tools_missing: tuple[str, ...] = field(default_factory=tuple)
    version: str | None = None


def kernel_filesystems(proc_filesystems: Path = Path("/proc/filesystems")) -> set[str]:
    names = set()
    for line in proc_filesystems.read_text().splitlines():
        parts = line.split()
        if parts:
            names.add(parts[-1])
    return names


def _module_exists(module: str) -> bool:
    base = Path("/lib/modules") / platform.release()
    if not base.is_dir():
        return False
    return proc.run(["modinfo", "-n", module], timeout=10).ok


def availability(fs: FsType, kernel_fs: set[str] | None = None) -> Availability:
    """Can this machine make and mount `fs`? With the reason when not."""
    if fs.pseudo:
        return Availability(True, "the bare device", kernel=True)
    kernel_fs = kernel_filesystems() if kernel_fs is None else kernel_fs
    in_kernel = fs.kernel_name in kernel_fs or _module_exists(fs.module)
    missing = tuple(t for t in fs.tools if proc.which(t) is None)
    version = proc.tool_version(fs.version) if fs.version and not missing else None
    reasons = []
    if not in_kernel:
        reasons.append(
            f"kernel {platform.release()} lacks {fs.kernel_name} "
            f"(not in /proc/filesystems, no {fs.module} module)"
        )
    if missing:
        reasons.append(f"missing {', '.join(missing)} (apt-get install {fs.package})")
    ok = in_kernel and not missing
    return Availability(
        available=ok,
        reason="; ".join(reasons) if reasons else "ok",
        kernel=in_kernel,
        tools_missing=missing,
        version=version,
    )


def is_root() -> bool:
    return os.geteuid() == 0
