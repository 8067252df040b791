"""`fsbench fleet run`: one plan on every host of an Ansible inventory, one store."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Annotated

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
from fsbench.cli.common import DbOption, JsonOption
from fsbench.cli.report import emit
from fsbench.cli.run import (
    EXIT_FAILED,
    execute,
    exit_status,
    finish,
    resumable,
    resume_run,
    sigterm_interrupts,
)
from fsbench.execute import loop as matrix
from fsbench.fleet import inventory as inv
from fsbench.fleet.executor import DEFAULT_POLL, DEFAULT_UNREACHABLE_TIMEOUT, FleetExecutor, HostRun
from fsbench.fleet.member import MemberEntry, ProgressFile
from fsbench.plan import model as planning
from fsbench.store.results import Store
from fsbench.system.errors import FsbenchError

app = typer.Typer(help="Many machines: one plan on a fleet through Ansible, one store.")

InventoryOpt = Annotated[
    Path, typer.Option("--inventory", "-i", help="An Ansible inventory (INI, YAML, script).")
]
LimitOpt = Annotated[
    str | None, typer.Option("--limit", "-l", help="Only hosts matching this Ansible pattern.")
]
PollOpt = Annotated[
    float, typer.Option("--poll", help="Seconds between looks at the hosts' progress.")
]
UnreachableOpt = Annotated[
    float,
    typer.Option(
        "--unreachable-timeout",
        help="Seconds a started host may stay unreachable (since it last answered) before it "
        "fails alone; its run may go on there, and --resume finishes what is missing.",
    ),
]
ForksOpt = Annotated[int, typer.Option("--forks", help="Hosts Ansible talks to at once.")]
ControllerDirOpt = Annotated[
    Path,
    typer.Option("--controller-dir", help="Where the controller keeps logs and fetched stores."),
]


class HostProgress:
    """One bar per host: trials done / total and its ETA, or its state."""

    def __init__(self, err: Console) -> None:
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

    def __call__(self, hosts: list[HostRun]) -> None:
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
def fleet_run(
    plan_file: pf.PlanFile = None,
    inventory: InventoryOpt = Path("hosts.ini"),
    limit: LimitOpt = None,
    preset: pf.PresetOpt = None,
    fs: pf.FsOpt = [],  # noqa: B006 - typer's list options
    workload: pf.WorkloadOpt = [],  # noqa: B006
    set_: pf.SetOpt = [],  # noqa: B006
    knob: pf.KnobOpt = [],  # noqa: B006
    age: pf.AgeOpt = [],  # noqa: B006
    reps: pf.RepsOpt = None,
    max_reps: pf.MaxRepsOpt = None,
    ci_target: pf.CiTargetOpt = None,
    margin: pf.MarginOpt = None,
    budget: pf.BudgetOpt = None,
    steady: pf.SteadyOpt = None,
    scale: pf.ScaleOpt = None,
    trial_timeout: pf.TrialTimeoutOpt = None,
    seed: pf.SeedOpt = None,
    warmup: pf.WarmupOpt = None,
    image_size: pf.ImageSizeOpt = None,
    poll: PollOpt = DEFAULT_POLL,
    unreachable_timeout: UnreachableOpt = DEFAULT_UNREACHABLE_TIMEOUT,
    forks: ForksOpt = 20,
    controller_dir: ControllerDirOpt = Path("/var/tmp/fsbench-fleet-controller"),
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Finish an interrupted fleet run (its id in place of PLAN, or the last "
            "unfinished one): only what is missing, on the hosts that miss it.",
        ),
    ] = False,
    db: DbOption = None,
    json_out: JsonOption = False,
) -> None:
    """Run the plan on every inventory host (each its own loop image, or the disk its
    fsbench_device names), as async Ansible tasks, into one store: a PostgreSQL --db the
    hosts write into, or their own stores fetched and merged. Prints per-host progress,
    then one table with the host beside each config."""
    flags = pf.flags_of(locals())
    store = Store(db)
    err = Console(stderr=True)
    if resume:
        run_id, plan, overrides = resumable(store, plan_file)
        record = store.get_run(run_id)
        if record.kind != "fleet":
            raise FsbenchError(f"run {run_id} is not a fleet run: fsbench run --resume {run_id}")
        uid = record.uid
        cells = planning.expand(plan, overrides)
    else:
        built = pf.build(flags)
        run_id, uid = None, uuid.uuid4().hex
        # Each host gets the plan alone: --set values go into it.
        plan = matrix.with_seed(planning.with_overrides(built.plan, built.overrides))
        overrides, cells = {}, planning.expand(plan)
        if [c.key for c in cells] != [c.key for c in built.cells]:
            raise FsbenchError("--set values could not be written into the plan")
    hosts = inv.load(inventory, limit)
    display = HostProgress(err)
    executor = FleetExecutor(
        plan,
        cells,
        hosts=hosts,
        inventory=inventory.resolve(),
        store=store,
        uid=uid,
        workdir=controller_dir,
        poll=poll,
        unreachable_timeout=unreachable_timeout,
        forks=forks,
        on_progress=display,
    )
    err.print(
        f"fsbench fleet: {plan.name} on {len(hosts)} hosts "
        f"({', '.join(h.name for h in hosts)}), store {store}",
        markup=False,
        highlight=False,
    )
    with sigterm_interrupts(), display.progress:
        outcome = matrix.run(
            plan,
            cells,
            store,
            argv=sys.argv,
            overrides=overrides,
            resume_run=run_id,
            executor=executor,
            kind="fleet",
            uid=uid,
        )
    failed = [h for h in executor.hosts if h.state != "done"]
    for h in failed:
        # One line each, however long: scripts and people grep for "host NAME failed".
        err.print(
            f"host {h.host.name} failed: {h.error}",
            style="red",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    emit(store, outcome.run_id, "json" if json_out else "table", None, False)
    if outcome.interrupted:
        err.print(
            f"fsbench fleet: interrupted; `fsbench fleet run --resume {outcome.run_id} "
            f"--inventory {inventory}` finishes it",
            style="yellow",
        )
        raise typer.Exit(130)
    raise typer.Exit(EXIT_FAILED if failed else exit_status(store, outcome.run_id))


@app.command("member", hidden=True)
def fleet_member(
    plan_file: pf.PlanFile = None,
    entry: Annotated[
        str, typer.Option("--entry", help="This host's part, as JSON (fleet.member.MemberEntry).")
    ] = "",
    workdir: pf.WorkdirOpt = None,
    device: pf.DeviceOpt = None,
    destroy_data: pf.DestroyOpt = False,
    db: DbOption = None,
    json_out: JsonOption = False,
) -> None:
    """One host's part of a fleet run, as the controller's playbook starts it: the plan into
    a member run of the fleet run, its progress in the entry's file. A part already there
    is resumed, or, finished, only reported."""
    try:
        job = MemberEntry.model_validate_json(entry)
    except ValidationError as exc:
        raise FsbenchError(f"--entry: not a member entry: {planning.one_line(exc)}") from None
    flags = pf.flags_of(locals())
    store = Store(db)
    member = store.part(job.uid, job.host)
    if member is not None and member.status == "finished":  # the controller sees it at once
        stored = len({t.seq for t in store.get_trials(member.id)})
        ProgressFile(job.progress, matrix.Hooks()).done(member.id, stored)
        finish(store, matrix.Outcome(member.id), json_out, report=False)

    def watch(bar: matrix.Hooks) -> matrix.Hooks:
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
