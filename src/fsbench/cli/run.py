"""`fsbench run`: build the plan from a file, a preset or flags; run the matrix; print it."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from fsbench import matrix, workloads
from fsbench import plan as planning
from fsbench.cli.common import DbOption, JsonOption
from fsbench.cli.report import emit
from fsbench.errors import FsbenchError
from fsbench.plan import FsConfig, Plan, WorkloadSpec
from fsbench.store import Store, TrialRecord, default_db_path
from fsbench.targets import stale
from fsbench.targets.base import Target
from fsbench.targets.blockdev import BlockDevice
from fsbench.targets.loop import LoopImage
from fsbench.units import parse_size
from fsbench.workloads.base import Scale

# Exit codes: a run that measured everything is 0; unsupported cells are results, not
# errors, but scripts should be able to tell.
EXIT_OK, EXIT_USAGE, EXIT_UNSUPPORTED, EXIT_FAILED, EXIT_INTERRUPTED = 0, 2, 3, 4, 130

FS_HELP = (
    "Filesystem configs: 'ext4,xfs' or one config with options "
    "'TYPE[:mkfs=OPTS][:mount=OPTS][:label=NAME]', e.g. "
    "'ext4:mkfs=-I 256 -O ^flex_bg:mount=data=writeback,nodelalloc'. Repeatable."
)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def build_plan(
    plan_file: Path | None,
    preset: str | None,
    fs: list[str],
    workload: list[str],
    scale: Scale | None,
    reps: str | None,
    image_size: str | None,
    workdir: Path | None,
    device: str | None,
    destroy_data: bool,
    max_reps: int | None = None,
    ci_target: float | None = None,
    trial_timeout: float | None = None,
    target_kind: str | None = None,
    kernel: str | None = None,
    guest_ram: int | None = None,
) -> Plan:
    if plan_file and preset:
        raise FsbenchError("give a plan file or --preset, not both")
    if plan_file:
        base = planning.load_plan_file(plan_file)
    else:
        base = planning.load_preset(preset or "quick")
    data = base.model_dump(by_alias=True)
    if fs:
        data["fs"] = [c for spec in fs for c in planning.parse_fs_spec(spec)]
    if workload:
        names = [w.strip() for spec in workload for w in spec.split(",") if w.strip()]
        # An explicit preset or plan keeps its parameters for the workloads it has;
        # otherwise a workload runs with its own defaults for the scale.
        keep = {w.name: w for w in base.workloads} if (plan_file or preset) else {}
        try:
            data["workload"] = [keep.get(n) or WorkloadSpec(name=n) for n in names]
        except ValidationError as exc:
            raise FsbenchError(f"--workload: {planning.one_line(exc)}") from None
    if scale is not None:
        data["scale"] = scale
    if max_reps is not None:
        data["max_reps"] = max_reps
    if ci_target is not None:
        data["ci_target"] = ci_target
    if trial_timeout is not None:
        data["trial_timeout"] = trial_timeout
    if reps is not None:
        data["reps"] = _parse_reps(reps)
    elif workload and not (plan_file or preset):
        # Workloads whose differences hide in the noise with fewer (boot: 10) set the
        # default of an ad-hoc run; a preset or plan says its own number.
        wanted = [
            workloads.get(step).default_reps
            for spec in data["workload"]
            for step in (spec.steps if isinstance(spec, WorkloadSpec) else [spec["name"]])
        ]
        if any(wanted):
            data["reps"] = max(w for w in wanted if w)
    target = dict(data["target"])
    if image_size is not None:
        try:
            target["image_size"] = parse_size(image_size)
        except ValueError as exc:
            raise FsbenchError(f"--image-size: {exc}") from None
    if workdir is not None:
        target["workdir"] = workdir
    if device is not None:
        target["device"] = device
    if target_kind is not None:
        if target_kind not in ("loop", "vm"):
            raise FsbenchError(f"--target {target_kind!r}: loop or vm (a disk: --device)")
        target["kind"] = target_kind
    if kernel is not None:
        target["kernel"] = kernel
    if guest_ram is not None:
        target["guest_ram_mb"] = guest_ram
    target["destroy_data"] = destroy_data or target.get("destroy_data", False)
    data["target"] = target
    if not plan_file and not preset and (fs or workload):
        data["name"] = "custom"
        data["description"] = ""
    try:
        data["fs"] = [c if isinstance(c, FsConfig) else FsConfig(**c) for c in data["fs"]]
        return Plan.model_validate(data)
    except ValidationError as exc:
        raise FsbenchError(planning.one_line(exc)) from None


def _parse_reps(text: str) -> int | str:
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        raise FsbenchError(f"--reps {text!r}: a number or auto") from None


def make_target(plan: Plan) -> Target:
    t = plan.target
    if t.device:
        return BlockDevice(t.device, destroy_data=t.destroy_data)
    if t.destroy_data:
        raise FsbenchError("--destroy-data only makes sense with --device")
    return LoopImage(t.workdir, t.image_size)


def run(
    plan_file: Annotated[
        Path | None, typer.Argument(metavar="[PLAN.toml]", help="A plan file.")
    ] = None,
    preset: Annotated[
        str | None,
        typer.Option(
            "--preset", "-p", help="A shipped plan: see `fsbench list presets`. \\[default: quick]"
        ),
    ] = None,
    fs: Annotated[list[str], typer.Option("--fs", help=FS_HELP)] = [],  # noqa: B006
    workload: Annotated[
        list[str], typer.Option("--workload", "-w", help="Workloads, comma list.")
    ] = [],  # noqa: B006
    set_: Annotated[
        list[str],
        typer.Option(
            "--set",
            help="NAME=VALUE[,VALUE...] for any "
            "workload parameter; a list makes one cell per "
            "value.",
        ),
    ] = [],  # noqa: B006
    knob: Annotated[
        list[str],
        typer.Option(
            "--knob",
            help="System knob NAME=VALUE[,VALUE...], a dimension of the matrix, set before "
            "and restored after every trial: a sysctl (vm.dirty_ratio=1,20), "
            "scheduler=none,mq-deadline,bfq,kyber, contention=idle,busy.",
        ),
    ] = [],  # noqa: B006
    reps: Annotated[
        str | None,
        typer.Option(
            "--reps",
            help="Repetitions per cell, or auto: at least 3, more until the 95% CI half-width "
            "is within --ci-target of the mean, at most --max-reps.",
        ),
    ] = None,
    max_reps: Annotated[
        int | None, typer.Option("--max-reps", help="Limit of --reps auto \\[default: 10].")
    ] = None,
    ci_target: Annotated[
        float | None,
        typer.Option("--ci-target", help="CI half-width / mean for --reps auto \\[default: 0.05]."),
    ] = None,
    scale: Annotated[Scale | None, typer.Option("--scale", help="tiny, quick or full.")] = None,
    trial_timeout: Annotated[
        float | None,
        typer.Option(
            "--trial-timeout",
            help="Seconds a trial may take before it is failed and the run goes on "
            "\\[default: tiny 600, quick 3600, full 43200].",
        ),
    ] = None,
    image_size: Annotated[
        str | None, typer.Option("--image-size", help="Loop image size \\[default: 8G].")
    ] = None,
    workdir: Annotated[
        Path | None,
        typer.Option("--workdir", help="Where images and mounts go \\[default: /var/tmp/fsbench]."),
    ] = None,
    device: Annotated[
        str | None,
        typer.Option(
            "--device", help="A real block device instead of a loop image (needs --destroy-data)."
        ),
    ] = None,
    target_kind: Annotated[
        str | None,
        typer.Option(
            "--target",
            help="loop (an image on this host) or vm: a QEMU guest with its own kernel, for "
            "filesystems this kernel lacks (jfs, reiserfs, f2fs, nilfs2) or other kernels.",
        ),
    ] = None,
    kernel: Annotated[
        str | None,
        typer.Option(
            "--kernel",
            help="vm: Debian's default, a version (6.1), a linux-image package, or the "
            "path of your own bzImage; several (6.1,6.12) make the kernel a dimension.",
        ),
    ] = None,
    guest_ram: Annotated[
        int | None, typer.Option("--guest-ram", help="vm: guest RAM in MiB \\[default: 2048].")
    ] = None,
    destroy_data: Annotated[
        bool, typer.Option("--destroy-data", help="Allow fsbench to overwrite --device.")
    ] = False,
    no_report: Annotated[
        bool,
        typer.Option("--no-report", help="Do not write the HTML report and charts at the end."),
    ] = False,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Finish an interrupted run: the last unfinished one in --db, or the run id "
            "given in place of PLAN. Finished trials are kept, the rest run.",
        ),
    ] = False,
    db: DbOption = None,
    json_out: JsonOption = False,
) -> None:
    """Format the target with every filesystem config, run the workloads, print the table."""
    if resume:
        _resume(plan_file, db, json_out, report=not no_report)
        return
    plan = build_plan(
        plan_file,
        preset,
        fs,
        workload,
        scale,
        reps,
        image_size,
        workdir,
        device,
        destroy_data,
        max_reps,
        ci_target,
        trial_timeout,
        target_kind,
        kernel,
        guest_ram,
    )
    overrides = planning.parse_set(set_)
    if knob:  # kept in the plan, so the stored run says which knobs it swept
        plan = plan.model_copy(
            update={"knobs": {**plan.knobs, **planning.parse_set(knob, flag="--knob")}}
        )
    cells = planning.expand(plan, overrides)
    err = Console(stderr=True)
    if plan.target.kind == "vm":
        if plan.target.device:
            raise FsbenchError("--target vm runs on the guest's own scratch disk: no --device")
        matrix.preflight(plan, cells, plan.target.image_size)
        store = Store(db)
        outcome = _execute_vm(plan, cells, store, overrides, err)
        _finish(store, outcome, json_out, report=not no_report)
        return
    target = make_target(plan)
    workdir_path = plan.target.workdir
    warnings: list[str] = []
    if plan.target.device is None:  # a loop image's size is known before it exists
        warnings = matrix.preflight(plan, cells, plan.target.image_size)
    for line in stale.release_stale(workdir_path) if workdir_path.exists() else []:
        err.print(f"released stale: {line}", style="yellow", markup=False)
    store = Store(db)
    with target:  # safety checks of a real device happen here, before anything is written
        if plan.target.device is not None:
            warnings = matrix.preflight(plan, cells, target.size_bytes)
        for w in warnings:
            err.print(f"warning: {w}", style="yellow", markup=False)
        outcome = _execute(plan, cells, store, target, workdir_path, overrides, err)
    _finish(store, outcome, json_out, report=not no_report)


def _finish(store: Store, outcome: matrix.Outcome, json_out: bool, report: bool = True) -> None:
    emit(store, outcome.run_id, "json" if json_out else "table", None, False)
    if report:
        _write_report(store, outcome.run_id)
    statuses = {t.status for t in store.get_trials(outcome.run_id)}
    if "failed" in statuses:
        raise typer.Exit(EXIT_FAILED)
    if "unsupported" in statuses:
        raise typer.Exit(EXIT_UNSUPPORTED)


def report_dir(store: Store, run_id: int) -> Path:
    """Next to the database: <dir of results.db>/reports/run-<id>/."""
    if store.url.startswith("sqlite:///"):
        base = Path(store.url.removeprefix("sqlite:///")).parent
    else:
        base = default_db_path().parent
    return base / "reports" / f"run-{run_id}"


def _write_report(store: Store, run_id: int) -> None:
    # Imported here: matplotlib costs most of a second at every start of fsbench.
    from fsbench.reports.html import write_run_report

    err = Console(stderr=True)
    paths = write_run_report(store, run_id, report_dir(store, run_id))
    charts = [p for p in paths[1:] if p.suffix == ".png"]
    err.print(f"report: {paths[0]}", highlight=False, markup=False)
    if charts:
        err.print(
            f"charts: {len(charts)} PNG (and SVG) in {paths[0].parent}",
            highlight=False,
            markup=False,
        )


def _resume(run_arg: Path | None, db: str | None, json_out: bool, report: bool = True) -> None:
    store = Store(db)
    if run_arg is not None:
        if not str(run_arg).isdigit():
            raise FsbenchError(f"--resume takes a run id, not {str(run_arg)!r}")
        run_id = int(str(run_arg))
    else:
        unfinished = [r.id for r in store.list_runs() if r.status != "finished"]
        if not unfinished:
            raise FsbenchError(f"no unfinished run in {store.url} to resume")
        run_id = unfinished[-1]
    record = store.get_run(run_id)
    if record.status == "finished":
        raise FsbenchError(f"run {run_id} is finished: nothing to resume")
    try:
        plan = Plan.model_validate(record.plan)
    except ValidationError as exc:
        raise FsbenchError(
            f"run {run_id}: stored plan no longer valid: {planning.one_line(exc)}"
        ) from None
    cells = planning.expand(plan, record.overrides)
    err = Console(stderr=True)
    if plan.target.kind == "vm":
        outcome = _execute_vm(plan, cells, store, record.overrides, err, resume_run=run_id)
        _finish(store, outcome, json_out, report)
        return
    workdir_path = plan.target.workdir
    for line in stale.release_stale(workdir_path) if workdir_path.exists() else []:
        err.print(f"released stale: {line}", style="yellow", markup=False)
    target = make_target(plan)
    done = len({t.seq for t in store.get_trials(run_id)})
    err.print(f"fsbench: resuming run {run_id} ({done} trials stored)", highlight=False)
    with target:
        matrix.preflight(plan, cells, target.size_bytes)
        outcome = _execute(
            plan, cells, store, target, workdir_path, record.overrides, err, resume_run=run_id
        )
    _finish(store, outcome, json_out, report)


def _execute_vm(
    plan: Plan,
    cells: list[planning.Cell],
    store: Store,
    overrides: dict[str, list[str]],
    err: Console,
    resume_run: int | None = None,
) -> matrix.Outcome:
    from fsbench import vm

    for line in vm.release_stale(plan.target.workdir):
        err.print(f"released stale: {line}", style="yellow", markup=False)
    err.print(
        f"fsbench: {plan.name} in a QEMU guest (kernel "
        f"{', '.join(k or 'default' for k in plan.target.kernels)}): "
        f"{len(cells)} cells x {plan.reps} reps; the first run builds the guest image "
        "(a few minutes, cached)",
        markup=False,
        highlight=False,
    )
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)

    def on_done(seq: int, total: int, record: TrialRecord) -> None:
        shown = " ".join(f"{k}={v}" for k, v in record.params.items())
        err.print(
            f"  {record.status}: {record.config} · {record.workload} {shown}"
            + (f": {record.message}" if record.message else ""),
            markup=False,
            highlight=False,
        )

    try:
        return matrix.execute_vm(
            plan,
            cells,
            store,
            plan.target.workdir,
            argv=sys.argv,
            overrides=overrides,
            on_done=on_done,
            resume_run=resume_run,
        )
    except KeyboardInterrupt:
        err.print(
            f"fsbench: interrupted; finished trials are stored in run {store.latest_run_id()}",
            style="yellow",
        )
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        signal.signal(signal.SIGTERM, previous)


def _execute(
    plan: Plan,
    cells: list[planning.Cell],
    store: Store,
    target: Target,
    workdir: Path,
    overrides: dict[str, list[str]],
    err: Console,
    resume_run: int | None = None,
) -> matrix.Outcome:
    total = len(cells) * plan.planned_reps
    err.print(
        f"fsbench: {plan.name}: {len(plan.fs)} configs x {len(cells) // len(plan.fs)} cells x "
        f"{plan.reps} reps = {total if plan.reps != 'auto' else f'up to {total}'} trials, "
        f"scale {plan.scale}, store {store.url}",
        markup=False,
        highlight=False,
    )
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    progress = Progress(
        TextColumn("trial"),
        MofNCompleteColumn(),
        BarColumn(bar_width=24),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        TextColumn("{task.description}"),
        console=err,
        transient=False,
    )
    task = progress.add_task("", total=total)
    problems: list[str] = []

    def on_start(index: int, n: int, rep: int, cell: planning.Cell) -> None:
        progress.update(task, completed=index, description=f"rep {rep}: {cell.describe()}")

    def on_done(index: int, n: int, record: TrialRecord) -> None:
        progress.update(task, completed=index + 1)
        if record.status != "ok":
            shown = " ".join(f"{k}={v}" for k, v in record.params.items())
            problems.append(
                f"{record.status}: {record.config} · {record.workload} {shown}: {record.message}"
            )
            progress.console.print(
                f"  {problems[-1]}", style="yellow", markup=False, highlight=False
            )

    try:
        with progress:
            outcome = matrix.execute(
                plan,
                cells,
                store,
                target,
                workdir,
                argv=sys.argv,
                overrides=overrides,
                on_start=on_start,
                on_done=on_done,
                resume_run=resume_run,
            )
            progress.update(task, completed=total, description="done")
    except KeyboardInterrupt:
        rid = store.latest_run_id()
        err.print(f"fsbench: interrupted; finished trials are stored in run {rid}", style="yellow")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    return outcome
