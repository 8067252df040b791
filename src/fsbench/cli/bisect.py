"""`fsbench bisect`: find the kernel commit that changed a metric, with a statistical gate
at every step (vm/bisect.py). See docs/bisect.md."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from fsbench.cli import planflags as pf
from fsbench.cli import targetflags
from fsbench.cli.common import DbOption, JsonOption
from fsbench.execute import session
from fsbench.plan.model import MIN_AUTO_REPS
from fsbench.reports import bisect as report
from fsbench.reports import export, formats
from fsbench.reports.document import Chart
from fsbench.store.results import Store
from fsbench.system.errors import FsbenchError
from fsbench.vm import kconfigs
from fsbench.vm.bisect import Bisection
from fsbench.vm.bisect_kind import BISECT, BisectArgs
from fsbench.vm.kbuild import KBUILD_CACHE

RANK = 17

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
        Path | None, typer.Option("--linux", help="Your Linux git tree (bisected in place).")
    ] = None,
    good: Annotated[
        str | None, typer.Option("--good", help="A commit (ref) without the change.")
    ] = None,
    bad: Annotated[
        str | None, typer.Option("--bad", help="A commit (ref) with the change.")
    ] = None,
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
        str | None,
        typer.Option(
            "--config",
            help="A kernel config: `minimal` (the guest's needs and ext4), `default` (also "
            "xfs, btrfs, dm-log-writes), or the path of your .config \\[default: default].",
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
        typer.Option(
            "--resume",
            help="Continue a killed bisection (this --linux tree's, else the last one) from "
            "its stored facts and the tree's log; nothing else needs giving again (the "
            "bisection's spelling of `fsbench resume`).",
        ),
    ] = False,
    db: DbOption = None,
    json_out: JsonOption = False,
    **target_flags: Any,
) -> None:
    """Bisect a kernel performance change: build, boot and measure each commit git bisect
    picks, and mark it good or bad only when its measurements are significantly closer to
    one endpoint's than to the other's."""
    store = Store(db)
    if resume:
        drive(resumed(store, linux), store, json_out, chart)
        return
    if linux is None or good is None or bad is None:
        raise FsbenchError("--linux, --good and --bad name a bisection (--resume needs none)")
    flags = pf.flags_of(
        {"fs": fs, "workload": workload, "set_": set_, "scale": scale, "margin": margin,
         "trial_timeout": trial_timeout, "warmup": warmup, **target_flags},
        target_kind="vm", reps="1",
    )  # fmt: skip
    built = pf.build(flags)
    args = BisectArgs(
        linux, good, bad, metric, reps_per_commit(max_reps), config=kconfigs.choose(config),
        jobs=jobs, kbuild_cache=kbuild_cache, recheck=recheck,
    )  # fmt: skip
    job = Bisection(store, args, built.plan, built.cells, overrides=built.overrides)
    drive(job, store, json_out, chart)


def resumed(store: Store, linux: Path | None) -> Bisection:
    """The bisection `--resume` goes on with: this tree's last unfinished one, or (no
    --linux) the last unfinished bisection."""
    if linux is None:
        record = session.to_resume(store, BISECT, None)
    else:
        tree = str(linux.resolve())
        found = session.last_unfinished(store, BISECT, lambda run: run.facts.get("linux") == tree)
        if found is None:
            raise FsbenchError(f"no unfinished bisection of {tree} in {store.url}")
        record = found
    return Bisection.resume(store, record)


def drive(job: Bisection, store: Store, json_out: bool = False, chart: Path | None = None) -> None:
    """Run the bisection (or go on with it) and print its report; exits 5 when refused,
    6 when no first bad commit was named. `fsbench history --bisect` hands over here."""
    life = session.run(job)
    run = store.get_run(life.run_id)
    document = report.document(run, store.get_trials(life.run_id))
    if chart is not None:
        _write_chart(report.chart(document.data), chart)
    print(export.write(document, formats.JSON if json_out else formats.TABLE), end="")
    raise typer.Exit(Bisection.exit_code(store, run))


def _write_chart(block: Chart, path: Path) -> None:
    """The metric over the commits tested, as SVG at `path`."""
    from fsbench.reports.charts.points import points_chart  # matplotlib: only when drawing

    with tempfile.TemporaryDirectory(prefix="fsbench-charts-") as tmp:
        drawn = points_chart(block, Path(tmp)).path("svg")
        assert drawn is not None
        shutil.copyfile(drawn, path)


def register(app: typer.Typer) -> None:
    app.command("bisect")(bisect)
