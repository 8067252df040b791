"""The hosts of a fleet, as Ansible reads the user's inventory (INI, YAML, a script):
`ansible-inventory --list`, so every inventory Ansible accepts works here. Only the
groups and the `fsbench_*` variables are kept: connection secrets stay with Ansible."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsbench.fleet.ansible import binary
from fsbench.system import proc
from fsbench.system.errors import FsbenchError

# Host variables fsbench reads (README "Many machines").
HOST_VARS = {
    "fsbench_path": "an existing fsbench checkout with its .venv (make install done): used "
    "as is instead of installing",
    "fsbench_workdir": "where the host's loop image, mounts and store go "
    "(default /var/tmp/fsbench-fleet/<inventory name>)",
    "fsbench_device": "a real block device for this host's target (with fsbench_destroy_data)",
    "fsbench_destroy_data": "true: fsbench may overwrite fsbench_device (every --device check "
    "still applies)",
    "fsbench_store": "direct (write into the shared PostgreSQL) or fetch (a local SQLite, "
    "fetched and merged at the end); default direct for a PostgreSQL --db, else fetch",
}
IGNORED_GROUPS = {"all", "ungrouped"}


@dataclass(frozen=True)
class FleetHost:
    name: str  # the inventory name
    groups: tuple[str, ...] = ()
    vars: dict[str, Any] = field(default_factory=dict)  # fsbench_* only

    @property
    def device(self) -> str | None:
        value = self.vars.get("fsbench_device")
        return str(value) if value else None

    @property
    def destroy_data(self) -> bool:
        return str(self.vars.get("fsbench_destroy_data", "")).lower() in ("true", "yes", "1")

    def workdir(self) -> str:
        return str(self.vars.get("fsbench_workdir") or f"/var/tmp/fsbench-fleet/{self.name}")


def load(inventory: Path, limit: str | None = None) -> list[FleetHost]:
    """The inventory's hosts (after `--limit`), in inventory order, with their groups
    (a child group's hosts belong to its parents too)."""
    found = binary("ansible-inventory")
    if found is None:
        raise FsbenchError("fleet runs need Ansible: make install (ansible-core from PyPI)")
    if not inventory.exists():
        raise FsbenchError(f"no inventory {inventory}")
    argv = [found, "-i", str(inventory), "--list"]
    if limit:
        argv += ["--limit", limit]
    res = proc.run(argv, timeout=120)
    if not res.ok:
        lines = [ln for ln in (res.stderr or res.stdout).splitlines() if ln.strip()]
        raise FsbenchError(
            f"ansible-inventory {inventory}: {lines[-1] if lines else res.returncode}"
        )
    try:
        data = json.loads(res.stdout)
    except json.JSONDecodeError as exc:
        raise FsbenchError(f"ansible-inventory {inventory}: not JSON ({exc})") from None
    hosts = hosts_of(data)
    if not hosts and (why := _unparsed(res.stderr, inventory)):
        # Ansible only warns (and lists no host) when no plugin can read the file.
        raise FsbenchError(f"inventory {inventory}: Ansible cannot parse it ({why})")
    return hosts


# What ansible-inventory warns when one of its plugins cannot read a source (ansible-core
# 2.19: `with 'ini' plugin: ...`; before: `/path with ini plugin: ...`).
_PLUGIN_FAILED = re.compile(r"Failed to parse (?:inventory|\S+) with '?(\w+)'? plugin: (.+)")
_PARSER_PREFIX = "Failed to parse inventory: "


def _unparsed(stderr: str, inventory: Path) -> str:
    """Why no plugin of Ansible could read the inventory ('' when one could): what the
    plugin its name calls for (yaml for .yml, .yaml, .json; else ini) said, in one line."""
    if not re.search(r"Unable to parse .+ as an inventory source", stderr):
        return ""
    said: dict[str, str] = {}
    for plugin, why in _PLUGIN_FAILED.findall(stderr):
        said.setdefault(plugin, why.strip().removeprefix(_PARSER_PREFIX))
    plugin = "yaml" if inventory.suffix in (".yml", ".yaml", ".json") else "ini"
    if plugin not in said:
        plugin = next(iter(said), "")
    return f"{plugin} plugin: {said[plugin]}" if plugin else "no plugin could read it"


def hosts_of(data: dict[str, Any]) -> list[FleetHost]:
    """Hosts from `ansible-inventory --list` JSON."""
    hostvars: dict[str, dict[str, Any]] = data.get("_meta", {}).get("hostvars", {})
    direct: dict[str, list[str]] = {}
    children: dict[str, list[str]] = {}
    for group, body in data.items():
        if group == "_meta" or not isinstance(body, dict):
            continue
        direct[group] = list(body.get("hosts") or [])
        children[group] = list(body.get("children") or [])

    def members(group: str, seen: frozenset[str] = frozenset()) -> list[str]:
        out = list(direct.get(group, []))
        for child in children.get(group, []):
            if child not in seen:
                out += members(child, seen | {group})
        return out

    order: list[str] = []
    for name in members("all"):
        if name not in order:
            order.append(name)
    for name in hostvars:
        if name not in order:
            order.append(name)
    groups_of: dict[str, list[str]] = {name: [] for name in order}
    for group in direct:
        if group in IGNORED_GROUPS:
            continue
        for name in members(group):
            if name in groups_of and group not in groups_of[name]:
                groups_of[name].append(group)
    out = []
    for name in order:
        mine = {k: v for k, v in hostvars.get(name, {}).items() if k.startswith("fsbench_")}
        # A misspelt variable would be ignored in silence (fsbench_dev: a loop image, not
        # the disk meant).
        unknown = sorted(set(mine) - set(HOST_VARS))
        if unknown:
            raise FsbenchError(
                f"host {name}: unknown host variable {unknown[0]} (fsbench reads "
                f"{', '.join(HOST_VARS)})"
            )
        out.append(FleetHost(name, tuple(groups_of[name]), mine))
    return out
