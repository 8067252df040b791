"""Cells measured inside a QEMU guest, with fsbench's own Runner, on a scratch disk.

The host writes the job (cells + scale + timeout) into a 9p share (protocol.py), boots
the cached image (root as a qcow2 overlay, so the image stays clean; a fresh sparse
scratch disk), and the guest runs `python -m fsbench.vm.guest /share/job.json`: records
are appended to the share cell by cell, then a DONE marker, then the guest powers off.
Success is the DONE marker, never QEMU's exit code. Every QEMU process, share directory
and scratch disk is released on every path, Ctrl-C included (rundir.py).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsbench import __version__, workloads
from fsbench.execute.executors.base import input_files
from fsbench.plan.fsconfig import FsConfig
from fsbench.plan.targets import DEFAULT_WORKDIR
from fsbench.store.records import TrialRecord, now
from fsbench.system import engine as host_engine
from fsbench.system import qemu as host_qemu
from fsbench.system.errors import FsbenchError
from fsbench.vm import pyenv, qemu
from fsbench.vm.cache import DEFAULT_CACHE, LogFn, quiet
from fsbench.vm.guestfiles import GUEST_INIT
from fsbench.vm.images import GuestImage, ensure_image
from fsbench.vm.protocol import (
    DONE,
    ENGINE,
    FAILED,
    INPUTS,
    JOB,
    PYSRC,
    STARTED,
    VmJob,
    read_records,
    record_lines,
)
from fsbench.vm.records import to_record
from fsbench.vm.rundir import RunDir, run_dir

# Under TCG on 2 cores a systemd boot takes ~10 s; leave a wide margin for a loaded host.
BOOT_TIMEOUT = {"kvm": 120.0, "tcg": 300.0}
# Beyond a cell's own time limit (enforced in the guest), for mkfs, umount, the checks and
# writing records, which take longer the more a trial may do: as long as that limit,
# within these bounds (a short limit's hang is then found in a minute or two, not three).
CELL_MARGIN = (60.0, 120.0)
DEFAULT_CELL_TIMEOUT = 600.0
# The results are in (DONE or FAILED): a guest whose power-off takes longer is killed.
POWEROFF_GRACE = 30.0


def cell_margin(trial_limit: float) -> float:
    """What a cell may take beyond its trial's time limit before its guest counts as hung."""
    low, high = CELL_MARGIN
    return min(high, max(low, trial_limit))


@dataclass
class VmSpec:
    """The machine: kernel (None = Debian's default, a version such as 6.1, a package
    name, or a path to your own bzImage/build dir), RAM, vCPUs, scratch disk, throttle."""

    kernel: str | None = None
    ram_mb: int = 2048
    vcpus: int = 2
    scratch_bytes: int = 8 << 30
    # QEMU block throttling of the scratch disk: iops-total, bps-total, iops-read, ...
    throttle: dict[str, int] = field(default_factory=dict)
    accel: str = "auto"  # auto (KVM if a probe proves it works, else TCG) | kvm | tcg
    cache_dir: Path = DEFAULT_CACHE
    workdir: Path = DEFAULT_WORKDIR  # where the per-job share and scratch disk live
    cmdline_extra: tuple[str, ...] = ()  # appended to the guest kernel's command line
    # "script": the job runs from a small init script (fast); "systemd": a full systemd
    # boot runs it from a unit (what the boot workload measures; ~30 s more under TCG).
    init: str = "script"
    # The scratch disk's file when the caller keeps it (a boot root made in the guest);
    # None: a fresh sparse file in the job's directory, deleted with it.
    scratch_path: Path | None = None


@dataclass
class VmResult:
    ok: bool  # the guest wrote DONE
    job: VmJob
    records: list[dict[str, Any]]  # dataclasses.asdict(TrialRecord), as the guest wrote them
    provenance: dict[str, Any]  # goes under "vm" in every record's provenance
    error: str = ""  # one paragraph, with the console's tail, when not ok
    console_log: str = ""  # path of the kept serial console log
    seconds: float = 0.0
    # The guest started the job and was killed in a cell (a frozen guest, a hung kernel) or
    # QEMU died there: the cells after that one were never tried (another guest may).
    cut_short: bool = False


ProgressFn = Callable[[list[TrialRecord]], None]


def machine_facts(
    spec: VmSpec, img: GuestImage, accel: str, accel_facts: dict[str, Any], init: str
) -> dict[str, Any]:
    """The guest machine as every trial it ran records it (provenance "vm")."""
    return {
        "accel": accel,
        "accel_detail": accel_facts,
        "qemu_version": host_qemu.qemu_version(),
        "vcpus": spec.vcpus,
        "guest_ram_mb": spec.ram_mb,
        "image": img.key,
        "kernel_version": img.kernel_version,
        "kernel_source": img.kernel_source,
        "fsbench_version": __version__,
        "init": init,
    }


def machine(spec: VmSpec, img: GuestImage, rd: RunDir, accel: str, **devices: Any) -> qemu.Machine:
    """`spec`'s machine booting `img` from a fresh overlay in `rd`; `devices`: the scratch
    disk and whatever else differs between a job and a boot."""
    return qemu.Machine(
        kernel=img.kernel,
        initrd=img.initrd,
        root_overlay=rd.overlay,
        share=rd.share,
        console_log=rd.console,
        ram_mb=spec.ram_mb,
        vcpus=spec.vcpus,
        accel=accel,
        pidfile=rd.pidfile,
        **devices,
    )


def run_in_vm(
    job: VmJob,
    spec: VmSpec | None = None,
    *,
    timeout: float | None = None,
    on_cell: ProgressFn | None = None,
    log: LogFn = quiet,
) -> VmResult:
    """Boot the guest, run `job`'s cells in it, return what it recorded.

    `timeout` bounds the whole job (default: boot allowance + per cell its time limit and
    a margin); independently, a guest that has not started the job within the boot
    allowance, or has made no progress for a cell's limit + margin, is killed.
    `on_cell` gets each cell's records (imported, provenance merged) as soon as the guest
    writes them, so a caller can store trial by trial."""
    spec = spec or VmSpec()
    if spec.init not in ("script", "systemd"):
        raise FsbenchError(f"VM init {spec.init!r}: expected script or systemd")
    throttle = qemu.validate_throttle(spec.throttle)
    missing = host_qemu.qemu_missing()
    if missing:
        raise FsbenchError(missing)
    img = ensure_image(spec.kernel, spec.cache_dir, log)
    accel, accel_facts = qemu.resolve_accel(spec.accel, img.kernel)
    trial_limit = job.trial_timeout or DEFAULT_CELL_TIMEOUT
    cell_limit = trial_limit + cell_margin(trial_limit)
    boot_limit = BOOT_TIMEOUT[accel]
    outer = timeout or boot_limit + cell_limit * len(job.cells)

    prov = machine_facts(spec, img, accel, accel_facts, spec.init)
    prov.update(scratch_bytes=spec.scratch_bytes, scratch_cache="none", throttle=dict(throttle))
    t0 = time.monotonic()
    with run_dir(spec.workdir, spec.cache_dir) as rd:
        job = carried(job, rd.share)
        (rd.share / JOB).write_text(job.to_json())
        pyenv.install_fsbench(rd.share / PYSRC, compile_=True)
        qemu.make_overlay(img.root, rd.overlay)
        scratch = spec.scratch_path or rd.path / "scratch.img"
        qemu.make_scratch(scratch, spec.scratch_bytes)
        twin = None
        if any(workloads.get(s).ages_itself for c in job.cells for s, _ in c.cell().steps):
            twin = rd.path / "twin.img"  # the clean copies' disk (the aging workload)
            qemu.make_scratch(twin, spec.scratch_bytes)
        guest = machine(
            spec,
            img,
            rd,
            accel,
            scratch=scratch,
            twin=twin,
            throttle=throttle,
            cmdline_extra=tuple(spec.cmdline_extra),
            init=GUEST_INIT if spec.init == "script" else None,
        )
        log(
            f"booting the guest ({accel}, {spec.vcpus} vCPU, {spec.ram_mb} MiB, kernel "
            f"{img.kernel_version}) for {len(job.cells)} cell(s)"
        )
        watch = JobWatch(rd.share, prov, boot_limit, trial_limit, outer, on_cell)
        outcome = guest.run(watch, rd.stderr)
        prov["guest"] = watch.guest
        if watch.guest:  # what the guest kernel really offers, for doctor
            img.save_guest_facts(watch.guest)
        prov["boot_seconds"] = watch.started_after
        prov["job_seconds"] = round(outcome.seconds, 2)
        done = (rd.share / DONE).is_file()
        ended = done or (rd.share / FAILED).is_file()
        return VmResult(
            ok=done,
            job=job,
            records=read_records(rd.share),
            provenance=prov,
            error="" if done else _failure(rd, outcome, watch),
            console_log=rd.keep_log(),
            seconds=round(time.monotonic() - t0, 2),
            cut_short=not ended and watch.started_after is not None,
        )


def carried(job: VmJob, share: Path) -> VmJob:
    """The job with what its steps need from this host copied into the share: the input
    files its cells name (Workload.inputs), and fsbench-engine (the image has none; the
    host's build runs there: the same Debian 12 C library)."""
    inputs: dict[str, str] = {}
    for i, name in enumerate(input_files(vc.cell() for vc in job.cells)):
        copy = f"{INPUTS}/{i}-{Path(name).name}"
        (share / INPUTS).mkdir(exist_ok=True)
        shutil.copyfile(name, share / copy)
        inputs[name] = copy
    found = host_engine.find_engine()
    if found is not None:
        (share / ENGINE).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(found, share / ENGINE)
        (share / ENGINE).chmod(0o755)
    return dataclasses.replace(
        job, inputs=inputs, cwd=os.getcwd(), engine=ENGINE if found is not None else ""
    )


class JobWatch:
    """Polled while QEMU runs: streams records, decides when to give up."""

    def __init__(
        self,
        share: Path,
        prov: dict[str, Any],
        boot_limit: float,
        trial_limit: float,
        outer: float,
        on_cell: ProgressFn | None,
    ) -> None:
        self.share, self.prov = share, prov
        self.boot_limit, self.outer = boot_limit, outer
        self.cell_margin = cell_margin(trial_limit)
        self.cell_limit = trial_limit + self.cell_margin
        self.on_cell = on_cell
        self.guest: dict[str, Any] = {}
        self.started_after: float | None = None
        self.last_progress = 0.0
        self.seen_lines = 0
        self.done_at: float | None = None
        self.reason = ""

    def __call__(self, elapsed: float) -> bool:
        """True: stop QEMU now."""
        if self.started_after is None and (self.share / STARTED).is_file():
            try:
                self.guest = json.loads((self.share / STARTED).read_text())
                self.started_after = round(elapsed, 2)
                self.last_progress = elapsed
            except (OSError, json.JSONDecodeError):
                pass
        lines = record_lines(self.share)
        if len(lines) > self.seen_lines:
            self.last_progress = elapsed
            if self.on_cell is not None:
                prov = {**self.prov, "guest": self.guest}
                for line in lines[self.seen_lines :]:
                    self.on_cell([to_record(r, prov) for r in json.loads(line)])
            self.seen_lines = len(lines)
        if (self.share / DONE).is_file() or (self.share / FAILED).is_file():
            if self.done_at is None:
                self.done_at = elapsed
            elif elapsed - self.done_at > POWEROFF_GRACE:  # results are in; poweroff is stuck
                return True
        if elapsed > self.outer:
            self.reason = f"the job's time limit ({self.outer:.0f} s) passed"
            return True
        if self.started_after is None and elapsed > self.boot_limit:
            self.reason = f"the guest did not start the job within {self.boot_limit:.0f} s"
            return True
        if self.started_after is not None and elapsed - self.last_progress > self.cell_limit:
            self.reason = (
                f"no trial finished for {self.cell_limit:.0f} s (its time limit + "
                f"{self.cell_margin:.0f} s): QEMU killed"
            )
            return True
        return False


def check_guest(spec: VmSpec | None = None, log: LogFn = quiet) -> VmResult:
    """Boot the guest with no cells: its facts (kernel, the filesystems it can mount as
    its own /proc/filesystems and modules say) are in provenance["guest"]."""
    return run_in_vm(VmJob([], "tiny"), spec, log=log)


def _failure(rd: RunDir, outcome: qemu.Outcome, watch: JobWatch) -> str:
    if (rd.share / FAILED).is_file():
        what = "the guest job failed: " + (rd.share / FAILED).read_text(errors="replace")[-2000:]
    elif watch.reason:
        what = f"VM killed: {watch.reason}"
    else:
        what = f"QEMU exited (code {outcome.returncode}) before the guest wrote {DONE}"
    if outcome.stderr.strip():
        what += f"\nQEMU: {outcome.stderr.strip()[-1000:]}"
    return rd.with_console(what)


def import_records(
    result: VmResult, *, only_missing: bool = False, skip: set[str] | None = None
) -> list[TrialRecord]:
    """The guest's records as TrialRecords for Store.record_trials, the VM's provenance
    under "vm"; a cell the guest never finished is a `failed` record with the reason and
    the console's tail. With `only_missing`, just those (the caller stored the others as
    `on_cell` streamed them). Cells whose key is in `skip` (refused by the kernel, so the
    guest skipped them on purpose) are not missing."""
    got = [to_record(r, result.provenance) for r in result.records]
    have = {(r.seq, r.rep) for r in got}
    out = [] if only_missing else got
    skipped = set(skip or ()) | {r.cell_key for r in got if r.status == "unsupported"}
    first = result.error.splitlines()[0] if result.error else "the VM job did not finish"
    for vc in result.job.cells:
        if (vc.seq, vc.rep) in have or vc.cell_key() in skipped:
            continue
        try:
            cell = vc.cell()
            steps = cell.steps
            config, chain, key = cell.config, (cell.workload if cell.is_chain else ""), cell.key
        except Exception:  # an invalid cell in the job: report it, do not crash the import
            config = FsConfig.model_construct(type=str(vc.config.get("type", "?")))
            steps, chain, key = [(vc.workload, vc.params)], "", vc.workload
        for i, (name, params) in enumerate(steps):
            out.append(
                TrialRecord(
                    seq=vc.seq,
                    rep=vc.rep,
                    step=i,
                    chain=chain,
                    cell_key=key,
                    config=config.display,
                    fs=config.type,
                    mkfs_options=list(config.mkfs),
                    mount_options=config.mount,
                    workload=name,
                    params=params,
                    knobs=dict(vc.knobs),
                    status="failed",
                    message=f"VM: {first}" if i == 0 else f"not run: VM: {first}",
                    detail=result.error,
                    started_at=now(),
                    finished_at=now(),
                    provenance={"vm": result.provenance},
                    position=vc.position,
                )
            )
    out.sort(key=lambda r: (r.seq, r.step))
    return out
