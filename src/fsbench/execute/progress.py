"""The repetition loop's live display on stderr (rich): the run's numbers, a progress bar
(trial i of n, elapsed, ETA, the current cell) and one line per trial that is not ok."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from fsbench.execute.hooks import Hooks
from fsbench.execute.schedule import Slot
from fsbench.plan.model import Plan
from fsbench.store import trialfacts
from fsbench.store.records import TrialRecord
from fsbench.store.results import Store
from fsbench.system import numbers


class Display(Hooks):
    """Hooks drawn live on stderr (rich): the run's end stops the drawing."""

    progress: Progress

    def ended(self, state: str) -> None:
        # Never started (refused before the run began): rich would print an empty line.
        if self.progress.live.is_started:
            self.progress.stop()


class ProgressHooks(Display):
    """A progress bar on stderr (trial i of n, elapsed, ETA, the current cell) and one line
    per trial that is not ok."""

    def __init__(self, n_cells: int, store: Store, err: Console | None = None) -> None:
        self.n_cells, self.store = n_cells, store
        self.err = err or Console(stderr=True)
        self.progress = Progress(
            TextColumn("trial"),
            MofNCompleteColumn(),
            BarColumn(bar_width=24),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TextColumn("{task.description}"),
            console=self.err,
            transient=False,
        )
        self.task = self.progress.add_task("", total=None)

    def note(self, text: str) -> None:
        style = "yellow" if text.startswith(("warning", "released")) else None
        self.err.print(text, style=style, markup=False, highlight=False)

    def begin(self, run_id: int, plan: Plan, done: int, total: int, banner: str) -> None:
        warm = f" + {plan.warmup} warm-up" if plan.warmup else ""
        if plan.reps == "decide" and plan.warmup:
            warm = " + a warm-up trial per group"
        reps = {
            "auto": f"up to {plan.max_reps}",
            "decide": f"2 to {plan.max_reps} (until decided)",
        }.get(str(plan.reps), str(plan.reps))
        self.err.print(
            f"fsbench: run {run_id}, {plan.name}: {len(plan.fs)} configs, {self.n_cells} cells "
            f"x {reps} reps{warm} = {'up to ' if plan.adaptive else ''}{total} trials, "
            f"scale {plan.scale}, order seed "
            f"{plan.seed}, store {self.store.url}" + (f"; {banner}" if banner else ""),
            markup=False,
            highlight=False,
        )
        self.progress.update(self.task, total=total, completed=done)
        self.progress.start()  # only now: a refusal before the run prints one line, no bar

    def started(self, slot: Slot, done: int, total: int) -> None:
        rep = "warm-up" if slot.warmup else f"rep {slot.rep}"
        self.progress.update(
            self.task, total=total, completed=done, description=f"{rep}: {slot.cell.describe()}"
        )

    def finished(self, slot: Slot, records: list[TrialRecord], done: int, total: int) -> None:
        self.progress.update(self.task, total=total, completed=done)
        for record in records[:1]:  # the cell's knobs, once for all its steps
            knob = trialfacts.flags(record.provenance).get("knob-restore-failed")
            if knob:
                self.progress.console.print(
                    f"  warning: knob not restored after {record.config}: {knob}",
                    style="red",
                    markup=False,
                    highlight=False,
                )
        for record in records:
            if record.status == "ok":
                continue
            shown = numbers.settings(record.params)
            self.progress.console.print(
                f"  {record.status}: {record.config} · {record.workload} {shown}: {record.message}",
                style="yellow",
                markup=False,
                highlight=False,
            )
