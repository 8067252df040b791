"""Options shared by several commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fsbench.plan.targets import DEFAULT_WORKDIR
from fsbench.reports import formats
from fsbench.store.dburl import default_db_path


def shown_path(path: Path) -> str:
    """A path as help shows it: under the home directory as ~/..."""
    home = Path.home()
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)


DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar="FSBENCH_DB",
        help="Result store: an SQLite file path, or postgresql://USER[:PASSWORD]@HOST[:PORT]/DB "
        "(a socket directory: postgresql://USER@/DB?host=/run/postgresql); a password is "
        f"never stored or shown \\[default: {shown_path(default_db_path())}].",
        show_default=False,
    ),
]
WorkdirOption = Annotated[
    Path,
    typer.Option("--workdir", help="Where loop images and mountpoints go."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout.")]
NoReportOption = Annotated[
    bool, typer.Option("--no-report", help="Do not write the HTML report and charts at the end.")
]
OutputOption = Annotated[Path | None, typer.Option("--output", "-o", help="Write to a file.")]
ReportFormatOption = Annotated[
    str,
    typer.Option(
        "--format", "-f", help=f"{formats.listed(formats.REPORT)}, or a format a plugin adds."
    ),
]
AllMetricsOption = Annotated[
    bool, typer.Option("--all-metrics", help="Every metric, not only the headline ones.")
]
DEFAULT_WORKDIR_PATH = DEFAULT_WORKDIR
