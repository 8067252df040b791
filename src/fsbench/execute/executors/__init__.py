"""Where trials run: one executor per kind of target (see base.py for the contract).

The plan's target names its executor (`TargetSpec.executor`, plan/targets.py); each is
imported only when a run asks for it (the VM one brings QEMU and image handling, the one
for many machines Ansible). Adding a place to run is one module with its target spec and
its executor, registered as a target kind.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from fsbench.execute.executors.base import Binding, Executor
from fsbench.plan import targets
from fsbench.plan.model import Cell, Plan


def for_plan(plan: Plan, cells: Sequence[Cell]) -> Executor:
    module, _, name = targets.kinds()[plan.target.kind].executor.partition(":")
    cls: type[Executor] = getattr(importlib.import_module(module), name)
    return cls(plan, cells)


__all__ = ["Binding", "Executor", "for_plan"]
