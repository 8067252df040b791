"""Where trials run: one executor per kind of target (see base.py for the contract).

The executors are a registry (system/plugins.py), by the target kind they run: this
host's loop image or disk here; the others declared by their packages as entry points of
`fsbench.executors.v1` (the VM's brings QEMU and image handling, the one for many machines
Ansible), each imported only when a run asks for it. Adding a place to run is one module
with its target spec and its executor, each registered under the kind's name.
"""

from __future__ import annotations

from collections.abc import Sequence

from fsbench.execute.executors.base import Binding, Executor
from fsbench.plan.model import Cell, Plan
from fsbench.system.plugins import Registry

# The executor contract's version (base.py): a plugin built for another is refused.
CONTRACT = 1
EXECUTORS: Registry[type[Executor]] = Registry(
    "executors",
    "executor",
    CONTRACT,
    ("fsbench.execute.executors.local:LocalExecutor",),
    key=lambda cls: cls.kind,
)


def for_plan(plan: Plan, cells: Sequence[Cell]) -> Executor:
    """The executor of the plan's target kind, for its cells."""
    return EXECUTORS.get(plan.target.kind)(plan, cells)


__all__ = ["EXECUTORS", "Binding", "Executor", "for_plan"]
