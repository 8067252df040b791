"""`fsbench record -o TRACE -- CMD ...`: a command's filesystem calls, recorded into a
trace the `replay` workload replays on each config (docs/replay.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from fsbench.cli.common import JsonOption
from fsbench.system import numbers
from fsbench.workloads.replay.record import record as record_command


def record(
    command: Annotated[
        list[str],
        typer.Argument(metavar="CMD...", help="The command and its arguments, after --."),
    ],
    output: Annotated[
        Path, typer.Option("-o", "--output", help="The trace written (gzip).")
    ] = Path("trace.fsbt.gz"),
    directory: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            help="Run the command in this tree (its calls on it are recorded) \\[default: an "
            "empty scratch directory, removed after].",
        ),
    ] = None,
    with_data: Annotated[
        bool,
        typer.Option(
            "--with-data",
            help="Keep the starting tree's contents in the trace (else a replay fills its "
            "files with pseudo-random bytes of the recorded sizes).",
        ),
    ] = False,
    json_out: JsonOption = False,
) -> None:
    """Run CMD under strace in a directory and record its filesystem calls and those of
    its children (per thread, with timestamps, durations and results) and the starting
    tree it touched, into a trace: `fsbench run --workload replay --set trace=FILE`
    replays it on each filesystem. Exits with the command's status."""
    got = record_command(command, output, directory=directory, with_data=with_data)
    rep = got.report
    if json_out:
        typer.echo(json.dumps({"exit_status": got.exit_status, **rep}, indent=2))
    else:
        tree = rep["tree"]
        typer.echo(
            f"{got.trace}: {numbers.count(rep['calls'])} calls by {rep['threads']} threads on "
            f"{numbers.count(rep['paths'])} paths; starting tree {tree['files']} files, "
            f"{tree['dirs']} directories, {numbers.size(tree['bytes'])}"
        )
        cost = rep["tracer_cost_ns"]
        typer.echo(
            f"strace's cost per call: {numbers.duration(cost['per_call'] / 1e9)}, "
            f"{numbers.duration(cost['gap'] / 1e9)} of it before the call (taken off the "
            "recorded gaps a replay with timing=recorded waits)"
        )
        if rep["cpu_latency_not_held"]:
            typer.echo(
                f"the CPUs were free to idle deeply ({rep['cpu_latency_not_held']}): "
                "strace's cost per call may have varied during the recording"
            )
        if rep.get("waits"):
            typer.echo(
                f"waits for other threads (futex): {numbers.count(rep['waits'])}, "
                f"{numbers.duration(rep['waited_s'])} in all (not think time: not waited "
                "again by a replay with timing=recorded)"
            )
        kinds = ", ".join(f"{k} {numbers.count(n)}" for k, n in rep["calls_by_kind"].items())
        typer.echo(f"calls: {kinds or 'none'}")
        left = sum(rep["unrecorded"].values())
        if left:
            typer.echo(
                f"not in the trace: {numbers.count(left)} calls outside the tree or never "
                "replayed (`fsbench-engine trace check FILE` lists them)"
            )
        if got.exit_status:
            typer.echo(f"the command exited with status {got.exit_status}")
    raise typer.Exit(got.exit_status)


# Where `fsbench --help` lists it (app.py registers every command module by its rank).
RANK = 55


def register(app: typer.Typer) -> None:
    app.command("record")(record)
