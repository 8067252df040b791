"""The filesystem catalogue: data, not code paths.

Each record says how to make, check and describe one filesystem type. Code that
formats or mounts reads these records (see fsops.py); nothing branches on a name. The
records are known through a registry like every extension (`catalogue()`, `get`): the
shipped ones are the tables of filesystems.toml, a package's are entry points of
`fsbench.filesystems.v1`.
"""

from __future__ import annotations

import os
import platform
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

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


def _tupled(value: Any) -> Any:
    """A TOML array as the tuple a record holds (nested: extended_defaults' pairs)."""
    return tuple(_tupled(v) for v in value) if isinstance(value, list) else value


def shipped(text: str) -> list[FsType]:
    """The records of a catalogue file (filesystems.toml's form), in its order."""
    tables = tomllib.loads(text)
    records = []
    for name, table in tables.items():
        given = {**tables[table["like"]], **table} if "like" in table else table
        given = {k: _tupled(v) for k, v in given.items() if k != "like"}
        records.append(FsType(name=name, **given))
    return records


# The catalogue: every filesystem known, as records registered like any extension: the
# shipped ones are filesystems.toml's, first; a package adds one as an entry point of
# `fsbench.filesystems.v1`, naming its FsType.
CONTRACT = 1
SHIPPED = tuple(shipped(resources.files(__package__).joinpath("filesystems.toml").read_text()))
REGISTRY: Registry[FsType] = Registry(
    "filesystems", "filesystem", CONTRACT, ("fsbench.system.filesystems:SHIPPED",)
)


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
