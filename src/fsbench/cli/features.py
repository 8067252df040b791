"""`fsbench features`: probe each filesystem on small scratch images and print what this
kernel and these tools actually do."""

from __future__ import annotations

import signal
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from fsbench.cli.common import (
    DEFAULT_WORKDIR_PATH,
    JsonOption,
    ReportFormatOption,
    WorkdirOption,
)
from fsbench.cli.report import write
from fsbench.execute.features import registry
from fsbench.execute.features.base import Settings
from fsbench.execute.features.runner import run_features
from fsbench.execute.targets import stale
from fsbench.reports import export, features_table, formats
from fsbench.store.features import save_features
from fsbench.system import filesystems
from fsbench.system.errors import FsbenchError
from fsbench.system.units import parse_size

EXIT_INTERRUPTED = 130


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _split(values: list[str]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def default_filesystems() -> list[str]:
    """Every filesystem of the catalogue: those this kernel lacks show why."""
    return [name for name, fs in filesystems.catalogue().items() if not fs.pseudo]


def features(
    fs: Annotated[
        list[str],
        typer.Option(
            "--fs",
            help="Filesystems, comma list (repeatable) \\[default: every one in the catalogue; "
            "those this kernel lacks show as unavailable].",
            show_default=False,
        ),
    ] = [],  # noqa: B006
    fmt: ReportFormatOption = formats.TABLE,
    json_out: JsonOption = False,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write the table here instead of stdout."),
    ] = None,
    workdir: WorkdirOption = DEFAULT_WORKDIR_PATH,
    probe: Annotated[
        list[str],
        typer.Option(
            "--probe",
            help=f"Only these probes, comma list: {', '.join(p.name for p in registry.probes())}.",
        ),
    ] = [],  # noqa: B006
    evidence: Annotated[
        bool,
        typer.Option("--evidence", help="Print each cell's evidence too (the page has it)."),
    ] = False,
    inode_fs_size: Annotated[
        str, typer.Option("--inode-fs-size", help="Size of the filesystem the inode probe fills.")
    ] = "1G",
    inode_cap: Annotated[
        int, typer.Option("--inode-cap", help="The inode probe stops after this many files.")
    ] = Settings.inode_cap,
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", min=1, help="Filesystems probed at once.")
    ] = Settings.workers,
) -> None:
    """Probe each filesystem on small scratch images: what this kernel and these tools do."""
    exporter = export.exporter(formats.JSON if json_out else fmt)
    names = _split(fs) or default_filesystems()
    for name in names:
        try:
            filesystems.get(name)
        except KeyError as exc:
            raise FsbenchError(str(exc.args[0])) from None
    try:
        chosen = {registry.by_name(n).name for n in _split(probe)}
        probes = [p for p in registry.probes() if p.name in chosen] or list(registry.probes())
        size = parse_size(inode_fs_size)
    except (KeyError, ValueError) as exc:
        raise FsbenchError(str(exc.args[0])) from None
    if not filesystems.is_root():
        raise FsbenchError("fsbench features needs root: it makes loop devices and mounts")
    settings = Settings(inode_fs_size=size, inode_cap=inode_cap, workers=jobs)
    err = Console(stderr=True)
    if workdir.exists():
        for line in stale.release_stale(workdir):
            err.print(f"released stale: {line}", style="yellow", markup=False)
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    progress = Progress(
        TextColumn("features"),
        MofNCompleteColumn(),
        BarColumn(bar_width=24),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=err,
        transient=True,
    )
    bar = progress.add_task("", total=None)

    def on_progress(done: int, total: int, running: list[str]) -> None:
        progress.update(bar, completed=done, total=total, description=", ".join(running))

    try:
        with progress:
            table = run_features(names, workdir, settings, probes, on_progress)
    except KeyboardInterrupt:
        err.print("fsbench: interrupted; every mount and loop device released", style="yellow")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    # Every later run report of this kernel shows the table: only a complete one is kept.
    saved = save_features(table) if len(probes) == len(registry.probes()) else None
    if saved is not None:
        err.print(f"features: kept in {saved} for the HTML reports", markup=False, highlight=False)
    write(features_table.document(table, evidence), exporter, output)


# Where `fsbench --help` lists it (app.py registers every command module by its rank).
RANK = 70


def register(app: typer.Typer) -> None:
    app.command("features")(features)
