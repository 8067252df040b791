"""The TrialContext a workload sees: the filesystem under test (mount, sync, remount),
the cache state, the trial's flags and facts, the cell's age and memory cap, and a fresh
twin for a clean copy. The runner makes one per trial (and one per clean copy)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsbench.analysis import validity
from fsbench.system import cache as system
from fsbench.system import filesystems, fsops
from fsbench.system.errors import Unsupported
from fsbench.system.units import parse_size
from fsbench.workloads import aging
from fsbench.workloads.base import Scale


@dataclass
class Context:
    """The TrialContext a workload sees."""

    fs: filesystems.FsType
    device: str
    mountpoint: Path
    mount_options: str
    cache_dir: Path
    scale: Scale
    flags: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    mounted: bool = False
    kernel: list[str] = field(default_factory=list)
    age: str = aging.NONE  # the cell's age (`none`, or a recipe and its parameters)
    mem_cap: str = "none"  # the cell's mem knob
    # What a workload records of its trial beside its metrics (the age it measured at).
    facts: dict[str, Any] = field(default_factory=dict)
    # Makes a fresh filesystem of this config on a second device (Runner.twin).
    twin_factory: Callable[[], Context] | None = None

    @property
    def fs_type(self) -> str:
        return self.fs.name

    @property
    def run_dir(self) -> Path:
        """The run's own directory outside the target (where the mount point lives): for
        a server's socket and the notes of what to undo after a crash."""
        return self.mountpoint.parent

    @property
    def mem_bytes(self) -> int:
        """The memory the workload may use: the mem knob's cap, else the machine's."""
        return parse_size(self.mem_cap) if self.mem_cap != "none" else system.mem_total()

    def series(self, name: str, unit: str, better: str, t: list[float], v: list[float]) -> None:
        """A per-second series of the timed phase (throughput, a latency percentile): kept
        with the trial (`series` in its provenance) and drawn over time by the report."""
        found: dict[str, Any] = self.facts.setdefault("series", {})
        found[name] = {"unit": unit, "better": better, "t": list(t), "v": list(v)}

    def fresh_twin(self) -> Context:
        """A fresh mkfs of this config on a second device like the target, mounted: where
        a workload puts a clean copy of what it aged."""
        if self.twin_factory is None:
            raise Unsupported("no second device for a clean copy here")
        return self.twin_factory()

    def sync(self) -> None:
        system.syncfs(self.mountpoint)

    def drop_caches(self) -> None:
        system.drop_caches()

    def mount(self) -> fsops.Made:
        made = fsops.mount(self.fs, self.device, self.mountpoint, self.mount_options)
        self.mounted = True
        return made

    def umount(self) -> None:
        warning = fsops.umount(self.mountpoint)
        self.mounted = False
        if warning:
            self.notes.append(warning)

    def remount(self) -> None:
        if self.mounted:
            self.umount()
        self.mount()
        system.drop_caches()

    def flag(self, name: str, detail: str) -> None:
        if name not in validity.FLAGS:  # every report explains a flag from the registry
            raise ValueError(f"unregistered validity flag {name!r}: add it to validity.FLAGS")
        self.flags[name] = detail
