"""Workload registry: fsbench's own workloads are named in `BUILTIN` ("module:Class", each
a `Workload`: the contract is `base`), plugins are entry points of `fsbench.workloads.v1`
(system/plugins.py: one registration style for every kind of plugin).

Adding a workload is adding its module (or package) and its line in `BUILTIN`; nothing
else in this package is loaded as a workload, whatever its name. What several workloads
share lives beside them (`_tools`: running a tool with our clock and its failures;
`_trees`: the source trees; `fio/`: fio's profiles, parser and job files); fsbench-engine
is driven through `fsbench.system.engine`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fsbench.system.plugins import Registry
from fsbench.workloads.base import Workload

# The workload contract's version (base.py): a plugin built for another is refused.
CONTRACT = 1
BUILTIN: tuple[str, ...] = (
    "fsbench.workloads.aging.workload:Aging",
    "fsbench.workloads.alloc:Alloc",
    "fsbench.workloads.boot:BootWorkload",
    "fsbench.workloads.command:Command",
    "fsbench.workloads.crash:Crash",
    "fsbench.workloads.dbench:Dbench",
    "fsbench.workloads.fio:Fio",
    "fsbench.workloads.fs_mark:FsMark",
    "fsbench.workloads.fsck:Fsck",
    "fsbench.workloads.gzip:Gzip",
    "fsbench.workloads.kernel_build:KernelBuild",
    "fsbench.workloads.personalities:Fileserver",
    "fsbench.workloads.personalities:Varmail",
    "fsbench.workloads.personalities:Webserver",
    "fsbench.workloads.pgbench:Pgbench",
    "fsbench.workloads.postmark:Postmark",
    "fsbench.workloads.replay:Replay",
    "fsbench.workloads.sqlite:Sqlite",
    "fsbench.workloads.sysbench_fileio:SysbenchFileio",
    "fsbench.workloads.sysbench_oltp:SysbenchOltp",
    "fsbench.workloads.tree_copy:TreeCopy",
    "fsbench.workloads.tree_read:TreeRead",
    "fsbench.workloads.tree_rm:TreeRm",
    "fsbench.workloads.untar:Untar",
)
REGISTRY: Registry[type[Workload[Any]]] = Registry("workloads", "workload", CONTRACT, BUILTIN)


def register(cls: type[Workload[Any]]) -> type[Workload[Any]]:
    """A workload known at run time (the tests' toys; a plugin is an entry point)."""
    return REGISTRY.register(cls)


def all_workloads() -> dict[str, type[Workload[Any]]]:
    return dict(sorted(REGISTRY.all().items()))


def get(name: str) -> type[Workload[Any]]:
    return REGISTRY.get(name)


def tool_packages(names: Iterable[str]) -> dict[str, str]:
    """The tools of these workloads (those this fsbench knows), command -> Debian package:
    the tools whose versions a run's provenance records."""
    out: dict[str, str] = {}
    for name in dict.fromkeys(names):
        try:
            cls = get(name)
        except KeyError:  # a workload this fsbench no longer has
            continue
        out.update({tool.command: tool.package for tool in cls.tools})
    return out
