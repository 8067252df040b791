"""What a run tells whoever watches it: the live display of its command, a progress file a
controller polls. Executors get the run's view too (Binding)."""

from __future__ import annotations

from fsbench.execute.schedule import Slot
from fsbench.plan.model import Plan
from fsbench.store.records import TrialRecord


class View:
    """What every run tells whoever watches it, whatever its kind (the session says both);
    no-ops by default. A kind's driver adds the events of its own work."""

    def note(self, text: str) -> None:
        """A line worth showing before the work starts (warnings, stale releases, resuming)."""

    def ended(self, state: str) -> None:
        """The run ended: finished, interrupted or failed (what it did so far is stored);
        a live display stops here."""


class Hooks(View):
    """What a run of the repetition loop tells whoever watches it (the CLI's progress bar)."""

    def begin(self, run_id: int, plan: Plan, done: int, total: int, banner: str) -> None:
        """The run starts (or resumes with `done` trials stored) with `total` slots planned;
        `plan` is the plan as stored (with its order seed)."""

    def started(self, slot: Slot, done: int, total: int) -> None:
        """A slot (or a batch starting with it, in a guest) starts."""

    def finished(self, slot: Slot, records: list[TrialRecord], done: int, total: int) -> None:
        """A slot's records are stored."""
