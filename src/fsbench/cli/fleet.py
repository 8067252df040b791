"""`fsbench fleet run`: one plan on every host of an Ansible inventory, one store."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from pydantic import ValidationError

from fsbench.cli import planflags as pf
from fsbench.cli import targetflags
from fsbench.cli.common import DbOption, JsonOption
from fsbench.cli.report import emit
from fsbench.cli.run import finish
from fsbench.execute import loop, session
from fsbench.execute.hooks import Hooks
from fsbench.execute.loop import GridDriver
from fsbench.fleet.driver import FleetDriver, stored_target
from fsbench.fleet.member import MemberEntry, ProgressFile
from fsbench.fleet.target import FLEET_RUN
from fsbench.plan import model as planning
from fsbench.store.results import Store
from fsbench.system.errors import FsbenchError

app = typer.Typer(help="Many machines: one plan on a fleet through Ansible, one store.")

FLEET = FLEET_RUN.name
RESUME_HELP = (
    "Finish an interrupted fleet run (its id in place of PLAN, or the last unfinished one): "
    "only what is missing, on the hosts that miss it (the fleet's spelling of `fsbench "
    "resume`, with the target flags given now)."
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
    if resume:
        arg = None if flags.plan_file is None else str(flags.plan_file)
        record = session.to_resume(store, FLEET_RUN, arg)
        # The fleet target as stored, with the target flags given now.
        driver = FleetDriver.resume(store, record, pf.target_of(stored_target(record), flags))
    else:
        built = pf.build(flags)
        # Each host gets the plan alone: --set values go into it.
        plan = loop.with_seed(planning.with_overrides(built.plan, built.overrides))
        cells = planning.expand(plan)
        if [c.key for c in cells] != [c.key for c in built.cells]:
            raise FsbenchError("--set values could not be written into the plan")
        driver = FleetDriver(store, plan, cells, overrides={})

    def stopped(run_id: int) -> None:
        emit(store, run_id, "json" if json_out else "table", None, False)

    life = session.run(driver, on_interrupt=stopped)
    finish(store, life.run_id, json_out, report=False)


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
        finish(store, member.id, json_out, report=False)
    if member is not None:
        driver = GridDriver.resume(store, member)
    else:
        built = pf.build(flags)
        cells, overrides = built.cells, built.overrides
        driver = GridDriver(store, built.plan, cells, overrides=overrides, part=job.part)
    driver.view = ProgressFile(job.progress, driver.view)
    life = session.run(driver)
    finish(store, life.run_id, json_out, report=False)


RANK = 90


def register(parent: typer.Typer) -> None:
    parent.add_typer(app, name="fleet")
