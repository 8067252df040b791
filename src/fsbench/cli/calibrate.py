"""`fsbench calibrate`: the A/A self-check. The plan's workloads on one filesystem config,
measured as two identical configs; says what this machine can tell apart."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer
from rich.console import Console

from fsbench.analysis import aa_check as calibration
from fsbench.cli import planflags as pf
from fsbench.cli import targetflags
from fsbench.cli.common import DbOption, JsonOption, NoReportOption
from fsbench.cli.run import write_report
from fsbench.execute import session
from fsbench.execute.loop import GridDriver
from fsbench.plan import model as planning
from fsbench.reports.aa_screen import document, print_screen
from fsbench.store.results import Store
from fsbench.store.runkinds import CALIBRATION

DEFAULT_REPS = 5


@pf.with_plan_flags(skip=("age", "max_reps", "ci_target", "margin", "budget", "steady", "warmup"))
@targetflags.with_target_flags()
def calibrate(
    reps: Annotated[
        str | None,
        typer.Option("--reps", help=f"Repetitions of each twin \\[default: {DEFAULT_REPS}]."),
    ] = None,
    no_report: NoReportOption = False,
    db: DbOption = None,
    json_out: JsonOption = False,
    **given: Any,
) -> None:
    """Measure this machine's noise: the plan's workloads on its first filesystem config
    (default: the quick preset on ext4) twice, as configs A and B. Prints, per workload,
    the CV, any order effect, whether identical configs got a winner, and the smallest
    difference a comparison can resolve; stored, so later reports warn below it."""
    built = pf.build(pf.flags_of(given, reps=reps or str(DEFAULT_REPS)))
    plan = calibration.aa_plan(built.plan)
    cells = planning.expand(plan, built.overrides)
    store = Store(db)
    life = session.run(GridDriver(store, plan, cells, overrides=built.overrides, kind=CALIBRATION))
    run = store.get_run(life.run_id)
    noise = calibration.analyze(run, store.get_trials(life.run_id))
    if json_out:
        typer.echo(json.dumps(document(run, noise), indent=2))
    else:
        console = Console() if sys.stdout.isatty() else Console(width=160)
        print_screen(console, run, noise)
    if not no_report:
        write_report(store, life.run_id)
    raise typer.Exit(GridDriver.exit_code(store, run))


# Where `fsbench --help` lists it (app.py registers every command module by its rank).
RANK = 20


def register(app: typer.Typer) -> None:
    app.command("calibrate")(calibrate)
