"""Where trials run: one executor per kind of target (see base.py for the contract).

The plan's `target.kind` names the executor; each is imported only when a run asks for it
(the VM one brings QEMU and image handling).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from fsbench.executors.base import Executor
from fsbench.plan import Cell, Plan

# kind -> "module:Class"; adding a place to run is adding one line here and one module.
EXECUTORS: dict[str, str] = {
    "loop": "fsbench.executors.local:LocalExecutor",
    "vm": "fsbench.executors.vm:VmExecutor",
}


def for_plan(plan: Plan, cells: Sequence[Cell]) -> Executor:
    module, _, name = EXECUTORS[plan.target.kind].partition(":")
    cls: type[Executor] = getattr(importlib.import_module(module), name)
    return cls(plan, cells)


__all__ = ["EXECUTORS", "Executor", "for_plan"]
