"""A toy run kind, whole in this one file: `fsbench laps`, a run that times a few laps of
a stopwatch. It has what every run kind has (store/runkinds.py): a facts model kept in
the run's own column, a command that makes it and resumes it (`fsbench laps --resume`),
a report in every format of `fsbench report`; and it lives through the one run life
cycle (execute/session.py), so an interrupt leaves it `interrupted` for `--resume`.

`--stop-after K` interrupts it after K laps, as Ctrl-C would."""

from __future__ import annotations

import time
from typing import Annotated

import typer
from pydantic import BaseModel

from fsbench.cli.app import app
from fsbench.cli.common import DbOption
from fsbench.execute import session
from fsbench.plan.model import Plan
from fsbench.reports.document import Cell, Document, Table, Wants, columns
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
    report=f"{__name__}:report",
    comparable=False,
)


def laps(
    run: Annotated[str | None, typer.Argument(help="With --resume: the run id.")] = None,
    count: Annotated[int, typer.Option("--laps")] = 3,
    stop_after: Annotated[int, typer.Option("--stop-after")] = 0,
    resume: Annotated[bool, typer.Option("--resume")] = False,
    db: DbOption = None,
) -> None:
    """Time a few laps of a stopwatch (a toy run kind)."""
    store = Store(db)
    if resume:
        record = session.to_resume(store, LAPS, run)
        run_id, facts = record.id, LAPS.facts_of(record)
        store.reopen_run(run_id)
    else:
        facts = LapsFacts(laps=count)
        # Every run keeps a plan; a stopwatch's names no more than it must.
        plan = Plan.model_validate(
            {"name": "laps", "fs": [{"type": "ext4"}], "workload": [{"name": "fs_mark"}]}
        )
        run_id = session.create(
            store, plan, [], {"kind": "none"}, ["fsbench", "laps"], {}, kind=NAME,
            facts=facts.model_dump(),
        )  # fmt: skip
    with session.lived(store, run_id) as life:
        while len(facts.seconds) < facts.laps:
            if stop_after and len(facts.seconds) >= stop_after:
                raise KeyboardInterrupt
            start = time.monotonic()
            time.sleep(0.01)
            facts.seconds.append(time.monotonic() - start)
            store.set_facts(run_id, facts.model_dump())
    typer.echo(f"run {run_id}: {len(facts.seconds)} laps" + (" (interrupted)" * life.interrupted))
    if life.interrupted:
        raise typer.Exit(130)


def report(store: Store, run_id: int, wants: Wants) -> Document:
    """The run's document, which every format of `fsbench report` writes."""
    facts = LapsFacts.model_validate(store.get_run(run_id).facts)
    said = f"laps run {run_id}: {len(facts.seconds)} of {facts.laps} laps"
    laps = Table("laps", columns(["laps"]), ((Cell(said),),))
    return Document("laps", said, (laps,), facts.model_dump())


KINDS.register(LAPS)
app.command(NAME)(laps)
