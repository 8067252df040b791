"""The crash workload on the host: `crashes` power cuts per trial, on one scratch disk.

Boot k checks what the power cut of boot k-1 left (read-only fsck, mount, the pattern's
check against the acknowledgements the host received, fsck again), then makes a fresh
filesystem and runs the pattern; the host kills QEMU (SIGKILL: no flush, no goodbye) a
seeded number of seconds after the pattern's first acknowledgement. The last boot only
checks. So N crashes take N + 1 boots.

Each crash has a seed of its own (`case_seed`), which fixes every byte the pattern writes,
every choice it makes and the moment of the cut; the kernel's timing decides the rest. A
crash that lost something is kept whole in the trial's provenance (its seed, the command
that replays it, the acknowledgements, both fsck outputs, the damaged files).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shlex
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsbench.plan.model import FsConfig
from fsbench.store.records import MetricRecord, TrialRecord, now
from fsbench.system.errors import FsbenchError, Unsupported
from fsbench.vm import pyenv, qemu
from fsbench.vm.cache import LogFn, quiet
from fsbench.vm.crash.guest import ACK_PORT, ACKS_IN, CHECK_FILE, RECORDED_FILE, REFUSED_FILE
from fsbench.vm.crash.patterns import PATTERNS, READY, read_acks
from fsbench.vm.guestfiles import GUEST_INIT
from fsbench.vm.images import GuestImage, ensure_image
from fsbench.vm.job import BOOT_TIMEOUT, POWEROFF_GRACE, VmSpec, machine, machine_facts
from fsbench.vm.measured import HostMeasured
from fsbench.vm.protocol import DONE, FAILED, JOB, PYSRC, STARTED, VmCell, VmJob
from fsbench.vm.records import new_record
from fsbench.vm.rundir import RunDir, run_dir

MIN_CUT = 0.2  # seconds after the first acknowledgement: the pattern has begun
POLL = 0.05  # the moment of the cut is known to this much
# A boot's work beyond booting: the check (two fsck runs, a mount, the pattern's check),
# mkfs, and the pattern until the cut.
BOOT_WORK = 600.0
ACK_TAIL = 200  # acknowledgements kept with a failing case (the last ones; all counted)


def case_seed(seed: int, rep: int, index: int) -> int:
    """Crash `index` of repetition `rep` of a trial with this seed: its own seed."""
    digest = hashlib.sha256(f"crash:{seed}:{rep}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def cut_after(seed: int, window: float) -> float:
    """Seconds after the first acknowledgement when the power goes (seeded)."""
    return round(random.Random(f"cut:{seed}").uniform(MIN_CUT, max(MIN_CUT, window)), 3)


@dataclass
class Boot:
    """One guest: what it found (check), what it acknowledged before the cut."""

    check: dict[str, Any] | None = None
    acks: str = ""  # the port's bytes as the host received them
    cut: bool = False  # the host cut the power (the run phase reached its moment)
    refused: dict[str, Any] | None = None  # mkfs or mount refused the config
    recorded: dict[str, Any] | None = None  # whether dm-log-writes recorded the run
    error: str = ""  # the guest failed or a limit passed: the console's tail


def fsck_error(check: dict[str, Any]) -> bool:
    """The read-only check found problems that journal recovery does not explain: before
    the mount when nothing waited for replay, else after it."""
    before, after = check.get("fsck_before"), check.get("fsck_after")
    if before and not before["clean"] and not before["recovery_pending"]:
        return True
    return bool(after and not after["clean"])


def damaged(check: dict[str, Any]) -> bool:
    v = check.get("verdict") or {}
    return bool("mount_error" in check or v.get("lost") or v.get("empty") or v.get("mixed"))


def counts(check: dict[str, Any]) -> dict[str, Any]:
    v = check.get("verdict") or {}
    return {
        "acked": v.get("acked", 0),
        "lost": v.get("lost", 0),
        "empty": v.get("empty", 0),
        "mixed": v.get("mixed", 0),
        "fsck_error": fsck_error(check),
        "mount_seconds": check.get("mount_seconds"),
        "journal_replayed": check.get("journal_replayed"),
        "mount_error": check.get("mount_error"),
    }


@dataclass
class Crash:
    """One power cut and what the next boot found: on the disk (`check`) and in the
    volatile-cache state replayed from the recorded writes (`check["cache"]`)."""

    index: int
    seed: int
    cut_after: float
    acks: list[dict[str, Any]] = field(default_factory=list)
    check: dict[str, Any] = field(default_factory=dict)
    recorded: dict[str, Any] = field(default_factory=dict)  # the run's dm-log-writes

    @property
    def cache(self) -> dict[str, Any] | None:
        """The volatile-cache state's check, when one was replayed."""
        cache = self.check.get("cache")
        return cache if cache and "skipped" not in cache else None

    def summary(self) -> dict[str, Any]:
        out = {
            "index": self.index,
            "seed": self.seed,
            "cut_after_s": self.cut_after,
            "acks": len(self.acks),
            **counts(self.check),
        }
        cache = self.check.get("cache")
        if cache is not None:
            out["cache"] = {k: v for k, v in cache.items() if k not in ("verdict", "fsck_before",
                                                                     "fsck_after")}  # fmt: skip
            if self.cache is not None:
                out["cache"].update(counts(self.cache))
        elif self.recorded:
            out["cache"] = {"skipped": self.recorded.get("why_not") or "not recorded"}
        return out

    def kept(self, replay: str) -> dict[str, Any]:
        """Everything a kernel developer needs to look at this case again."""
        out = {
            **self.summary(),
            "replay": replay,
            "acks_total": len(self.acks),
            "acks_last": self.acks[-ACK_TAIL:],
            "fsck_before": self.check.get("fsck_before"),
            "fsck_after": self.check.get("fsck_after"),
            "damage": (self.check.get("verdict") or {}).get("damage", []),
        }
        if self.cache is not None and (damaged(self.cache) or fsck_error(self.cache)):
            out["cache_damage"] = (self.cache.get("verdict") or {}).get("damage", [])
            out["cache_fsck_after"] = self.cache.get("fsck_after")
        return out

    def failing(self) -> bool:
        return any(damaged(c) or fsck_error(c) for c in (self.check, self.cache) if c)


def _sum(checks: list[dict[str, Any]], key: str) -> int:
    return sum((c.get("verdict") or {}).get(key, 0) for c in checks)


def metrics(crashes: list[Crash]) -> list[MetricRecord]:
    """Counts over the N crashes of a trial (each with N beside it in the report); the
    volatile-cache states' own counts when the guest recorded the writes."""
    checks = [c.check for c in crashes]
    mounts = [c["mount_seconds"] for c in checks if "mount_seconds" in c]
    out = [
        MetricRecord("crashes", len(crashes), "count", "higher"),
        MetricRecord("damaged_crashes", sum(map(damaged, checks)), "count", "lower"),
        MetricRecord("acked_lost", _sum(checks, "lost"), "ops", "lower"),
        MetricRecord("files_empty", _sum(checks, "empty"), "files", "lower"),
        MetricRecord("files_mixed", _sum(checks, "mixed"), "files", "lower"),
        MetricRecord("fsck_errors", sum(map(fsck_error, checks)), "count", "lower"),
        MetricRecord("mount_failures", sum("mount_error" in c for c in checks), "count", "lower"),
        MetricRecord("acked_ops", _sum(checks, "acked"), "ops", "higher"),
        # Mounts whose kernel said it replayed the journal (ext4 "recovery complete", xfs
        # "Ending recovery"): the cuts that caught the filesystem mid-transaction.
        MetricRecord(
            "journal_replays",
            sum(bool(c.get("journal_replayed")) for c in checks),
            "count",
            "higher",
        ),
    ]
    if mounts:
        out.append(MetricRecord("mount_seconds", sum(mounts) / len(mounts), "s", "lower"))
    states = [c.cache for c in crashes if c.cache is not None]
    if states:
        out += [
            MetricRecord("cache_states", len(states), "count", "higher"),
            MetricRecord("cache_damaged", sum(map(damaged, states)), "count", "lower"),
            MetricRecord("cache_acked_lost", _sum(states, "lost"), "ops", "lower"),
            MetricRecord("cache_fsck_errors", sum(map(fsck_error, states)), "count", "lower"),
        ]
    return out


def replay_command(config: FsConfig, record: TrialRecord, seed: int) -> str:
    """The command that runs this one case again."""
    argv = ["fsbench", "run", "--target", "vm", "--fs", config.spec, "--workload", "crash"]
    params = {**record.params, "crashes": 1, "replay": seed}
    for key, value in sorted(params.items()):
        argv += ["--set", f"{key}={value}"]
    return shlex.join(argv)


def run_crash_cell(vc: VmCell, spec: VmSpec, log: LogFn = quiet) -> list[TrialRecord]:
    """One trial of the crash workload: its record (unsupported when the guest kernel
    refuses the config, failed with the console's tail when a guest fails)."""
    cell = vc.cell()
    record = new_record(vc)
    params = cell.params
    pattern = PATTERNS[params["pattern"]]
    prov: dict[str, Any] = {}
    crashes: list[Crash] = []
    try:
        img = ensure_image(spec.kernel, spec.cache_dir, log)
        accel, accel_facts = qemu.resolve_accel(spec.accel, img.kernel)
        prov["vm"] = machine_facts(spec, img, accel, accel_facts, "script")
        prov["vm"].update(scratch_bytes=spec.scratch_bytes, scratch_cache="none")
        job = {
            "config": cell.config.model_dump(mode="json"),
            "pattern": pattern.name,
            "size": params["files"],
            "volatile_cache": params["volatile_cache"],
        }
        with run_dir(spec.workdir, spec.cache_dir) as disk:
            scratch, log_disk = disk.path / "scratch.img", disk.path / "writes.log"
            qemu.make_scratch(scratch, spec.scratch_bytes)
            qemu.make_scratch(log_disk, spec.scratch_bytes)  # sparse: what was written
            previous: Crash | None = None
            for index in range(params["crashes"] + 1):
                seed = params["replay"] or case_seed(params["seed"], vc.rep, index)
                last = index == params["crashes"]
                this = None if last else Crash(index, seed, cut_after(seed, params["window"]))
                boot = _boot(img, spec, accel, (scratch, log_disk), job, previous, this)
                if previous is not None:
                    if boot.check is None:
                        raise FsbenchError(boot.error or "the check after a crash did not run")
                    previous.check = boot.check
                    crashes.append(previous)
                if boot.refused is not None:
                    raise Unsupported(boot.refused["message"], detail=boot.refused["detail"])
                if this is not None:
                    if not boot.cut:
                        raise FsbenchError(boot.error or "the pattern never began")
                    this.acks = read_acks(boot.acks)
                    this.recorded = boot.recorded or {}
                    log(
                        f"crash {index + 1}: power cut {this.cut_after} s in, {len(this.acks)} acks"
                    )
                previous = this
        record.metrics = metrics(crashes)
        record.status = "ok"
        prov["over"] = {"n": len(crashes), "of": "crashes"}  # what every count is out of
    except Unsupported as exc:
        record.status, record.message, record.detail = "unsupported", exc.message, exc.detail
    except FsbenchError as exc:
        record.status, record.message = "failed", str(exc).splitlines()[0]
        record.detail = str(exc)
    prov["crash"] = {
        "pattern": pattern.name,
        "promise": pattern.promise,
        "n": len(crashes),
        "crashes": [c.summary() for c in crashes],
        "volatile_cache": _volatile_cache(crashes, params["volatile_cache"]),
        "failing": [
            c.kept(replay_command(cell.config, record, c.seed)) for c in crashes if c.failing()
        ],
    }
    record.provenance = prov
    record.finished_at = now()
    return [record]


def _volatile_cache(crashes: list[Crash], asked: bool) -> str:
    """What the report says of the volatile-cache states: tested, or why not."""
    if not asked:
        return "not tested (volatile_cache=false): power cuts only"
    if any(c.cache is not None for c in crashes):
        return "dm-log-writes: one replayed state per crash (a flush point + some later writes)"
    why = next((c.recorded.get("why_not") for c in crashes if c.recorded.get("why_not")), "")
    return f"not tested ({why or 'no state could be replayed'}): power cuts only"


def _boot(
    img: GuestImage,
    spec: VmSpec,
    accel: str,
    disks: tuple[Path, Path],
    job: dict[str, Any],
    previous: Crash | None,
    this: Crash | None,
) -> Boot:
    """One guest on the crash's disks (scratch, write log; a fresh replay target): check
    what `previous` left, then run `this` until the cut."""
    crash = {
        **job,
        "check": {"seed": previous.seed, "recorded": previous.recorded.get("recorded")}
        if previous
        else None,
        "run": {"seed": this.seed} if this else None,
    }
    out = Boot()
    with run_dir(spec.workdir, spec.cache_dir) as rd:
        (rd.share / JOB).write_text(VmJob([], "tiny", crash=crash).to_json())
        if previous is not None:
            (rd.share / ACKS_IN).write_text("".join(_line(a) for a in previous.acks))
        pyenv.install_fsbench(rd.share / PYSRC, compile_=True)
        qemu.make_overlay(img.root, rd.overlay)
        acks = rd.path / "acks.log"
        replay_disk = rd.path / "replay.img"  # zeroed: the state is written onto it
        qemu.make_scratch(replay_disk, spec.scratch_bytes)
        guest = machine(
            spec,
            img,
            rd,
            accel,
            scratch=disks[0],
            twin=disks[1],
            extra=(replay_disk,),
            init=GUEST_INIT,
            cmdline_extra=tuple(spec.cmdline_extra),
            ports=((ACK_PORT, acks),),
        )
        watch = CutWatch(rd, acks, BOOT_TIMEOUT[accel], this.cut_after if this else None)
        guest.run(watch, rd.stderr, poll=POLL)
        out.cut = watch.cut
        out.acks = acks.read_text(errors="replace") if acks.is_file() else ""
        out.check = _json(rd.share / CHECK_FILE)
        out.refused = _json(rd.share / REFUSED_FILE)
        out.recorded = _json(rd.share / RECORDED_FILE)
        if (rd.share / FAILED).is_file():
            out.error = rd.with_console(
                "the guest failed: " + (rd.share / FAILED).read_text(errors="replace")[-2000:]
            )
        elif watch.reason:
            out.error = rd.with_console(f"VM killed: {watch.reason}")
    return out


class CutWatch:
    """Polled while a crash guest runs: cuts the power `cut_after` seconds after the
    pattern's first acknowledgement; stops a guest that is done or past its limits."""

    def __init__(self, rd: RunDir, acks: Path, boot_limit: float, cut_after: float | None):
        self.rd, self.acks = rd, acks
        self.boot_limit, self.cut_after = boot_limit, cut_after
        self.ready_at: float | None = None
        self.started_at: float | None = None
        self.done_at: float | None = None
        self.cut = False
        self.reason = ""

    def __call__(self, elapsed: float) -> bool:
        """True: stop QEMU now."""
        if self.cut:
            return True
        if self.started_at is None and (self.rd.share / STARTED).is_file():
            self.started_at = elapsed
        if self.cut_after is not None:
            if self.ready_at is None and self._ready():
                self.ready_at = elapsed
            if self.ready_at is not None and elapsed - self.ready_at >= self.cut_after:
                self._power_cut()
                return True
        share = self.rd.share
        if any((share / f).is_file() for f in (DONE, FAILED, REFUSED_FILE)):
            if self.done_at is None:
                self.done_at = elapsed
            return elapsed - self.done_at > POWEROFF_GRACE
        if self.started_at is None and elapsed > self.boot_limit:
            self.reason = f"the guest did not start within {self.boot_limit:.0f} s"
            return True
        if self.started_at is not None and elapsed - self.started_at > BOOT_WORK:
            self.reason = f"the guest's check and pattern took over {BOOT_WORK:.0f} s"
            return True
        return False

    def _ready(self) -> bool:
        try:
            with open(self.acks, "rb") as fh:
                first = fh.readline()
        except FileNotFoundError:
            return False
        return first.endswith(b"\n") and READY.encode() in first

    def _power_cut(self) -> None:
        """SIGKILL, at once: QEMU neither flushes nor finishes the guest's requests."""
        try:
            pid = int(self.rd.pidfile.read_text().strip())
            os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError):
            pass  # launch() kills it on the way out either way
        self.cut = True


def _line(ack: dict[str, Any]) -> str:
    return json.dumps(ack, separators=(",", ":")) + "\n"


def _json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# The crash workload is measured here, from the host (vm/measured.py names it).
MEASURED = HostMeasured("crash", run_crash_cell)
