"""What a run tells whoever watches it: the CLI's progress bar, a progress file a
controller polls. Executors get the run's hooks too (Binding)."""

from __future__ import annotations

from fsbench.execute.schedule import Slot
from fsbench.plan.model import Plan
from fsbench.store.records import TrialRecord


class Hooks:
    """What a run tells whoever watches it (the CLI's progress bar); no-ops by default."""

    def note(self, text: str) -> None:
        """A line worth showing before the trials start (warnings, stale releases)."""

    def begin(self, run_id: int, plan: Plan, done: int, total: int, banner: str) -> None:
        """The run starts (or resumes with `done` trials stored) with `total` slots planned;
        `plan` is the plan as stored (with its order seed)."""

    def started(self, slot: Slot, done: int, total: int) -> None:
        """A slot (or a batch starting with it, in a guest) starts."""

    def finished(self, slot: Slot, records: list[TrialRecord], done: int, total: int) -> None:
        """A slot's records are stored."""

    def ended(self, state: str) -> None:
        """The run ended: finished, interrupted or failed (its trials so far are stored)."""
