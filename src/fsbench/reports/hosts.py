"""What differs between the hosts of a run on many machines: the facts each host's part stored
(kernel, CPU, memory, device model, rotational, tool versions, fsbench version), and the
ones whose values are not the same everywhere. Read only from the store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fsbench.store.records import RunRecord
from fsbench.store.results import Store


@dataclass(frozen=True)
class HostFacts:
    name: str  # inventory name
    groups: tuple[str, ...]
    member_run: int
    facts: dict[str, str]  # fact -> value as shown


def facts_of(member: RunRecord) -> dict[str, str]:
    h, t = member.host, member.target
    model = t.get("backing_model") or t.get("model")  # a loop image's disk, or the device
    disk = t.get("backing_disk") or t.get("disk")
    rotational = t.get("rotational")
    out = {
        "hostname": h.shown("hostname") or "?",
        "kernel": h.shown("kernel") or "?",
        "cpu": f"{h.shown('cpus') or '?'} x {h.shown('cpu') or '?'}",
        "memory": h.shown("memory_bytes") or "?",
        # A virtio disk has no model in sysfs: its name at least tells the disks apart.
        "device model": str(model or (f"{disk} (no model in sysfs)" if disk else "?")),
        "rotational": "?" if rotational is None else ("yes" if rotational else "no"),
        "target": str(t.get("summary") or t.get("kind") or "?"),
        "fsbench": f"{h.shown('fsbench_version') or '?'} "
        f"({h.shown('fsbench_commit') or 'no commit'})",
        "python": h.shown("python") or "?",
    }
    for tool, version in sorted((h.tools or {}).items()):
        out[f"tool {tool}"] = str(version)
    return out


def hosts_of(store: Store, run: RunRecord) -> list[HostFacts]:
    """The hosts of a run on many machines, in the order their parts were made (the last part of a
    host, if it ran more than once)."""
    parts: dict[str, RunRecord] = {}
    for member in store.parts(run.uid):
        parts[member.part_host] = member
    return [HostFacts(name, tuple(m.part_groups), m.id, facts_of(m)) for name, m in parts.items()]


def differences(hosts: list[HostFacts]) -> list[tuple[str, dict[str, str]]]:
    """(fact, {host: value}) for every fact whose value is not the same on all hosts."""
    names = list(dict.fromkeys(k for h in hosts for k in h.facts))
    out = []
    for name in names:
        values = {h.name: h.facts.get(name, "-") for h in hosts}
        if len(set(values.values())) > 1:
            out.append((name, values))
    return out


def groups_of(hosts: list[HostFacts]) -> dict[str, list[str]]:
    """Inventory group -> its hosts."""
    out: dict[str, list[str]] = {}
    for h in hosts:
        for group in h.groups:
            out.setdefault(group, []).append(h.name)
    return out


def document(hosts: list[HostFacts]) -> dict[str, Any]:
    return {
        "hosts": {
            h.name: {"groups": list(h.groups), "member_run": h.member_run, **h.facts} for h in hosts
        },
        "differences": dict(differences(hosts)),
    }
