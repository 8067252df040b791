"""Workload registry: the workloads are the modules named in `MODULES`, each defining one
or more `Workload` classes decorated with `@register`.

Adding a workload is adding its module (or package) here and naming it in `MODULES`;
nothing else in this package is loaded as a workload, whatever its name. The contract is
`base`; what several workloads share lives beside them (`_tools`: running a tool with our
clock and its failures; `_trees`: the source trees; `fio/`: fio's profiles, parser and job
files); fsbench-engine is driven through `fsbench.system.engine`.
"""

from __future__ import annotations

import importlib
from typing import Any, TypeVar

from fsbench.workloads.base import Workload

# The workload modules, by module name under fsbench.workloads.
MODULES: tuple[str, ...] = (
    "aging",
    "alloc",
    "boot",
    "crash",
    "dbench",
    "fio",
    "fs_mark",
    "fsck",
    "gzip",
    "kernel_build",
    "personalities",
    "pgbench",
    "postmark",
    "sqlite",
    "sysbench_fileio",
    "sysbench_oltp",
    "tree_copy",
    "tree_read",
    "tree_rm",
    "untar",
)

W = TypeVar("W", bound=type[Workload[Any]])

_REGISTRY: dict[str, type[Workload[Any]]] = {}
_loaded = False


def register(cls: W) -> W:
    _REGISTRY[cls.name] = cls
    return cls


def all_workloads() -> dict[str, type[Workload[Any]]]:
    # Not "if the registry is empty": importing one workload module directly registers
    # that one only.
    global _loaded
    if not _loaded:
        for module in MODULES:
            importlib.import_module(f"{__name__}.{module}")
        _loaded = True
    return dict(sorted(_REGISTRY.items()))


def get(name: str) -> type[Workload[Any]]:
    workloads = all_workloads()
    try:
        return workloads[name]
    except KeyError:
        raise KeyError(f"unknown workload {name!r} (known: {', '.join(workloads)})") from None
