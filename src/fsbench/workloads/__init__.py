"""Workload registry: one module per workload, registered here by name."""

from __future__ import annotations

from fsbench.workloads.base import Workload

_REGISTRY: dict[str, type[Workload]] = {}
_loaded = False


def register(cls: type[Workload]) -> type[Workload]:
    _REGISTRY[cls.name] = cls
    return cls


def _load() -> None:
    # Every module of this package but `base` is a workload that registers itself when
    # imported: adding a workload is adding a module.
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(__path__):
        if info.name != "base" and not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


def all_workloads() -> dict[str, type[Workload]]:
    # Not "if the registry is empty": importing one workload module directly registers
    # that one only.
    global _loaded
    if not _loaded:
        _load()
        _loaded = True
    return dict(sorted(_REGISTRY.items()))


def get(name: str) -> type[Workload]:
    workloads = all_workloads()
    try:
        return workloads[name]
    except KeyError:
        raise KeyError(f"unknown workload {name!r} (known: {', '.join(workloads)})") from None
