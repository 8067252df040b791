"""One cell, one trial: fresh mkfs -> mount -> for each step of the cell (one workload, or
a chain such as untar+tree-read+fsck+tree-rm sharing the filesystem): prepare (untimed)
-> settle -> run (timed) -> flush (timed, as the workload says) -> check -> inspect
(untimed, after a remount). The plan's monitors (system/monitors: the 10 Hz sampler by
default) are attached before the settle, run beside the timed phase and are detached on
every path.

The runner owns the clock and every mount it makes: whatever happens, the filesystem is
unmounted before `run_cell` returns or raises. It also runs the checks every trial gets
(checks.py): a timed phase too short to trust, CPU-bound tools, a cold read that the
device did not serve, each fed by what the workload declares.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import traceback
import uuid
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from fsbench import workloads
from fsbench.analysis import steady
from fsbench.execute import checks
from fsbench.execute.context import Context
from fsbench.execute.targets import devinfo
from fsbench.execute.targets.base import Target
from fsbench.plan.model import Cell
from fsbench.store.records import FoldedRecord, MetricRecord, TrialRecord, cell_record, now
from fsbench.system import cache as system
from fsbench.system import (
    contention,
    filesystems,
    fsops,
    knobs,
    memcap,
    monitors,
    sourcetree,
    stepgroup,
)
from fsbench.system.errors import TrialFailed, TrialTimeout, Unsupported
from fsbench.system.monitors import sampler
from fsbench.system.monitors.attached import attached
from fsbench.system.monitors.base import Site
from fsbench.system.units import parse_size
from fsbench.workloads import aging
from fsbench.workloads.aging import apply
from fsbench.workloads.base import Better, CacheState, Flush, Metric, Scale, Workload

# The steady-state window (steady.py) per scale: a tiny run lasts seconds.
STEADY_WINDOW = {Scale.TINY: 3, Scale.QUICK: steady.WINDOW_S, Scale.FULL: steady.WINDOW_S}


@dataclass
class Alarm:
    """A trial's time limit: what it said once it went off (None until then)."""

    fired: str | None = None


@contextmanager
def deadline(seconds: float | None) -> Iterator[Alarm]:
    """Raise TrialTimeout in the main thread after `seconds` (SIGALRM). A tool running
    under subprocess.run is killed on the way out (subprocess kills its child on any
    exception), so a hung tool ends its trial, not the run. The alarm remembers that it
    went off: code on the way out may catch the exception and raise its own."""
    alarm = Alarm()
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield alarm
        return

    def expired(signum: int, frame: FrameType | None) -> None:
        alarm.fired = (
            f"timed out after {seconds:.0f} s (per-trial limit: --trial-timeout or the scale's "
            "default)"
        )
        raise TrialTimeout(alarm.fired)

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield alarm
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _metric(m: Metric) -> MetricRecord:
    return MetricRecord(m.name, float(m.value), m.unit, str(m.better), float(m.resolution))


class Runner:
    def __init__(
        self,
        target: Target,
        mount_root: Path,
        scale: Scale,
        cache_dir: Path,
        timeout: float | None = None,
        steady_rule: str = "both",
        monitor_names: Sequence[str] = monitors.DEFAULT,
        instrumented: bool = False,
    ) -> None:
        self.target = target
        self.timeout = timeout
        self.steady_rule = steady_rule  # steady.REQUIRE: what makes a series steady
        # Beside every trial; tracers only when its trials are an instrumented pass, whose
        # values are never counted.
        self.monitors = monitors.check(monitor_names, instrumented=instrumented)
        self.instrumented = instrumented
        self.mountpoint = mount_root
        self.scale = scale
        self.cache_dir = cache_dir
        # stress-ng's I/O for contention=busy goes to the host's disk, beside the cache.
        self.contention_dir = cache_dir.parent / "contention"
        self._kernel_fs = filesystems.kernel_filesystems()
        # Beside the mount points (WORKDIR/knobs-<pid>.json): what a killed run left
        # changed is restored by the next run or `fsbench doctor` (targets/stale.py).
        self.knob_journal = knobs.journal_path(mount_root.parent)
        self.load_file = contention.load_path(mount_root.parent)
        # Monitors' files, a directory per trial step (kept: their paths are in its record).
        self.artefacts = mount_root.parent / "artefacts"
        self._backing: dict[str, str | None] = {}
        # The second device of the aged-vs-clean comparison, opened when first asked for.
        self._twin: Target | None = None
        self._twin_ctx: Context | None = None
        self._instances: dict[str, Workload[Any]] = {}

    def close(self) -> None:
        """Release the second device, if a trial asked for one, and the archives kept warm
        between trials. Idempotent."""
        try:
            self._umount_twin()
        finally:
            sourcetree.unpin_all()
            if self._twin is not None:
                self._twin.close()
                self._twin = None

    def _umount_twin(self) -> None:
        if self._twin_ctx is not None and (
            self._twin_ctx.mounted or fsops.is_mounted(self._twin_ctx.mountpoint)
        ):
            self._twin_ctx.umount()

    def twin(self, fs: filesystems.FsType, cell: Cell) -> Context:
        """A fresh filesystem of the cell's config on the target's twin (a second device of
        the same size on the same medium), mounted beside the trial's own."""
        self._umount_twin()
        if self._twin is None:
            made = self.target.twin()
            if made is None:
                raise Unsupported(
                    "the clean copy needs a second device like the target: a loop image (or "
                    "the VM's second scratch disk); a real --device has none"
                )
            made.open()
            self._twin = made
        self._twin.reset()
        fsops.mkfs(fs, list(cell.config.mkfs), self._twin.device)
        ctx = Context(
            fs,
            self._twin.device,
            self.mountpoint.with_name(f"{self.mountpoint.name}-twin"),
            cell.config.mount,
            self.cache_dir,
            self.scale,
        )
        ctx.mount()
        self._twin_ctx = ctx
        return ctx

    def run_cell(self, seq: int, rep: int, cell: Cell) -> list[TrialRecord]:
        """One record per step, in order. A refused mkfs/mount makes every step
        `unsupported`; a failed step makes the steps after it `failed` (not run)."""
        steps = self._stages(cell)
        self._instances = {}  # one per workload per cell
        chain = cell.workload if cell.is_chain or len(steps) > 1 else ""
        records = [
            cell_record(cell, seq, rep, "pending", step=i, chain=chain, workload=step, params=p)
            for i, (step, p) in enumerate(steps)
        ]
        fs = filesystems.get(cell.config.type)
        ctx = Context(
            fs,
            self.target.device,
            self.mountpoint,
            cell.config.mount,
            self.cache_dir,
            self.scale,
            age=cell.knobs.get(aging.KNOB, aging.NONE),
            mem_cap=cell.knobs.get(knobs.MEM, "none"),
            twin_factory=lambda: self.twin(fs, cell),
        )
        shared: dict[str, Any] = {}
        in_force = knobs.Applied()
        alarm = Alarm()
        try:
            # Knobs outside the alarm: they are restored after it is disarmed, so a trial
            # that times out while they are written back cannot leave one half restored.
            with knobs.applied(cell.knobs, ctx.device, self.knob_journal) as in_force:
                if cell.knobs:
                    shared["knobs"] = in_force.in_force
                with deadline(self.timeout) as alarm:
                    self._make_filesystem(fs, cell, ctx, shared)
                    self._age(cell, ctx, shared)
                    for record in records:
                        self._run_step(ctx, record, shared)
        except Exception as exc:  # a workload bug or an I/O error must not end the matrix
            if alarm.fired and not isinstance(exc, TrialTimeout):
                # The limit went off and code on the way out said something else (a server
                # stopped by it "failed"): the trial timed out; what was said is the detail.
                said = exc.message if isinstance(exc, TrialFailed) else repr(exc)
                self._close_out(records, "failed", alarm.fired, f"then: {said}", shared)
            elif isinstance(exc, Unsupported):
                self._close_out(records, "unsupported", exc.message, exc.detail, shared)
            elif isinstance(exc, TrialFailed):
                self._close_out(records, "failed", exc.message, exc.detail, shared)
            else:
                self._close_out(
                    records, "failed", f"{type(exc).__name__}: {exc}", traceback.format_exc(),
                    shared,
                )  # fmt: skip
        finally:
            # Also on KeyboardInterrupt: never leave a mount behind.
            if ctx.mounted or fsops.is_mounted(self.mountpoint):
                try:
                    ctx.umount()
                except Exception as exc:  # reported; the target's close() retries
                    ctx.notes.append(f"umount failed: {exc}")
            try:
                self._umount_twin()
            except Exception as exc:
                ctx.notes.append(f"umount of the clean copy failed: {exc}")
        if in_force.not_restored:
            _knob_restore_failed(records, in_force.not_restored)
        return records

    def _workload(self, cls: type[Workload[Any]]) -> Workload[Any]:
        """The cell's instance of a workload: a workload measured in stages keeps what it
        did in one stage for the next."""
        if cls.name not in self._instances:
            self._instances[cls.name] = cls()
        return self._instances[cls.name]

    def _stages(self, cell: Cell) -> list[tuple[str, dict[str, Any]]]:
        """The cell's steps; a workload that measures in stages is one step per stage, its
        parameters with the stage's own (the `aging` workload: how far aged, which copy)."""
        out: list[tuple[str, dict[str, Any]]] = []
        for name, params in cell.steps:
            wl = workloads.get(name)
            model = wl.params_model.model_validate(params)
            age = cell.knobs.get(aging.KNOB, aging.NONE)
            out += [(name, {**params, **stage}) for stage in wl().stages(model, age, self.scale)]
        return out

    def _run_step(self, ctx: Context, record: TrialRecord, shared: dict[str, Any]) -> None:
        ctx.flags = {}
        ctx.facts = {}
        record.started_at = now()
        cap = record.knobs.get(knobs.MEM, "none")
        with ExitStack() as groups:
            if cap != "none":  # the step, prepare to inspect, in a memory cgroup of its size
                ctx.facts["mem"] = groups.enter_context(memcap.capped(parse_size(cap)))
            if self.instrumented and _v2_group(ctx.facts) is None:
                # The workload's threads apart, for its tracers (a v2 mem group serves).
                ctx.facts["traced"] = {"cgroup": str(groups.enter_context(stepgroup.traced()))}
            metrics, headline = self._step(ctx, record)
        record.metrics = [_metric(m) for m in metrics]
        record.status = "ok"
        record.provenance = {
            **shared,
            **ctx.facts,
            "flags": ctx.flags,
            "notes": list(ctx.notes),
            # What this trial's parameters make headline (reports and --reps auto read it).
            "headline": list(headline),
        }
        record.finished_at = now()

    def _close_out(
        self,
        records: list[TrialRecord],
        status: str,
        message: str,
        detail: str,
        shared: dict[str, Any],
    ) -> None:
        # The first step still pending is the one that failed; the ones after never ran.
        current = next((r for r in records if r.status == "pending"), None)
        for record in records:
            if record.status != "pending":
                continue
            if record is current:
                record.status, record.message, record.detail = status, message, detail
            else:  # after the step that failed: never ran
                record.status = "failed" if status == "failed" else status
                failed_step = current.workload if current else "an earlier step"
                record.message = (
                    f"not run: {failed_step} {status}: {message}" if status == "failed" else message
                )
            record.provenance = {**shared, **record.provenance}
            record.finished_at = now()

    def _make_filesystem(
        self, fs: filesystems.FsType, cell: Cell, ctx: Context, shared: dict[str, Any]
    ) -> None:
        avail = filesystems.availability(fs, self._kernel_fs)
        if not avail.available:
            raise Unsupported(f"{fs.name} unavailable: {avail.reason}")
        for name, _ in cell.steps:
            if fs.pseudo and workloads.get(name).needs_filesystem:
                raise Unsupported(f"{name} needs a filesystem; {fs.name} is the bare device")
        shared["discard"] = self.target.reset()  # a real discard error fails the trial
        if fs.pseudo:  # `raw`: the bare device; workloads use ctx.device
            shared["raw"] = {"device": ctx.device}
            return
        made = fsops.mkfs(fs, list(cell.config.mkfs), ctx.device)
        shared["mkfs"] = {
            "argv": made.argv,
            "seconds": round(made.seconds, 3),
            "output": made.output,
            "kernel": made.kernel,
        }
        mounted = ctx.mount()
        entry = fsops.mount_entry(ctx.mountpoint)
        effective = entry.options if entry else []
        geometry = fsops.geometry(fs, ctx.device)
        notes = fsops.mount_option_notes(cell.config.mount, effective, mounted.kernel)
        notes += fsops.mkfs_feature_notes(fs, list(cell.config.mkfs), geometry, made.output)
        shared["mount"] = {"argv": mounted.argv, "effective": effective, "kernel": mounted.kernel}
        shared["geometry"] = geometry
        shared["option_notes"] = [n.as_dict() for n in notes]

    def _steady(
        self, wl_cls: type[Workload[Any]], ctx: Context, flags: dict[str, str]
    ) -> list[Metric]:
        """Where the workload's throughput series held steady (fio's ss= rule): recorded,
        with the mean from there on as `steady_<series>`; flagged when it never did. A
        series shorter than the window is recorded as not judged, without a flag."""
        name = wl_cls.steady_series
        found = (ctx.facts.get("series") or {}).get(name) if name else None
        if not name or not found:
            return []
        window = STEADY_WINDOW[self.scale]
        result = steady.steady_state(
            found["t"], found["v"], window=window, require=self.steady_rule
        )
        ctx.facts["steady"] = {"series": name, **result.as_dict()}
        if not result.reached or result.mean is None:
            if result.judged:
                flags["not-steady"] = f"{name}: no {window} s window held steady ({result.rule})"
            return []
        return [Metric(f"steady_{name}", result.mean, found["unit"], Better(found["better"]))]

    def _age(self, cell: Cell, ctx: Context, shared: dict[str, Any]) -> None:
        """Age the new filesystem as the cell's `age` says (untimed), before any step."""
        text = cell.knobs.get(aging.KNOB, aging.NONE)
        if text == aging.NONE or ctx.fs.pseudo:
            return
        if any(workloads.get(name).ages_itself for name, _ in cell.steps):
            return  # the workload ages it in stages itself (the `aging` workload)
        aged = apply.age(ctx, text, self.scale)
        if aged is not None:
            shared["age"] = aged.as_dict()

    def _step(self, ctx: Context, record: TrialRecord) -> tuple[list[Metric], tuple[str, ...]]:
        """The trial's metrics, and its headline metrics; what the workload started for the
        step is released on every path."""
        wl_cls = workloads.get(record.workload)
        workload: Workload[Any] = self._workload(wl_cls)
        params = _for_memory(ctx, workload, wl_cls.params_model.model_validate(record.params))
        try:
            return self._measure(ctx, record, wl_cls, workload, params)
        finally:
            workload.release(ctx, params)

    def _measure(
        self,
        ctx: Context,
        record: TrialRecord,
        wl_cls: type[Workload[Any]],
        workload: Workload[Any],
        params: Any,
    ) -> tuple[list[Metric], tuple[str, ...]]:
        raw = ctx.fs.pseudo
        if not ctx.mounted and not raw:
            ctx.mount()
        workload.prepare(ctx, params)
        # The filesystem the timed phase runs on: this trial's, or a clean copy's.
        on = workload.run_context(ctx, params)
        if not isinstance(on, Context):
            raise TypeError(f"{wl_cls.name}.run_context must return a runner Context")

        site = self._site(on, ctx, record)
        flush = workload.flush_for(params)
        with attached(self.monitors, site, instrumented=self.instrumented) as watch:
            _settle(on, wl_cls, workload.cache_for(params))
            # The clock: `run`, then the flush the workload asks for; nothing else.
            with (
                contention.contention(
                    record.knobs.get("contention", "idle"),
                    self.contention_dir,
                    self.load_file,
                    self.timeout,
                ),
                watch.running(),
            ):
                t0 = time.monotonic()
                metrics = list(workload.run(on, params))
                t_run = time.monotonic()
                if flush in (Flush.SYNC, Flush.SYNC_UMOUNT) and on.mounted:
                    on.sync()
                    if flush == Flush.SYNC_UMOUNT:
                        on.umount()
                t_end = time.monotonic()
            elapsed = t_end - t0
            if not any(m.name == "seconds" for m in metrics):
                metrics.append(Metric("seconds", elapsed, "s", Better.LOWER))
            if flush != Flush.NONE:
                metrics.append(Metric("flush_seconds", t_end - t_run, "s", Better.LOWER))
            watched = watch.output(metrics)
        record.samples = watched.samples
        record.folded = [FoldedRecord(f.name, f.unit, f.values) for f in watched.folded]
        if watched.facts:
            ctx.facts["monitors"] = watched.facts
        if on is not ctx:  # what the workload recorded on the filesystem it ran on
            ctx.facts.update(on.facts)

        metrics += watched.metrics
        metrics += workload.derive(params, {m.name: m.value for m in metrics})
        values = {m.name: m.value for m in metrics}
        flags = checks.trial_flags(
            sampler.totals_of(watch.monitors),
            elapsed,
            checks_duration=self.scale != Scale.TINY,
            threads=workload.threads(params),
            expected_read=workload.expected_read_bytes(params, values),
            device_read=values.get("device_read_bytes"),
        )
        flags.update(workload.check(params, values))
        metrics += self._steady(wl_cls, ctx, flags)
        for name, detail in flags.items():
            ctx.flag(name, detail)

        if wl_cls.has_inspect() and not raw:
            if on.mounted:
                on.remount()
            else:
                on.mount()
                system.drop_caches()
            metrics += workload.inspect(on, params)
        return metrics, wl_cls.headline_for(params, [m.name for m in metrics])

    def _site(self, on: Context, ctx: Context, record: TrialRecord) -> Site:
        """What the trial's monitors attach to: the device the timed phase runs on and the
        disk under it, its mountpoint, the step's memory cgroup, a directory of its own."""
        if on.device not in self._backing:
            kname = devinfo.kname_of_device(on.device) or Path(on.device).name
            disk = devinfo.disk_info_of_device(kname).disk
            self._backing[on.device] = f"/dev/{disk}" if disk != kname else None
        step = f"{record.seq}.{record.rep}.{record.step}-{uuid.uuid4().hex[:8]}"
        return Site(
            device=on.device,
            backing=self._backing[on.device],
            mountpoint=None if on.fs.pseudo else on.mountpoint,
            cgroup=_v2_group(ctx.facts),
            directory=self.artefacts / step,
        )


def _v2_group(facts: dict[str, Any]) -> Path | None:
    """The step's own cgroup v2, where it has one: an instrumented step's, or the mem
    knob's when that is a v2 group ("v2:/sys/fs/cgroup/fsbench-<pid>"; a v1 memory group
    is no v2 group for a tracer to filter on)."""
    traced, mem = facts.get("traced"), facts.get("mem")
    if isinstance(traced, dict):
        return Path(traced["cgroup"])
    if isinstance(mem, dict) and str(mem.get("cgroup", "")).startswith("v2:"):
        return Path(mem["cgroup"].partition(":")[2])
    return None


def _settle(on: Context, wl_cls: type[Workload[Any]], cache: CacheState) -> None:
    """Everything prepare wrote is on disk; caches as the workload states (`cache`)."""
    if on.fs.pseudo:  # the bare device: nothing to sync or remount
        system.drop_caches()
        return
    on.sync()
    if not wl_cls.needs_mount:
        on.umount()
        system.drop_caches()
    elif cache == CacheState.COLD_REMOUNT:
        on.remount()
    elif cache == CacheState.COLD:
        system.drop_caches()


def _for_memory(ctx: Context, workload: Workload[Any], params: Any) -> Any:
    """The step's parameters sized to the memory it may use (`scale_to_mem`); what that
    changed is recorded with the trial (`scaled_to_mem`)."""
    sized = workload.for_memory(params, ctx.mem_bytes)
    if sized != params:
        before, after = params.model_dump(mode="json"), sized.model_dump(mode="json")
        ctx.facts["scaled_to_mem"] = {
            "mem_bytes": ctx.mem_bytes,
            "params": {k: v for k, v in after.items() if before.get(k) != v},
        }
    return sized


def _knob_restore_failed(records: list[TrialRecord], failures: list[str]) -> None:
    """A knob not restored after the trial: every step says so (flag, detail)."""
    detail = "; ".join(failures)
    for record in records:
        record.provenance["knob_restore"] = list(failures)
        flags = record.provenance.setdefault("flags", {})
        flags["knob-restore-failed"] = detail


def mount_root(workdir: Path, pid: int | None = None) -> Path:
    return workdir / f"mnt-{pid or os.getpid()}"


def cache_root(workdir: Path) -> Path:
    return workdir / "cache"
