"""The keys a trial's provenance may hold: one registry (pyperf's `_metadata.py` is the
model), each key with its type, unit, meaning and the module that writes it. The store
checks every trial's provenance against it when the trial is written (`check`), so that a
misspelt or retyped key fails where it is made, not in a report years later; reports read
the keys through the typed accessors below, not by string.

Stores written before this registry hold only keys that are in it (the fixture stores of
tests/data/stores are read through it in the test suite).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fsbench.system.errors import FsbenchError

JSON_OBJECT = dict
JSON_LIST = list


@dataclass(frozen=True)
class Key:
    name: str
    type: type | tuple[type, ...]
    meaning: str
    writer: str  # the module that writes it
    unit: str = ""


KEYS: dict[str, Key] = {
    k.name: k
    for k in (
        # What the runner records of every trial (runner.py).
        Key("discard", str, "how the target was reset before mkfs", "runner"),
        Key("raw", dict, "the bare device the `raw` pseudo-filesystem ran on", "runner"),
        Key("mkfs", dict, "mkfs's argv and output", "runner"),
        Key("mount", dict, "mount argv, the options the kernel reports, its log", "runner"),
        Key("geometry", dict, "the effective geometry (dumpe2fs, xfs_info, btrfs)", "runner"),
        Key("option_notes", list, "options the kernel ignored or did not show", "runner"),
        Key("knobs", dict, "the knobs in force during the trial", "runner"),
        Key("age", dict, "how the filesystem was aged, and how old it is", "runner, aging"),
        Key("flags", dict, "validity flags: name -> detail (validity.FLAGS)", "runner"),
        Key("notes", list, "what the workload said of its own run", "runner"),
        Key("headline", list, "the metrics this trial's parameters make headline", "runner"),
        Key("knob_restore", list, "knobs that could not be restored after it", "runner"),
        Key("mem", (dict, str, int), "the memory cap in force (knob mem)", "runner"),
        Key("traced", dict, "an instrumented step's own cgroup v2 (stepgroup.py)", "runner"),
        Key("steady", dict, "where the throughput series held steady (steady.py)", "runner"),
        Key("scaled_to_mem", dict, "a working set sized to memory: its size", "runner"),
        Key("series", dict, "per-second series the workload recorded", "context"),
        Key("monitors", dict, "per monitor: its role, facts and artefact files", "runner"),
        # What workloads record of themselves.
        Key("clean_copy_seconds", (int, float), "the aged tree's clean copy", "aging", "s"),
        Key("pgbench", dict, "PostgreSQL's and pgbench's command lines and log", "pgbench"),
        Key("mariadb", dict, "MariaDB's command lines and log", "sysbench-oltp"),
        Key("sysbench", dict, "sysbench's command lines", "sysbench-oltp"),
        Key("command", dict, "the command's argv, cwd, status, processes left", "command"),
        # Where a trial ran, when not on this host (vm/, crash/).
        Key("vm", dict, "the QEMU guest: accelerator, CPUs, memory, image, kernel", "vm"),
        Key("boot_root", dict, "the boot workload's root filesystem", "vm/boot"),
        Key("boot", dict, "the boot workload's systemd-analyze facts", "vm/boot"),
        Key("over", dict, "what every count is out of: {n, of}", "crash"),
        Key("crash", dict, "the power cuts: pattern, crashes, kept failing cases", "crash"),
    )
}


def check(provenance: Mapping[str, Any], where: str = "trial") -> None:
    """Refuse (FsbenchError, one line) provenance with a key the registry does not have,
    or a value of another type."""
    for name, value in provenance.items():
        key = KEYS.get(name)
        if key is None:
            raise FsbenchError(
                f"{where}: provenance key {name!r} is not in fsbench.store.trialfacts"
            )
        if value is not None and not isinstance(value, key.type):
            raise FsbenchError(
                f"{where}: provenance {name!r} is {type(value).__name__}, not {_names(key.type)}"
            )


def _names(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


# Typed accessors: what reports read.


def flags(provenance: Mapping[str, Any]) -> dict[str, str]:
    return dict(provenance.get("flags") or {})


def headline(provenance: Mapping[str, Any]) -> list[str] | None:
    """The trial's own headline metrics; None when it recorded none (an older store)."""
    found = provenance.get("headline")
    return list(found) if found else None


def option_notes(provenance: Mapping[str, Any]) -> list[dict[str, str]]:
    return list(provenance.get("option_notes") or [])


def over(provenance: Mapping[str, Any]) -> dict[str, Any] | None:
    found = provenance.get("over")
    return dict(found) if found else None


def mkfs_argv(provenance: Mapping[str, Any]) -> list[str] | None:
    return (provenance.get("mkfs") or {}).get("argv")


def mount_effective(provenance: Mapping[str, Any]) -> str | None:
    return (provenance.get("mount") or {}).get("effective")


def series(provenance: Mapping[str, Any]) -> dict[str, Any]:
    return dict(provenance.get("series") or {})


def steady(provenance: Mapping[str, Any]) -> dict[str, Any] | None:
    found = provenance.get("steady")
    return dict(found) if found else None


def crash(provenance: Mapping[str, Any]) -> dict[str, Any]:
    return dict(provenance.get("crash") or {})


def vm(provenance: Mapping[str, Any]) -> dict[str, Any] | None:
    found = provenance.get("vm")
    return dict(found) if found else None


@dataclass(frozen=True)
class Guest:
    """What a trial run in a QEMU guest says of it ("vm", vm/job.py:machine_facts)."""

    kernel: str  # the guest kernel's release ("" on the host)
    kernel_source: str  # where that kernel was built from (a kbuild path), or ""
    qemu: str  # QEMU's version
    fsbench: str  # the guest image's fsbench


def guest(provenance: Mapping[str, Any]) -> Guest:
    """The trial's guest; every field "" for a trial run on the host."""
    found = vm(provenance) or {}
    return Guest(
        *(
            str(found.get(name) or "")
            for name in ("kernel_version", "kernel_source", "qemu_version", "fsbench_version")
        )
    )


def volatile_cache(provenance: Mapping[str, Any]) -> str:
    """Whether the crash workload's scratch disk had a volatile write cache, as it said."""
    return str(crash(provenance).get("volatile_cache", ""))
