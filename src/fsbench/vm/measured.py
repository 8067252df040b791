"""The workloads the VM target measures from the host (a boot is a guest of its own; a
crash series boots one guest after another): each a `HostMeasured` record, naming its
workload and the host function that measures one of its cells. fsbench's own are named in
`BUILTIN` ("module:attribute"), plugins are entry points of `fsbench.vm_measured.v1`
(system/plugins.py: one registration style for every kind of plugin)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fsbench.system.plugins import Registry

if TYPE_CHECKING:
    from fsbench.store.records import TrialRecord
    from fsbench.vm.job import VmSpec
    from fsbench.vm.protocol import VmCell


@dataclass(frozen=True)
class HostMeasured:
    workload: str  # a workload that is `vm_only`
    measure: Callable[[VmCell, VmSpec], list[TrialRecord]]  # one cell: its records


# The contract's version (this record): a plugin built for another is refused.
CONTRACT = 1
BUILTIN: tuple[str, ...] = ("fsbench.vm.boot:MEASURED", "fsbench.vm.crash.host:MEASURED")
REGISTRY: Registry[HostMeasured] = Registry(
    "vm_measured", "host-measured workload", CONTRACT, BUILTIN, key=lambda m: m.workload
)
