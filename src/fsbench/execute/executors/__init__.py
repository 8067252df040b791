"""Where trials run: one executor per kind of target (see base.py for the contract).

The plan's target names its executor (`plan.TARGET_KINDS[kind].executor`); each is imported
only when a run asks for it (the VM one brings QEMU and image handling). Adding a place to
run is adding its target spec to plan.py and its executor module here.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from fsbench.execute.executors.base import Executor
from fsbench.plan.model import TARGET_KINDS, Cell, Plan


def for_plan(plan: Plan, cells: Sequence[Cell]) -> Executor:
    module, _, name = TARGET_KINDS[plan.target.kind].executor.partition(":")
    cls: type[Executor] = getattr(importlib.import_module(module), name)
    return cls(plan, cells)


__all__ = ["Executor", "for_plan"]
