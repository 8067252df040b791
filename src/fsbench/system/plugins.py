"""One way to make a thing known to fsbench: a registry per kind of thing (workloads,
target kinds, executors, report formats, commands, run kinds, monitors, filesystems,
feature probes, fio profiles, aging recipes, the VM's host-measured workloads), each with
the contract version it offers.

A registry knows its built-ins by name ("module:attribute", imported on first use, in
one table in the registry's home module) and finds plugins as entry points of the group
`fsbench.<name>.v<contract>` (a package's pyproject.toml:
`[project.entry-points."fsbench.workloads.v1"] mine = "mypkg.mine:Mine"`). A plugin built
against another version of the contract sits in another group: it is never loaded, and
asking for it by name is refused in one line that says which version it was built for
and which this fsbench offers (fio's engines declare FIO_IOOPS_VERSION the same way).
Tests' toy extensions `register` at run time, through the same checks.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Generic, TypeVar

from fsbench.system.errors import FsbenchError

T = TypeVar("T")
PREFIX = "fsbench."


def load(path: str) -> Any:
    """The object a "module:attribute" path names."""
    module, _, attribute = path.partition(":")
    found: Any = importlib.import_module(module)
    for part in attribute.split(".") if attribute else ():
        found = getattr(found, part)
    return found


@dataclass
class Registry(Generic[T]):
    """What one kind of plugin is known by. `key` names a loaded object (its `name` or
    `kind`); `builtin` are this fsbench's own, as "module:attribute" paths (an attribute
    that is a tuple names several, in its order)."""

    name: str  # "workloads": the entry-point group is fsbench.workloads.v<contract>
    what: str  # "workload": for messages
    contract: int
    builtin: tuple[str, ...] = ()
    key: Callable[[T], str] = lambda obj: str(getattr(obj, "name"))  # noqa: B009
    _known: dict[str, T] = field(default_factory=dict, init=False)
    _stale: dict[str, str] = field(default_factory=dict, init=False)  # name -> why refused
    _loaded: bool = field(default=False, init=False)

    @property
    def group(self) -> str:
        return f"{PREFIX}{self.name}.v{self.contract}"

    def register(self, obj: T, name: str | None = None) -> T:
        """Make `obj` known (a toy of the tests; the loader for built-ins and plugins)."""
        self._known[name or self.key(obj)] = obj
        return obj

    def unregister(self, name: str) -> None:
        """Forget one registered at run time (a test's toy, afterwards)."""
        self._known.pop(name, None)

    def all(self) -> dict[str, T]:
        """Every one known, built-ins first, by name."""
        self._load()
        return dict(self._known)

    def get(self, name: str) -> T:
        """The one of this name; a plugin built for another contract is refused in one
        line, an unknown name is a KeyError naming the known ones."""
        self._load()
        if name in self._known:
            return self._known[name]
        if name in self._stale:
            raise FsbenchError(self._stale[name])
        raise KeyError(f"unknown {self.what} {name!r} (known: {', '.join(self._known)})")

    def stale(self) -> dict[str, str]:
        """Plugins refused for their contract version, by name: why, in one line."""
        self._load()
        return dict(self._stale)

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for path in self.builtin:
            found = load(path)
            for obj in found if type(found) is tuple else (found,):
                self.register(obj)
        for point in sorted(self._points(self.group), key=lambda p: p.name):
            self.register(point.load(), point.name)
        for group, version in self._other_versions():
            for point in self._points(group):
                if point.name in self._known:
                    continue
                self._stale[point.name] = (
                    f"{self.what} {point.name!r} ({_origin(point)}) was built for fsbench's "
                    f"{self.what} contract v{version}; this fsbench offers v{self.contract}"
                )

    def _other_versions(self) -> Iterator[tuple[str, str]]:
        """The groups of this registry's other contract versions (the unversioned group of
        before contracts had versions counts as v0)."""
        pattern = re.compile(rf"^{re.escape(PREFIX + self.name)}(?:\.v(\d+))?$")
        for group in entry_points().groups:
            found = pattern.match(group)
            if found and group != self.group:
                yield group, found.group(1) or "0"

    @staticmethod
    def _points(group: str) -> list[EntryPoint]:
        return list(entry_points(group=group))


def _origin(point: EntryPoint) -> str:
    dist = getattr(point, "dist", None)
    return f"package {dist.name} {dist.version}" if dist is not None else point.value
