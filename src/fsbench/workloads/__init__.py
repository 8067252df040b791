"""Workload registry: one module per workload, registered here by name."""

from __future__ import annotations

from fsbench.workloads.base import Workload

_REGISTRY: dict[str, type[Workload]] = {}


def register(cls: type[Workload]) -> type[Workload]:
    _REGISTRY[cls.name] = cls
    return cls


def _load() -> None:
    # Import for the side effect of registering; one line per workload module.
    from fsbench.workloads import alloc  # noqa: F401


def all_workloads() -> dict[str, type[Workload]]:
    if not _REGISTRY:
        _load()
    return dict(sorted(_REGISTRY.items()))


def get(name: str) -> type[Workload]:
    workloads = all_workloads()
    try:
        return workloads[name]
    except KeyError:
        raise KeyError(f"unknown workload {name!r} (known: {', '.join(workloads)})") from None
