"""`fsbench resume [RUN]`: go on with an interrupted or killed run, whatever its kind,
through its kind's driver (execute/session.py); then its report, as `fsbench report`."""

from __future__ import annotations

from typing import Annotated

import typer

from fsbench.cli.common import DbOption, JsonOption
from fsbench.cli.report import report
from fsbench.execute import session
from fsbench.reports import formats
from fsbench.store.results import Store


def resume(
    run_id: Annotated[
        int | None,
        typer.Argument(metavar="[RUN]", help="Run id \\[default: the last unfinished run]."),
    ] = None,
    db: DbOption = None,
    json_out: JsonOption = False,
) -> None:
    """Go on with an interrupted or killed run of any kind (a comparison, a calibration, a
    race, a bisection, a run on many hosts): what it finished is kept, the rest runs. Then
    its report, as `fsbench report RUN` prints it; the exit status is its command's."""
    store = Store(db)
    record = session.to_resume(store, None, None if run_id is None else str(run_id))
    driver = session.driver_for(store, record)
    fmt = formats.JSON if json_out else formats.TABLE

    def shown(rid: int) -> None:
        report(rid, fmt, None, False, None, db)

    # Interrupted, a run made of parts shows what its hosts finished, as its command does.
    life = session.run(driver, on_interrupt=shown if driver.kind.has_parts else None)
    shown(life.run_id)
    done = store.get_run(life.run_id)
    raise typer.Exit(type(driver).exit_code(store, done))


# Where `fsbench --help` lists it (app.py registers every command module by its rank).
RANK = 12


def register(app: typer.Typer) -> None:
    app.command("resume")(resume)
