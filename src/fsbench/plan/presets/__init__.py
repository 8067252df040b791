"""The shipped plans: one TOML file per preset in this package (`fsbench list presets`)."""

from __future__ import annotations

from importlib import resources

from fsbench.plan.model import Plan, load_toml
from fsbench.system.errors import FsbenchError

# What a bare `fsbench run` runs (and `make run`): the quick comparison.
DEFAULT_PRESET = "quick"


def preset_names() -> list[str]:
    root = resources.files(__name__)
    return sorted(p.name.removesuffix(".toml") for p in root.iterdir() if p.name.endswith(".toml"))


def load_preset(name: str) -> Plan:
    res = resources.files(__name__).joinpath(f"{name}.toml")
    if not res.is_file():
        raise FsbenchError(f"unknown preset {name!r} (known: {', '.join(preset_names())})")
    return load_toml(res.read_text(), f"preset {name}")


def preset_description(name: str) -> str:
    return load_preset(name).description
