"""Aging a mounted filesystem by a recipe, untimed, and what it did: the runner calls
`age` after mkfs (a cell with an `age` knob), the `aging` workload calls `Ager.advance`
stage by stage."""

from __future__ import annotations

import time
from typing import Any

from fsbench.system.errors import Unsupported
from fsbench.system.monitors import diskstats
from fsbench.workloads.aging import NONE, parse, recipe
from fsbench.workloads.aging.base import Aged, Recipe, fullness
from fsbench.workloads.base import Params, Scale, TrialContext


class Ager:
    """One filesystem aged by one recipe, as far as asked, remembering what it did."""

    def __init__(self, text: str, scale: Scale) -> None:
        made, given = recipe(text)
        if made is None:
            raise ValueError(f"{NONE} is no recipe")
        self.recipe: Recipe[Any] = made
        self.params: Params = made.params(given, scale)
        self.seconds = 0.0
        self.bytes_written = 0
        self.at = 0.0
        self.details: dict[str, Any] = {}
        self._prepared = False

    @property
    def end(self) -> float:
        return self.recipe.end(self.params)

    def advance(self, ctx: TrialContext, to: float) -> Aged:
        """Age `ctx`'s filesystem further, to `to` (the recipe's unit); what it did so far."""
        missing = self.recipe.missing()
        if missing:
            raise Unsupported(f"age {self.recipe.name}: {missing}")
        if not self._prepared:  # outside the target: not counted as aging the filesystem
            self.recipe.prepare(ctx, self.params)
            self._prepared = True
        before = diskstats.read(ctx.device)
        t0 = time.monotonic()
        self.details = self.recipe.advance(ctx, self.params, to)
        ctx.sync()
        self.seconds += time.monotonic() - t0
        after = diskstats.read(ctx.device)
        if before is not None and after is not None:
            self.bytes_written += (after - before).write_bytes
        self.at = to
        return self.aged(ctx)

    def aged(self, ctx: TrialContext) -> Aged:
        return Aged(
            recipe=self.recipe.name,
            params=self.params.model_dump(mode="json"),
            at=self.at,
            seconds=round(self.seconds, 3),
            bytes_written=self.bytes_written,
            fullness=round(fullness(ctx.mountpoint), 6),
            tree=str(self.recipe.tree(ctx).relative_to(ctx.mountpoint)),
            details=self.details,
        )


def age(ctx: TrialContext, text: str, scale: Scale) -> Aged | None:
    """Age the mounted filesystem all the way by the age `text` (None: fresh)."""
    name, _ = parse(text)
    if name == NONE:
        return None
    ager = Ager(text, scale)
    return ager.advance(ctx, ager.end)
