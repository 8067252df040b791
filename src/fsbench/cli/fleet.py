"""`fsbench fleet run`: one plan on every host of an Ansible inventory, one store."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)

from fsbench.cli import planflags as pf
from fsbench.cli import targetflags
from fsbench.cli.common import DbOption, JsonOption
from fsbench.cli.report import emit
from fsbench.cli.run import (
    Display,
    execute,
    finish,
    resumable,
    resume_run,
)
from fsbench.execute import loop as matrix
from fsbench.execute.hooks import Hooks
from fsbench.fleet.executor import HostRun
from fsbench.fleet.member import MemberEntry, ProgressFile
from fsbench.fleet.target import FLEET_RUN, FleetTargetSpec
from fsbench.plan import model as planning
from fsbench.plan.model import Plan
from fsbench.store.results import Store
from fsbench.system.errors import FsbenchError

app = typer.Typer(help="Many machines: one plan on a fleet through Ansible, one store.")

FLEET = FLEET_RUN.name
RESUME_HELP = (
    "Finish an interrupted fleet run (its id in place of PLAN, or the last unfinished one): "
    "only what is missing, on the hosts that miss it."
)


class HostProgress(Display):
    """One bar per host: trials done / total and its ETA, or its state (the fleet executor
    calls `hosts` at every poll)."""

    def __init__(self, err: Console, store: Store) -> None:
        self.err, self.store = err, store
        self.progress = Progress(
            TextColumn("{task.fields[host]:<16}"),
            MofNCompleteColumn(),
            BarColumn(bar_width=24),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TextColumn("{task.description}"),
            console=err,
            transient=False,
        )
        self.tasks: dict[str, TaskID] = {}

    def note(self, text: str) -> None:
        self.err.print(text, markup=False, highlight=False)

    def begin(self, run_id: int, plan: Plan, done: int, total: int, banner: str) -> None:
        self.err.print(
            f"fsbench fleet: run {run_id}, {plan.name} {banner}, store {self.store}",
            markup=False,
            highlight=False,
        )
        self.progress.start()  # only now: a refusal before the run prints one line, no bars

    def hosts(self, hosts: list[HostRun]) -> None:
        for h in hosts:
            name = h.host.name
            if name not in self.tasks:
                self.tasks[name] = self.progress.add_task("", total=None, host=name)
            text = h.state if not h.error else f"{h.state}: {h.error}"
            self.progress.update(
                self.tasks[name],
                total=h.total or None,
                completed=h.done,
                description=text[:90],
            )


@app.command("run")
@pf.with_plan_flags(skip=("target_kind",))
@targetflags.with_target_flags(only="fleet")
def fleet_run(
    resume: Annotated[bool, typer.Option("--resume", help=RESUME_HELP)] = False,
    db: DbOption = None,
    json_out: JsonOption = False,
    **given: Any,
) -> None:
    """Run the plan on every inventory host (each its own loop image, or the disk its
    fsbench_device names), as async Ansible tasks, into one store: a PostgreSQL --db the
    hosts write into, or their own stores fetched and merged. Prints per-host progress,
    then one table with the host beside each config."""
    flags = pf.flags_of(given, target_kind=FLEET)
    store = Store(db)
    err = Console(stderr=True)
    run_id: int | None = None
    if resume:
        run_id, plan, overrides = resumable(store, flags.plan_file, FLEET_RUN)
        # The fleet target as stored (or, stored before it was one, made from the loop
        # image's size), with the target flags given now.
        stored = plan.target.model_dump()
        if not isinstance(plan.target, FleetTargetSpec):
            stored = {"image_size": plan.target.image_size}
        target = pf.target_of(stored, flags)
        plan = plan.model_copy(update={"target": FleetTargetSpec.model_validate(target)})
        cells = planning.expand(plan, overrides)
    else:
        built = pf.build(flags)
        # Each host gets the plan alone: --set values go into it.
        plan = matrix.with_seed(planning.with_overrides(built.plan, built.overrides))
        overrides, cells = {}, planning.expand(plan)
        if [c.key for c in cells] != [c.key for c in built.cells]:
            raise FsbenchError("--set values could not be written into the plan")

    def stopped(outcome: matrix.Outcome) -> None:
        emit(store, outcome.run_id, "json" if json_out else "table", None, False)

    outcome = execute(
        plan,
        cells,
        store,
        overrides,
        resume_run=run_id,
        kind=FLEET,
        display=HostProgress(err, store),
        after_interrupt=stopped,
        resume_command="fsbench fleet run --resume {run} --inventory "
        + str(plan.target.model_dump().get("inventory")),
    )
    finish(store, outcome, json_out, report=False)


@app.command("member", hidden=True)
@targetflags.with_target_flags(only="loop")
def fleet_member(
    plan_file: pf.PlanFile = None,
    entry: Annotated[
        str, typer.Option("--entry", help="This host's part, as JSON (fleet.member.MemberEntry).")
    ] = "",
    db: DbOption = None,
    json_out: JsonOption = False,
    **given: Any,
) -> None:
    """One host's part of a fleet run, as the controller's playbook starts it: the plan into
    a member run of the fleet run, its progress in the entry's file. A part already there
    is resumed, or, finished, only reported."""
    try:
        job = MemberEntry.model_validate_json(entry)
    except ValidationError as exc:
        raise FsbenchError(f"--entry: not a member entry: {planning.one_line(exc)}") from None
    flags = pf.flags_of(given, plan_file=plan_file)
    store = Store(db)
    member = store.part(job.uid, job.host)
    if member is not None and member.status == "finished":  # the controller sees it at once
        stored = len({t.seq for t in store.get_trials(member.id)})
        ProgressFile(job.progress, Hooks()).done(member.id, stored)
        finish(store, matrix.Outcome(member.id), json_out, report=False)

    def watch(bar: Hooks) -> Hooks:
        return ProgressFile(job.progress, bar)

    if member is not None:
        outcome = resume_run(store, Path(str(member.id)), watch)
    else:
        built = pf.build(flags)
        outcome = execute(
            built.plan, built.cells, store, built.overrides, part=job.part, watch=watch
        )
    finish(store, outcome, json_out, report=False)


RANK = 90


def register(parent: typer.Typer) -> None:
    parent.add_typer(app, name="fleet")
