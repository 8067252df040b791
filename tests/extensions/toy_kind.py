"""A toy run kind, whole in this one file: `fsbench laps`, a run that times a few laps of
a stopwatch. It has what every run kind has (store/runkinds.py): a driver (what a run is
and does: how one starts, how one goes on from the store, its body), a facts model kept in
the run's own column, a command that makes it, a report in every format of `fsbench
report`. Its life (the store, interrupts, the end, `fsbench resume`) is the one session's
(execute/session.py); it runs no plan.

`--stop-after K` interrupts it after K laps, as Ctrl-C would."""

from __future__ import annotations

import time
from typing import Annotated

import typer
from pydantic import BaseModel

from fsbench.cli.app import app
from fsbench.cli.common import DbOption
from fsbench.execute import session
from fsbench.reports.document import Cell, Document, Table, Wants, columns
from fsbench.store.records import RunRecord
from fsbench.store.results import Store
from fsbench.store.runkinds import KINDS, RunKind

NAME = "laps"


class LapsFacts(BaseModel):
    laps: int
    seconds: list[float] = []


LAPS = RunKind(
    NAME,
    "stopwatch of fsbench laps",
    "fsbench laps",
    f"{__name__}:LapsFacts",
    driver=f"{__name__}:Laps",
    report=f"{__name__}:report",
    comparable=False,
)


class Laps(session.Driver):
    """Laps of a stopwatch, each kept with the run as it ends."""

    kind = LAPS

    def __init__(
        self, store: Store, facts: LapsFacts, stop_after: int = 0, record: RunRecord | None = None
    ) -> None:
        self.store, self.facts, self.stop_after, self.record = store, facts, stop_after, record

    @classmethod
    def resume(cls, store: Store, record: RunRecord) -> Laps:
        return cls(store, LAPS.facts_of(record), record=record)

    def start(self) -> session.NewRun:
        return session.NewRun(name=NAME, facts=self.facts)

    def body(self, life: session.Life) -> None:
        while len(self.facts.seconds) < self.facts.laps:
            if self.stop_after and len(self.facts.seconds) >= self.stop_after:
                raise KeyboardInterrupt
            start = time.monotonic()
            time.sleep(0.01)
            self.facts.seconds.append(time.monotonic() - start)
            life.store.set_facts(life.run_id, self.facts.model_dump())


def laps(
    count: Annotated[int, typer.Option("--laps")] = 3,
    stop_after: Annotated[int, typer.Option("--stop-after")] = 0,
    db: DbOption = None,
) -> None:
    """Time a few laps of a stopwatch (a toy run kind)."""
    life = session.run(Laps(Store(db), LapsFacts(laps=count), stop_after))
    typer.echo(f"run {life.run_id}: {count} laps")


def report(store: Store, run_id: int, wants: Wants) -> Document:
    """The run's document, which every format of `fsbench report` writes."""
    facts = LapsFacts.model_validate(store.get_run(run_id).facts)
    said = f"laps run {run_id}: {len(facts.seconds)} of {facts.laps} laps"
    laps = Table("laps", columns(["laps"]), ((Cell(said),),))
    return Document("laps", said, (laps,), facts.model_dump())


KINDS.register(LAPS)
app.command(NAME)(laps)
