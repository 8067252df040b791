"""`fsbench compare RUN_A RUN_B`: two stored runs cell by cell, significance marked."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import typer

from fsbench.analysis.rows import Row
from fsbench.cli.common import (
    AllMetricsOption,
    DbOption,
    JsonOption,
    OutputOption,
    ReportFormatOption,
)
from fsbench.cli.report import PIPED_WIDTH, write
from fsbench.reports import compare as cmp
from fsbench.reports import export, formats, hosts, source
from fsbench.store.records import RunRecord
from fsbench.store.results import Store
from fsbench.store.runkinds import kind_of
from fsbench.system.errors import FsbenchError


def compare(
    run_a: Annotated[int, typer.Argument(metavar="RUN_A", help="The baseline run (A).")],
    run_b: Annotated[
        int | None,
        typer.Argument(metavar="[RUN_B]", help="The run compared with it (B); not with --by."),
    ] = None,
    by: Annotated[
        str | None,
        typer.Option(
            "--by",
            metavar="DIM[=A,B]",
            help="Within RUN_A: the cells under one value of a dimension against another, "
            "e.g. --by kernel (two kernels), --by vm.dirty_ratio=10,40, or in a run on many "
            "machines --by host=A,B or --by group=baseline,dev (with what differs between "
            "the hosts).",
        ),
    ] = None,
    fmt: ReportFormatOption = formats.TABLE,
    output: OutputOption = None,
    all_metrics: AllMetricsOption = False,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """B against A for every cell both runs have: means, ratio B/A with its 95% CI, and a
    verdict only where Welch's t-test says so (p < 0.05, Holm-corrected)."""
    exporter = export.exporter(formats.JSON if json_out else fmt)
    store = Store(db)
    machines: list[hosts.HostFacts] = []  # the hosts compared, for --by host/group
    if by is not None:
        if run_b is not None:
            raise FsbenchError("--by compares within one run: give RUN_A only")
        run, rows = _rows(store, run_a)
        level_a, level_b, result = cmp.compare_within(run_a, rows, by, all_metrics)
        name = by.partition("=")[0].strip()
        a = replace(run, name=f"{run.name}, {name}={level_a}")
        b = replace(run, name=f"{run.name}, {name}={level_b}")
        if name in ("host", "group") and store.parts(run.uid):
            machines = _machines(store, run, name, (level_a, level_b))
    elif run_b is None:
        raise FsbenchError("compare needs RUN_B, or --by KNOB to compare within RUN_A")
    else:
        (a, rows_a), (b, rows_b) = _rows(store, run_a), _rows(store, run_b)
        result = cmp.compare_runs(a, rows_a, b, rows_b, all_metrics)
    document = cmp.document(a, b, result, machines)
    write(document, exporter, output, file_width=PIPED_WIDTH)


def _machines(
    store: Store, run: RunRecord, by: str, levels: tuple[str, str]
) -> list[hosts.HostFacts]:
    """The hosts on either side of a --by host or --by group comparison."""
    found = hosts.hosts_of(store, run)
    if by == "host":
        return [h for h in found if h.name in levels]
    return [h for h in found if set(h.groups) & set(levels)]


def _rows(store: Store, run_id: int) -> tuple[RunRecord, list[Row]]:
    """A run and its rows, as every report reads them (a run on many machines, from its
    hosts); a run whose kind compare does not take (a race's configs ran different numbers
    of rounds, a bisection's commits are no configs) is refused, naming its report."""
    kind = kind_of(store.get_run(run_id))
    if not kind.comparable:
        raise FsbenchError(
            f"run {run_id} is a {kind.title}, which compare does not take: "
            f"`fsbench report {run_id}` tells it"
        )
    loaded = source.load(store, run_id)
    return loaded.run, loaded.rows


# Where `fsbench --help` lists it (app.py registers every command module by its rank).
RANK = 50


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)
