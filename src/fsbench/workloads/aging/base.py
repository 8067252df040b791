"""The aging contract: a recipe makes a fresh filesystem old before a workload runs on it.

A recipe is `class Name(Recipe[NameParams])`, like a workload: a parameter model with
defaults per scale, an untimed `prepare` outside the target (a history to replay, kept in
the cache), and `advance`, which ages the mounted filesystem further, to a point `at` in
its own unit (pulls done, or the fraction of the volume written). The runner ages a
cell's filesystem after mkfs and before the workload's prepare, all of it untimed, and
stores on every trial what aging did (`Aged`); the `aging` workload advances it in
stages and measures after each.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar, get_args

from fsbench.workloads.base import Params, Scale, TrialContext

P = TypeVar("P", bound=Params)


@dataclass
class Aged:
    """What aging did to one filesystem, as every trial on it records it."""

    recipe: str
    params: dict[str, Any]  # every parameter, defaults of the scale included (the seed too)
    at: float = 0.0  # how far: pulls done, or the fraction of the volume written
    seconds: float = 0.0  # spent aging (untimed for the workload)
    bytes_written: int = 0  # device bytes written while aging
    fullness: float = 0.0  # fraction of the filesystem's blocks in use afterwards
    tree: str = ""  # what a recursive reader of the aged filesystem reads, under the mount
    details: dict[str, Any] = field(default_factory=dict)  # the recipe's own facts

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Recipe(ABC, Generic[P]):
    name: ClassVar[str]
    summary: ClassVar[str]
    params_model: ClassVar[type[Params]]
    scale_defaults: ClassVar[Mapping[Scale, Mapping[str, Any]]]
    unit: ClassVar[str]  # what `at` counts: "pulls", "written"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in cls.__dict__.get("__orig_bases__", ()):
            for arg in get_args(base):
                if isinstance(arg, type) and issubclass(arg, Params):
                    cls.params_model = arg

    @classmethod
    def params(cls, given: Mapping[str, Any], scale: Scale) -> P:
        """The parameters: the scale's defaults under what was given."""
        merged = {**cls.scale_defaults.get(scale, {}), **given}
        return cls.params_model.model_validate(merged)  # type: ignore[return-value]

    @abstractmethod
    def end(self, params: P) -> float:
        """Where the recipe ends (`at` of a fully aged filesystem)."""

    @abstractmethod
    def tree(self, ctx: TrialContext) -> Path:
        """The directory the recipe ages, on the filesystem under test."""

    def prepare(self, ctx: TrialContext, params: P) -> None:  # noqa: B027 - optional hook
        """Untimed, outside the target: what aging needs (a history in the cache)."""

    @abstractmethod
    def advance(self, ctx: TrialContext, params: P, to: float) -> dict[str, Any]:
        """Age the mounted filesystem from where it is to `to`; returns the recipe's facts
        so far (commits pulled, volume written...)."""

    def missing(self) -> str | None:
        """Why this recipe cannot run here (a tool, the engine), or None."""
        return None


def fullness(path: Path) -> float:
    """Fraction of the filesystem's blocks in use (statvfs: (blocks - free) / blocks)."""
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) / st.f_blocks if st.f_blocks else 0.0
