"""Every probe, in the order of the table's rows: fsbench's own are named in `BUILTIN`
("module:PROBE", each a `Probe`: the contract is base.py), plugins are entry points of
`fsbench.probes.v1` (system/plugins.py: one registration style for every kind of plugin),
their rows after the built-ins'. Adding a probe is adding a module to `probes/` and its
line here."""

from __future__ import annotations

from fsbench.execute.features.base import Probe
from fsbench.system.plugins import Registry

# The probe contract's version (base.py): a plugin built for another is refused.
CONTRACT = 1
# The slow probe first: each filesystem's inode fill starts early and overlaps the rest.
BUILTIN: tuple[str, ...] = tuple(
    f"fsbench.execute.features.probes.{module}:PROBE"
    for module in (
        "inodes",
        "overhead",
        "cluster",
        "resize",
        "reflink",
        "snapshot",
        "compression",
        "checksums",
        "fallocate",
        "maxfile",
        "names",
        "xattr",
        "casefold",
        "quota",
        "odirect",
        "fiemap_ioctl",
        "defrag",
    )
)
REGISTRY: Registry[Probe] = Registry("probes", "probe", CONTRACT, BUILTIN)


def probes() -> tuple[Probe, ...]:
    """Every probe known, built-ins first, in the rows' order."""
    return tuple(REGISTRY.all().values())


def by_name(name: str) -> Probe:
    """The probe of this name; a KeyError naming the known ones."""
    return REGISTRY.get(name)
