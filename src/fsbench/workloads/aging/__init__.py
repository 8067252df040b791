"""Aging: recipes that make a fresh filesystem old before a workload runs on it (a
dimension of the matrix, like a knob: `--age none,git-pulls:pulls=500,churn`).

An age is written `RECIPE[:NAME=VALUE]...`; `none` is a fresh filesystem. fsbench's own
recipes are named in `BUILTIN` ("module:Class", each a `Recipe`: the contract is base.py),
plugins are entry points of `fsbench.aging_recipes.v1` (system/plugins.py: one
registration style for every kind of plugin). The age is validated where plans are made
(`normalize`, from plan/model.py); the `aging` workload (workload.py), which measures what
a recipe did, is a workload like any (workloads.BUILTIN).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from fsbench.system.errors import FsbenchError
from fsbench.system.plugins import Registry
from fsbench.workloads.aging.base import Aged, Recipe

NONE = "none"
# The age knob's name: a cell's age is stored with its knobs.
KNOB = "age"
# The recipe contract's version (base.py): a plugin built for another is refused.
CONTRACT = 1
BUILTIN: tuple[str, ...] = (
    "fsbench.workloads.aging.gitpulls:GitPulls",
    "fsbench.workloads.aging.churn:Churn",
)
REGISTRY: Registry[type[Recipe[Any]]] = Registry("aging_recipes", "aging recipe", CONTRACT, BUILTIN)


def recipes() -> dict[str, type[Recipe[Any]]]:
    """Every recipe known, by name, the shipped ones first."""
    return REGISTRY.all()


def parse(text: str) -> tuple[str, dict[str, str]]:
    """'git-pulls:pulls=500' -> ('git-pulls', {'pulls': '500'}); FsbenchError when the
    recipe or a parameter is unknown or invalid (one line)."""
    name, *pairs = [p.strip() for p in str(text).strip().split(":")]
    if name == NONE:
        if pairs:
            raise FsbenchError(f"age {text!r}: none takes no parameters")
        return NONE, {}
    try:
        recipe = REGISTRY.get(name)  # a plugin of another contract: refused in one line
    except KeyError:
        raise FsbenchError(f"age {name!r}: a recipe ({', '.join(recipes())}) or none") from None
    params: dict[str, str] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise FsbenchError(f"age {text!r}: parameters are NAME=VALUE, after a ':'")
        params[key.strip()] = value.strip()
    try:
        recipe.params_model.model_validate(params)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or name
        what = str(first.get("msg")).removeprefix("Value error, ")
        raise FsbenchError(f"age {name}: {where}: {what}") from None
    return name, params


def normalize(text: str) -> str:
    """An age as the knob stores it: the recipe, then its parameters in order."""
    name, params = parse(text)
    return ":".join([name, *(f"{k}={v}" for k, v in sorted(params.items()))])


def recipe(text: str) -> tuple[Recipe[Any] | None, dict[str, str]]:
    """A new recipe for an age (None for a fresh filesystem) and its given parameters."""
    name, params = parse(text)
    return (None if name == NONE else REGISTRY.get(name)()), params


__all__ = ["KNOB", "NONE", "Aged", "Recipe", "normalize", "parse", "recipe", "recipes"]
