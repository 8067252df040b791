"""Every probe, in the order of the table's rows. Adding a probe is adding a module to
`probes/` and a line here."""

from __future__ import annotations

from fsbench.execute.features.base import Probe
from fsbench.execute.features.probes import (
    casefold,
    checksums,
    cluster,
    compression,
    defrag,
    fallocate,
    fiemap_ioctl,
    inodes,
    maxfile,
    names,
    odirect,
    overhead,
    quota,
    reflink,
    resize,
    snapshot,
    xattr,
)

# The slow probe first: each filesystem's inode fill starts early and overlaps the rest.
PROBES: tuple[Probe, ...] = (
    inodes.PROBE,
    overhead.PROBE,
    cluster.PROBE,
    resize.PROBE,
    reflink.PROBE,
    snapshot.PROBE,
    compression.PROBE,
    checksums.PROBE,
    fallocate.PROBE,
    maxfile.PROBE,
    names.PROBE,
    xattr.PROBE,
    casefold.PROBE,
    quota.PROBE,
    odirect.PROBE,
    fiemap_ioctl.PROBE,
    defrag.PROBE,
)


def by_name(name: str) -> Probe:
    for p in PROBES:
        if p.name == name:
            return p
    known = ", ".join(p.name for p in PROBES)
    raise KeyError(f"unknown probe {name!r} (known: {known})")
