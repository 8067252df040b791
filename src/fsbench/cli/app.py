"""The `fsbench` command: one module per subcommand, no logic here."""

from __future__ import annotations

import sys

import typer

from fsbench.cli import calibrate, compare, doctor, features, fleet, listing, merge, report, run
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
app.command("calibrate")(calibrate.calibrate)
app.command("doctor")(doctor.doctor)
app.command("report")(report.report)
app.command("compare")(compare.compare)
app.command("list")(listing.list_)
app.command("features")(features.features)
app.command("merge")(merge.merge)
app.add_typer(fleet.app, name="fleet")


def main() -> None:
    try:
        app()
    except FsbenchError as exc:
        # One line, never wrapped: scripts and people grep it.
        sys.stderr.write(f"fsbench: error: {exc}\n")
        sys.exit(2)
    except KeyboardInterrupt:
        sys.stderr.write("fsbench: interrupted\n")
        sys.exit(130)
