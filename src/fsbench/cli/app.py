"""The `fsbench` command: one module per subcommand, no logic here."""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from fsbench.cli import doctor, listing, report, run
from fsbench.errors import FsbenchError

app = typer.Typer(
    name="fsbench",
    help="Compare filesystems and their mkfs/mount options with real workloads, done right.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
app.command("run")(run.run)
app.command("doctor")(doctor.doctor)
app.command("report")(report.report)
app.command("list")(listing.list_)


def main() -> None:
    try:
        app()
    except FsbenchError as exc:
        Console(stderr=True).print(f"fsbench: error: {exc}", style="red", highlight=False,
                                   markup=False)
        sys.exit(2)
    except KeyboardInterrupt:
        Console(stderr=True).print("fsbench: interrupted", style="yellow")
        sys.exit(130)
