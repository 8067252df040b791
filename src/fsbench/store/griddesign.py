"""A grid run's design, planned from its budget (`--reps decide`): the record the run keeps
(`GridFacts.design`, in runs.facts), written by execute/decide.py from the plan of
analysis/budget.py, read by a resumed run and by the reports. Empty for a fixed or `auto`
design, and for runs of other kinds.

Stored as the fields that were set, in this order (the record as fsbench wrote it before it
was typed: `budget_s` null for a run without a budget, the end's fields only at the end);
keys a later fsbench adds are kept.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class GroupLooks(BaseModel):
    """One comparison group's projected cost and the looks it was given."""

    model_config = ConfigDict(extra="allow")

    name: str  # "fileserver threads=4"
    configs: int
    round_s: float  # seconds a round of it was projected to take
    counts_only: bool  # its headline metrics are all exact counts
    noise: float | None = None  # the CV its cells showed before (this host's trials)
    warmup_s: float = 0.0  # its warm-up trial's seconds (0: a store from before they were kept)
    n_min: int = 0
    n_max: int  # the last look: repetitions from its minimum up to this
    # Its looks were raised to n_max after its minimum, for open pairs that would settle.
    wanted: int | None = None


class GridDesign(BaseModel):
    """What the run planned, what it spent, and at the end how far it got and why it went
    over its budget."""

    model_config = ConfigDict(extra="allow")

    budget_s: float | None = None  # None: no budget (--reps decide without --budget)
    warmup_s: float = 0.0  # seconds gone on warm-ups before the counted rounds
    # Every warm-up trial the plan counts (None: a run from before they were counted),
    # and how many of them ran for the projection, before the plan.
    warmup_trials: int | None = None
    projection_warmups: int | None = None
    planned_s: float | None = None
    minimum_s: float | None = None  # what every group's minimum rounds were projected at
    groups: list[GroupLooks] = []
    replanned_s: float | None = None  # shared out again after the minimum, this far in
    # Kept from the budget for the instrumented pass after the counted run (run --explain).
    reserved_s: float | None = None
    cells: dict[str, int] = {}  # cell key -> its group's last look (n_max)
    warmup: Literal["trial", "none"] | None = None  # a warm-up trial per group, or none
    spent_s: float | None = None  # what the run has spent so far (None: nothing planned)
    # At the end: the repetitions each group reached, and by how much and why it went over.
    reached: list[int] | None = None
    warmups_run: int | None = None  # the warm-up trials the run spent
    over_s: float | None = None
    over_why: str | None = None

    @property
    def counted_budget_s(self) -> float | None:
        """What the counted rounds might spend: the budget less the reservation."""
        if self.budget_s is None:
            return None
        return self.budget_s - (self.reserved_s or 0.0)

    def looks(self) -> list[int]:
        """The distinct last looks planned for its groups, smallest first."""
        return sorted({g.n_max for g in self.groups if g.n_max})
