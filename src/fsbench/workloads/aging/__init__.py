"""Aging: recipes that make a fresh filesystem old before a workload runs on it (a
dimension of the matrix, like a knob: `--age none,git-pulls:pulls=500,churn`).

An age is written `RECIPE[:NAME=VALUE]...`; `none` is a fresh filesystem. The recipes are
the classes in `RECIPES` (the contract: base.py). The `aging` workload (workload.py), which
measures what a recipe did, registers when this package is loaded as a workload module.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from fsbench.system import knobs
from fsbench.system.errors import FsbenchError
from fsbench.workloads.aging.base import Aged, Recipe
from fsbench.workloads.aging.churn import Churn
from fsbench.workloads.aging.gitpulls import GitPulls

NONE = "none"
# The age knob's name: a cell's age is stored with its knobs.
KNOB = "age"
RECIPES: dict[str, type[Recipe[Any]]] = {r.name: r for r in (GitPulls, Churn)}


def parse(text: str) -> tuple[str, dict[str, str]]:
    """'git-pulls:pulls=500' -> ('git-pulls', {'pulls': '500'}); FsbenchError when the
    recipe or a parameter is unknown or invalid (one line)."""
    name, *pairs = [p.strip() for p in str(text).strip().split(":")]
    if name == NONE:
        if pairs:
            raise FsbenchError(f"age {text!r}: none takes no parameters")
        return NONE, {}
    recipe = RECIPES.get(name)
    if recipe is None:
        raise FsbenchError(f"age {name!r}: a recipe ({', '.join(RECIPES)}) or none")
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
    return (None if name == NONE else RECIPES[name]()), params


__all__ = ["KNOB", "NONE", "RECIPES", "Aged", "Recipe", "normalize", "parse", "recipe"]

# Last: the workload module reads the names above from this package.
from fsbench.workloads.aging import workload as workload  # noqa: E402

knobs.made_elsewhere(KNOB, normalize)
