"""`fsbench doctor`: what this machine can test, what is missing; releases stale resources."""

from __future__ import annotations

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from fsbench.cli.common import DEFAULT_WORKDIR_PATH, DbOption, JsonOption, WorkdirOption
from fsbench.execute import doctor as checks
from fsbench.execute.targets import stale


def doctor(
    json_out: JsonOption = False,
    workdir: WorkdirOption = DEFAULT_WORKDIR_PATH,
    db: DbOption = None,
) -> None:
    """Show what this machine can test and what is missing (and clean up after crashed runs)."""
    released = stale.release_stale(workdir) if workdir.exists() else []
    report = checks.examine(workdir, db, released)
    if json_out:
        typer.echo(report.model_dump_json(indent=2))
    else:
        _print(report)
    raise typer.Exit(0 if report.ok else 1)


def _mark(ok: bool) -> str:
    return "[green]yes[/]" if ok else "[red]no[/]"


def _print(report: checks.DoctorReport) -> None:
    console = Console()
    t = Table(title="machine", box=box.SIMPLE_HEAD, title_justify="left")
    t.add_column("check")
    t.add_column("ok")
    t.add_column("detail", overflow="fold")
    for c in report.checks:
        t.add_row(c.name, _mark(c.ok), c.detail)
    console.print(t)
    t = Table(title="filesystems", box=box.SIMPLE_HEAD, title_justify="left")
    for col in ("filesystem", "available", "tools version", "reason"):
        t.add_column(col, overflow="fold")
    for f in report.filesystems:
        t.add_row(f.name, _mark(f.available), f.version or "-", "" if f.available else f.reason)
    console.print(t)
    t = Table(title="workloads", box=box.SIMPLE_HEAD, title_justify="left")
    for col in ("workload", "available", "tools", "reason"):
        t.add_column(col, overflow="fold")
    for w in report.workloads:
        t.add_row(
            w.name,
            _mark(w.available),
            ", ".join(w.tools) or "(built in)",
            "" if w.available else w.reason,
        )
    console.print(t)
    for status in report.targets.values():
        t = Table(title=status.title, box=box.SIMPLE_HEAD, title_justify="left")
        t.add_column("usable")
        for column in status.columns:
            t.add_column(column, overflow="fold")
        usable = _mark(status.usable) + ("" if status.usable else f" {status.reason}")
        for row in status.rows or [[]]:
            t.add_row(usable, *row)
        console.print(t)
    for line in report.released:
        console.print(f"released stale: {line}", style="yellow", markup=False)


# Where `fsbench --help` lists it (app.py registers every command module by its rank).
RANK = 30


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
