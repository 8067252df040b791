"""The race of `fsbench tune` live on stderr, round by round: configs alive, each trial,
who was dropped."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console

from fsbench.execute.hooks import View
from fsbench.execute.race.rule import Drop
from fsbench.execute.race.trials import TuneSpec
from fsbench.execute.schedule import Slot
from fsbench.plan.model import Plan
from fsbench.store.records import TrialRecord
from fsbench.store.results import Store
from fsbench.store.values import value_of


class Watch(View):
    """What a race tells whoever watches it; no-ops by default."""

    def begin(self, run_id: int, plan: Plan, resumed: int, banner: str) -> None:
        """The race starts (or resumes with `resumed` trials stored)."""

    def round_begins(self, rnd: int, alive: Sequence[str], pending: int) -> None:
        """Round `rnd` (0: the warm-up) starts with these configs, `pending` trials to run."""

    def trial(self, slot: Slot, records: list[TrialRecord]) -> None:
        """A trial is stored."""

    def round_ends(self, rnd: int, alive: Sequence[str], dropped: Sequence[Drop]) -> None:
        """Round `rnd` is fed to the race: who is left, who was dropped."""


class LiveView(Watch):
    """The race on stderr, round by round: configs alive, each trial, who was dropped."""

    def __init__(self, spec: TuneSpec, store: Store, err: Console | None = None) -> None:
        self.err, self.spec, self.store = err or Console(stderr=True), spec, store
        self.done = 0
        self.pending = 0

    def _say(self, text: str, style: str | None = None) -> None:
        self.err.print(text, style=style, markup=False, highlight=False)

    def note(self, text: str) -> None:
        self._say(text, "yellow")

    def begin(self, run_id: int, plan: Plan, resumed: int, banner: str) -> None:
        self._say(
            f"fsbench tune: run {run_id}, {len(plan.fs)} configs, {self.spec.metric}, up to "
            f"{self.spec.max_rounds} rounds after {plan.warmup} warm-up, margin "
            f"±{self.spec.margin:.0%}, scale {plan.scale}, order seed {plan.seed}, store "
            f"{self.store.url}" + (f"; {banner}" if banner else "")
        )

    def round_begins(self, rnd: int, alive: Sequence[str], pending: int) -> None:
        self.done, self.pending = 0, pending
        what = "warm-up round (not counted)" if rnd == 0 else f"round {rnd}"
        ran = f", {pending} trials to run" if pending else ", stored (replayed)"
        self._say(f"{what}: {len(alive)} configs alive{ran}", "bold")

    def trial(self, slot: Slot, records: list[TrialRecord]) -> None:
        if not slot.warmup:
            self.done += 1
        first = records[0]
        value = value_of(records, self.spec.metric)
        shown = f"{value:.4g}" if value is not None else f"{first.status}: {first.message}"
        tag = "warm-up" if slot.warmup else f"{self.done}/{self.pending}"
        self._say(f"  [{tag}] {first.config}: {self.spec.metric} {shown}", "dim")

    def round_ends(self, rnd: int, alive: Sequence[str], dropped: Sequence[Drop]) -> None:
        for d in dropped:
            self._say(f"  dropped {d.config} ({d.reason}): {d.detail or d.test}", "yellow")
        if rnd > 0:
            self._say(f"  after round {rnd}: {len(alive)} alive: {', '.join(alive)}")
