"""Cells measured inside a QEMU guest, with fsbench's own Runner, on a scratch disk.

The host writes the job (cells + scale + timeout) into a 9p share, boots the cached image
(root as a qcow2 overlay, so the image stays clean; a fresh sparse scratch disk), and the
guest's systemd unit runs `python -m fsbench.vm.guest /share/job.json`: records are
appended to the share cell by cell, then a DONE marker, then the guest powers off.
Success is the DONE marker, never QEMU's exit code. Every QEMU process, share directory
and scratch disk is released on every path, Ctrl-C included.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import subprocess
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from fsbench import __version__
from fsbench.errors import FsbenchError
from fsbench.plan import DEFAULT_WORKDIR, Cell, FsConfig
from fsbench.store import MetricRecord, TrialRecord, now
from fsbench.targets.stale import pid_alive
from fsbench.vm import image as vm_image
from fsbench.vm import qemu

# Share files: written by the host / by the guest.
JOB = "job.json"
PYSRC = "py"  # the host's fsbench package, on the guest's PYTHONPATH before the image's
STARTED = "started.json"
RECORDS = "records.jsonl"
DONE = "DONE"
GUEST_FACTS = "guest.json"  # in the image's directory: the last boot's guest facts
FAILED = "FAILED"

# Under TCG on 2 cores a systemd boot takes ~10 s; leave a wide margin for a loaded host.
BOOT_TIMEOUT = {"kvm": 120.0, "tcg": 300.0}
# Beyond a cell's own time limit (enforced in the guest): mkfs, umount, writing records.
CELL_MARGIN = 120.0
DEFAULT_CELL_TIMEOUT = 600.0
CONSOLE_TAIL_LINES = 40
KEEP_LOGS = 30
RUN_DIR_PREFIX = "vm-"


@dataclass(frozen=True)
class VmCell:
    """One scheduled trial: (seq, rep) + the cell, in a JSON-friendly form."""

    seq: int
    rep: int
    config: dict[str, Any]  # FsConfig.model_dump(mode="json")
    workload: str
    params: dict[str, Any]
    knobs: dict[str, str] = field(default_factory=dict)
    position: int = 0  # place in its round

    @classmethod
    def of(cls, seq: int, rep: int, cell: Cell, position: int = 0) -> VmCell:
        return cls(
            seq,
            rep,
            cell.config.model_dump(mode="json"),
            cell.workload,
            dict(cell.params),
            dict(cell.knobs),
            position,
        )

    def cell(self) -> Cell:
        return Cell(FsConfig.model_validate(self.config), self.workload, self.params, self.knobs)

    def cell_key(self) -> str:
        try:
            return self.cell().key
        except Exception:  # an invalid cell: import_records reports it as failed
            return ""


@dataclass
class VmJob:
    """What the guest runs: cells in order, at one scale, each within `trial_timeout`."""

    cells: list[VmCell]
    scale: str
    trial_timeout: float | None = None
    plan: dict[str, Any] | None = None  # the validated plan, for the guest's record only
    # Instead of cells: make the scratch disk a copy of the guest's own root on this
    # filesystem config (FsConfig as JSON), for the boot workload's filesystems that the
    # host kernel cannot write.
    make_root: dict[str, Any] | None = None
    # Cell keys the kernel refused before this job: skipped, as on the host.
    refused: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> VmJob:
        data = json.loads(text)
        cells = [VmCell(**c) for c in data["cells"]]
        return cls(
            cells,
            data["scale"],
            data.get("trial_timeout"),
            data.get("plan"),
            data.get("make_root"),
            list(data.get("refused") or []),
        )


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
    cache_dir: Path = vm_image.DEFAULT_CACHE
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


ProgressFn = Callable[[list[TrialRecord]], None]
LogFn = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def resolve_accel(requested: str) -> tuple[str, dict[str, Any]]:
    if requested == "tcg":
        return "tcg", {"requested": "tcg"}
    probe = qemu.probe_kvm()
    if requested == "kvm" and not probe.usable:
        raise FsbenchError(f"--accel kvm: {probe.reason}")
    return ("kvm" if probe.usable else "tcg"), {
        "requested": requested,
        "kvm_probe": probe.as_dict(),
    }


def machine_facts(
    spec: VmSpec,
    img: vm_image.GuestImage,
    accel: str,
    accel_facts: dict[str, Any],
    init: str,
) -> dict[str, Any]:
    """The guest machine as every trial it ran records it (provenance "vm")."""
    return {
        "accel": accel,
        "accel_detail": accel_facts,
        "qemu_version": qemu.qemu_version(),
        "vcpus": spec.vcpus,
        "guest_ram_mb": spec.ram_mb,
        "image": img.key,
        "kernel_version": img.kernel_version,
        "kernel_source": img.kernel_source,
        "fsbench_version": __version__,
        "init": init,
    }


def run_in_vm(
    job: VmJob,
    spec: VmSpec | None = None,
    *,
    timeout: float | None = None,
    on_cell: ProgressFn | None = None,
    log: LogFn = _quiet,
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
    if qemu.qemu_binary() is None:
        raise FsbenchError("the VM target needs QEMU: apt-get install qemu-system-x86 qemu-utils")
    img = vm_image.ensure_image(spec.kernel, spec.cache_dir, log)
    accel, accel_facts = resolve_accel(spec.accel)
    cell_limit = (job.trial_timeout or DEFAULT_CELL_TIMEOUT) + CELL_MARGIN
    boot_limit = BOOT_TIMEOUT[accel]
    outer = timeout or boot_limit + cell_limit * len(job.cells)

    run_dir = _new_run_dir(spec.workdir)
    share = run_dir / "share"
    console = run_dir / "console.log"
    prov = machine_facts(spec, img, accel, accel_facts, spec.init)
    prov.update(scratch_bytes=spec.scratch_bytes, scratch_cache="none", throttle=dict(throttle))
    t0 = time.monotonic()
    kept_log = ""
    try:
        share.mkdir(parents=True)
        (share / JOB).write_text(job.to_json())
        vm_image.install_fsbench(share / PYSRC, compile_=True)
        overlay = run_dir / "root.qcow2"
        qemu.make_overlay(img.root, overlay)
        scratch = spec.scratch_path or run_dir / "scratch.img"
        qemu.make_scratch(scratch, spec.scratch_bytes)
        machine = qemu.Machine(
            kernel=img.kernel,
            initrd=img.initrd,
            root_overlay=overlay,
            scratch=scratch,
            share=share,
            console_log=console,
            ram_mb=spec.ram_mb,
            vcpus=spec.vcpus,
            accel=accel,
            throttle=throttle,
            cmdline_extra=tuple(spec.cmdline_extra),
            init=vm_image.GUEST_INIT if spec.init == "script" else None,
        )
        argv = machine.argv(qemu.qemu_binary() or qemu.QEMU)
        argv += ["-pidfile", str(run_dir / "qemu.pid")]
        log(
            f"booting the guest ({accel}, {spec.vcpus} vCPU, {spec.ram_mb} MiB, kernel "
            f"{img.kernel_version}) for {len(job.cells)} cell(s)"
        )
        watch = _Watch(share, job, prov, boot_limit, cell_limit, outer, on_cell)
        outcome = _run_qemu(argv, watch)
        prov["guest"] = watch.guest
        if watch.guest:  # what the guest kernel really offers, for doctor
            _write_json(img.dir / GUEST_FACTS, watch.guest)
        prov["boot_seconds"] = watch.started_after
        prov["job_seconds"] = round(outcome.seconds, 2)
        records = _read_records(share)
        done = (share / DONE).is_file()
        error = ""
        if not done:
            error = _failure(share, console, outcome, watch)
        kept_log = _keep_log(console, spec.cache_dir)
        return VmResult(
            ok=done,
            job=job,
            records=records,
            provenance=prov,
            error=error,
            console_log=kept_log,
            seconds=round(time.monotonic() - t0, 2),
        )
    finally:
        if not kept_log:
            _keep_log(console, spec.cache_dir)
        _release(run_dir)


class _Watch:
    """Polled while QEMU runs: streams records, decides when to give up."""

    def __init__(
        self,
        share: Path,
        job: VmJob,
        prov: dict[str, Any],
        boot_limit: float,
        cell_limit: float,
        outer: float,
        on_cell: ProgressFn | None,
    ) -> None:
        self.share, self.job, self.prov = share, job, prov
        self.boot_limit, self.cell_limit, self.outer = boot_limit, cell_limit, outer
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
        lines = _read_lines(self.share)
        if len(lines) > self.seen_lines:
            self.last_progress = elapsed
            if self.on_cell is not None:
                prov = {**self.prov, "guest": self.guest}
                for line in lines[self.seen_lines :]:
                    self.on_cell([_to_record(r, prov) for r in json.loads(line)])
            self.seen_lines = len(lines)
        if (self.share / DONE).is_file() or (self.share / FAILED).is_file():
            if self.done_at is None:
                self.done_at = elapsed
            elif elapsed - self.done_at > 30:  # results are in; poweroff is stuck
                return True
        if elapsed > self.outer:
            self.reason = f"the job's time limit ({self.outer:.0f} s) passed"
            return True
        if self.started_after is None and elapsed > self.boot_limit:
            self.reason = f"the guest did not start the job within {self.boot_limit:.0f} s"
            return True
        if self.started_after is not None and elapsed - self.last_progress > self.cell_limit:
            self.reason = f"no cell finished for {self.cell_limit:.0f} s"
            return True
        return False


def _set_pdeathsig() -> None:
    """In the child: die with the parent (a killed fsbench leaves no QEMU behind)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _run_qemu(argv: list[str], watch: _Watch) -> qemu.Outcome:
    t0 = time.monotonic()
    stderr_path = watch.share.parent / "qemu.stderr"
    with open(stderr_path, "wb") as err:
        child = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
            preexec_fn=_set_pdeathsig,
        )
        try:
            while True:
                try:
                    child.wait(timeout=0.5)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if watch(time.monotonic() - t0):
                    break
            watch(time.monotonic() - t0)  # the last records
        finally:
            if child.poll() is None:
                qemu.kill(child)
    stderr = stderr_path.read_text(errors="replace")
    return qemu.Outcome(child.returncode, bool(watch.reason), time.monotonic() - t0, stderr)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    try:
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, default=str))
        os.replace(tmp, path)
    except OSError:
        pass


def check_guest(spec: VmSpec | None = None, log: LogFn = _quiet) -> VmResult:
    """Boot the guest with no cells: its facts (kernel, the filesystems it can mount as
    its own /proc/filesystems and modules say) are in provenance["guest"]."""
    return run_in_vm(VmJob([], "tiny"), spec, log=log)


def _read_lines(share: Path) -> list[str]:
    try:
        text = (share / RECORDS).read_text()
    except OSError:
        return []
    # Only complete lines: the guest may be writing the last one.
    return [ln for ln in text.split("\n")[:-1] if ln.strip()]


def _read_records(share: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for line in _read_lines(share):
        try:
            out.extend(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def console_tail(path: Path, lines: int = CONSOLE_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no console log)"
    text = text.replace("\r", "")
    return "\n".join(text.splitlines()[-lines:])


def _failure(share: Path, console: Path, outcome: qemu.Outcome, watch: _Watch) -> str:
    if (share / FAILED).is_file():
        what = "the guest job failed: " + (share / FAILED).read_text(errors="replace")[-2000:]
    elif watch.reason:
        what = f"VM killed: {watch.reason}"
    else:
        what = f"QEMU exited (code {outcome.returncode}) before the guest wrote {DONE}"
    if outcome.stderr.strip():
        what += f"\nQEMU: {outcome.stderr.strip()[-1000:]}"
    return f"{what}\n--- serial console (last lines) ---\n{console_tail(console)}"


def _keep_log(console: Path, cache: Path) -> str:
    """The serial log outlives the job: cache/logs/<time>-<pid>.log, the last few kept."""
    if not console.is_file():
        return ""
    logs = cache / "logs"
    try:
        logs.mkdir(parents=True, exist_ok=True)
        dst = logs / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
        shutil.copyfile(console, dst)
        for old in sorted(logs.glob("*.log"))[:-KEEP_LOGS]:
            old.unlink(missing_ok=True)
        return str(dst)
    except OSError:
        return ""


def _new_run_dir(workdir: Path) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    for n in range(1000):
        path = workdir / f"{RUN_DIR_PREFIX}{os.getpid()}-{n}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise FsbenchError(f"cannot make a VM run directory in {workdir}")


def _release(run_dir: Path) -> None:
    pidfile = run_dir / "qemu.pid"
    try:
        pid = int(pidfile.read_text().strip())
    except (OSError, ValueError):
        pid = 0
    if pid and pid_alive(pid) and _is_qemu(pid, run_dir):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    shutil.rmtree(run_dir, ignore_errors=True)


def _is_qemu(pid: int, run_dir: Path) -> bool:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    return "qemu" in cmd and str(run_dir) in cmd


def release_stale(workdir: Path = DEFAULT_WORKDIR) -> list[str]:
    """Run directories of fsbench processes that are gone: kill their QEMU, delete them."""
    released = []
    for path in sorted(workdir.glob(f"{RUN_DIR_PREFIX}*-*")):
        owner = path.name[len(RUN_DIR_PREFIX) :].split("-")[0]
        if not owner.isdigit() or pid_alive(int(owner)) or not path.is_dir():
            continue
        _release(path)
        released.append(str(path))
    return released


# -- records ---------------------------------------------------------------------------


def _to_record(data: dict[str, Any], vm_prov: dict[str, Any]) -> TrialRecord:
    fields = dict(data)
    fields["metrics"] = [MetricRecord(**m) for m in fields.get("metrics") or []]
    fields["id"] = None
    fields["provenance"] = {**(fields.get("provenance") or {}), "vm": vm_prov}
    return TrialRecord(**fields)


def import_records(
    result: VmResult, *, only_missing: bool = False, skip: set[str] | None = None
) -> list[TrialRecord]:
    """The guest's records as TrialRecords for Store.record_trials, the VM's provenance
    under "vm"; a cell the guest never finished is a `failed` record with the reason and
    the console's tail. With `only_missing`, just those (the caller stored the others as
    `on_cell` streamed them). Cells whose key is in `skip` (refused by the kernel, so the
    guest skipped them on purpose) are not missing."""
    got = [_to_record(r, result.provenance) for r in result.records]
    have = {(r.seq, r.rep) for r in got}
    out = [] if only_missing else got
    skipped = set(skip or ()) | {r.cell_key for r in got if r.status == "unsupported"}
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
        first = result.error.splitlines()[0] if result.error else "the VM job did not finish"
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
                )
            )
    out.sort(key=lambda r: (r.seq, r.step))
    return out


def format_exception() -> str:
    return traceback.format_exc()
