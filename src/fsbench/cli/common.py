"""Options shared by several commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fsbench.plan import DEFAULT_WORKDIR

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar="FSBENCH_DB",
        help="Result store: an SQLite file path, or postgresql://USER[:PASSWORD]@HOST[:PORT]/DB "
        "(a socket directory: postgresql://USER@/DB?host=/run/postgresql); a password is "
        "never stored or shown \\[default: ~/.local/share/fsbench/results.db].",
        show_default=False,
    ),
]
WorkdirOption = Annotated[
    Path,
    typer.Option("--workdir", help="Where loop images and mountpoints go."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout.")]
DEFAULT_WORKDIR_PATH = DEFAULT_WORKDIR
