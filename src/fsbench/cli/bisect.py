"""`fsbench bisect`: find the kernel commit that changed a metric, with a statistical gate
at every step (vm/bisect.py). See docs/bisect.md."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from fsbench.cli import planflags as pf
from fsbench.cli import targetflags
from fsbench.cli.common import DbOption, JsonOption
from fsbench.plan.model import MIN_AUTO_REPS
from fsbench.reports import bisect as report
from fsbench.reports import export, formats
from fsbench.reports.document import Chart
from fsbench.store.results import Store
from fsbench.system.errors import FsbenchError
from fsbench.vm.bisect import BisectArgs, Bisection, Refused
from fsbench.vm.kbuild import KBUILD_CACHE

RANK = 17
EXIT_REFUSED, EXIT_UNDECIDED = 5, 6

DEFAULT_REPS = 5  # per commit, when --max-reps is not given: the bisection's budget


def reps_per_commit(max_reps: int | None) -> int:
    """A bisection's --max-reps (bisect's, or history's --bisect): 5 when not given, at
    least MIN_AUTO_REPS, said in one line."""
    reps = DEFAULT_REPS if max_reps is None else max_reps
    if reps < MIN_AUTO_REPS:
        raise FsbenchError(
            f"--max-reps {reps}: at least {MIN_AUTO_REPS} (each endpoint is measured that "
            "often before the gate judges a step)"
        )
    return reps


@targetflags.with_target_flags(only="vm")
def bisect(
    linux: Annotated[
        Path, typer.Option("--linux", help="Your Linux git tree (bisected in place).")
    ],
    good: Annotated[str, typer.Option("--good", help="A commit (ref) without the change.")],
    bad: Annotated[str, typer.Option("--bad", help="A commit (ref) with the change.")],
    fs: pf.FsOpt = [],  # noqa: B006 - typer's list options
    workload: pf.WorkloadOpt = [],  # noqa: B006
    set_: pf.SetOpt = [],  # noqa: B006
    metric: Annotated[
        str | None,
        typer.Option("--metric", help="The metric bisected \\[default: the workload's headline]."),
    ] = None,
    max_reps: pf.MaxRepsOpt = None,
    scale: pf.ScaleOpt = None,
    margin: pf.MarginOpt = None,
    trial_timeout: pf.TrialTimeoutOpt = None,
    warmup: pf.WarmupOpt = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="Your kernel .config \\[default: tinyconfig + kvm_guest.config + what the "
            "guest and the filesystems need, all built in].",
        ),
    ] = None,
    jobs: Annotated[
        int | None, typer.Option("--jobs", "-j", help="make -j \\[default: CPUs].")
    ] = None,
    kbuild_cache: Annotated[
        Path,
        typer.Option("--kbuild-cache", help="Build directories and ccache, kept between runs."),
    ] = KBUILD_CACHE,
    recheck: Annotated[
        bool,
        typer.Option("--recheck/--no-recheck", help="Measure the endpoints again at the end."),
    ] = True,
    chart: Annotated[
        Path | None,
        typer.Option("--chart", help="Write the metric over the commits tested (SVG) here."),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option("--resume", help="Continue this tree's killed bisection from its log."),
    ] = False,
    db: DbOption = None,
    json_out: JsonOption = False,
    **target_flags: Any,
) -> None:
    """Bisect a kernel performance change: build, boot and measure each commit git bisect
    picks, and mark it good or bad only when its measurements are significantly closer to
    one endpoint's than to the other's."""
    flags = pf.flags_of(
        {"fs": fs, "workload": workload, "set_": set_, "scale": scale, "margin": margin,
         "trial_timeout": trial_timeout, "warmup": warmup, **target_flags},
        target_kind="vm", reps="1",
    )  # fmt: skip
    built = pf.build(flags)
    max_reps = reps_per_commit(max_reps)
    store = Store(db)
    err = Console(stderr=True, highlight=False)
    args = BisectArgs(
        linux=linux,
        good=good,
        bad=bad,
        metric=metric,
        max_reps=max_reps,
        config=config,
        jobs=jobs,
        kbuild_cache=kbuild_cache,
        recheck=recheck,
    )
    job = Bisection(
        args, built.plan, built.cells, store, sys.argv, log=lambda s: err.print(s, soft_wrap=True)
    )
    drive(job, store, resume, json_out, chart)


def drive(
    job: Bisection,
    store: Store,
    resume: bool = False,
    json_out: bool = False,
    chart: Path | None = None,
) -> None:
    """Run the bisection (or go on with it) and print its report; exits 5 when refused,
    6 when no first bad commit was named. `fsbench history --bisect` hands over here."""
    try:
        outcome = job.resume() if resume else job.start()
    except Refused as exc:
        print(exc, file=sys.stderr)  # one line, never wrapped
        raise typer.Exit(EXIT_REFUSED) from None
    document = report.document(store.get_run(outcome.run_id), store.get_trials(outcome.run_id))
    if chart is not None:
        _write_chart(report.chart(document.data), chart)
    print(export.write(document, formats.JSON if json_out else formats.TABLE), end="")
    if outcome.first_bad is None:
        raise typer.Exit(EXIT_UNDECIDED)


def _write_chart(block: Chart, path: Path) -> None:
    """The metric over the commits tested, as SVG at `path`."""
    from fsbench.reports.charts.points import points_chart  # matplotlib: only when drawing

    with tempfile.TemporaryDirectory(prefix="fsbench-charts-") as tmp:
        drawn = points_chart(block, Path(tmp)).path("svg")
        assert drawn is not None
        shutil.copyfile(drawn, path)


def register(app: typer.Typer) -> None:
    app.command("bisect")(bisect)
