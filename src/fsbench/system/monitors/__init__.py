"""Monitor registry: fsbench's own monitors are named in `BUILTIN` ("module:Class", each a
`Monitor`: the contract is `base`), plugins are entry points of `fsbench.monitors.v1`
(system/plugins.py: one registration style for every kind of plugin).

A plan names the monitors of its trials (`monitors = ["sampler"]`, the default: `DEFAULT`);
`check` refuses an unknown name, and a tracer outside an instrumented pass, in one line.
`attached` runs a trial's monitors around it (attached.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from fsbench.system.monitors.base import Monitor, Role
from fsbench.system.plugins import Registry

# The monitor contract's version (base.py): a plugin built for another is refused.
CONTRACT = 1
SAMPLER = "sampler"
BUILTIN: tuple[str, ...] = (
    "fsbench.system.monitors.sampler:SamplerMonitor",
    "fsbench.system.monitors.blocktrace:BlockTrace",
    "fsbench.system.monitors.offcpu:OffCpu",
    "fsbench.system.monitors.profile:Profile",
)
REGISTRY: Registry[type[Monitor]] = Registry("monitors", "monitor", CONTRACT, BUILTIN)
# Beside every counted trial unless the plan names others.
DEFAULT: tuple[str, ...] = (SAMPLER,)


def register(cls: type[Monitor]) -> type[Monitor]:
    """A monitor known at run time (the tests' toys; a plugin is an entry point)."""
    return REGISTRY.register(cls)


def all_monitors() -> dict[str, type[Monitor]]:
    return REGISTRY.all()


def get(name: str) -> type[Monitor]:
    """The monitor of this name: a KeyError naming the known ones when there is none, an
    FsbenchError (one line) when its plugin was built for another contract."""
    return REGISTRY.get(name)


def check(names: Iterable[str], *, instrumented: bool = False) -> tuple[str, ...]:
    """The names, each a known monitor, once; a tracer only in an instrumented pass.
    ValueError (one line) otherwise: a plan's field validator says where."""
    out: list[str] = []
    for name in names:
        try:
            role = get(name).role
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None
        if name in out:
            raise ValueError(f"monitor {name!r} is named twice")
        if role == Role.TRACER and not instrumented:
            raise ValueError(
                f"monitor {name!r} is a tracer: tracers run only in an instrumented pass, "
                "never beside counted trials"
            )
        out.append(name)
    return tuple(out)


def missing(names: Iterable[str]) -> str | None:
    """Why this machine cannot run one of these monitors (one line), or None."""
    for name in names:
        why = get(name).missing()
        if why:
            return f"monitor {name}: {why}"
    return None
