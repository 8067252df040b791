"""The boot workload on the host: the guest OS booted under QEMU with systemd from a root
on each filesystem config (bootdisks.py makes them); seconds from QEMU's start to the
marker service, and systemd-analyze's kernel / initrd / userspace split.

Every boot reads its root through a fresh qcow2 overlay with the host cache off, the
host's caches dropped first, so no boot is warmer than another.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsbench.plan.model import FsConfig
from fsbench.store.records import MetricRecord, TrialRecord, now
from fsbench.system import cache as system
from fsbench.system import filesystems, monitors
from fsbench.system.errors import FsbenchError, TrialFailed, Unsupported
from fsbench.system.monitors.attached import attached
from fsbench.system.monitors.base import Site
from fsbench.vm import bootroot, qemu
from fsbench.vm.bootdisks import BootRoot, ensure_boot_root
from fsbench.vm.cache import LogFn, quiet
from fsbench.vm.images import GuestImage, ensure_image
from fsbench.vm.job import POWEROFF_GRACE, VmSpec, machine, machine_facts
from fsbench.vm.measured import HostMeasured
from fsbench.vm.protocol import VmCell
from fsbench.vm.records import new_record
from fsbench.vm.rundir import RunDir, run_dir
from fsbench.workloads.base import Better, Metric

# QEMU start -> marker. A systemd boot takes ~10-30 s under TCG on 2 cores.
MARKER_TIMEOUT = {"kvm": 120.0, "tcg": 420.0}
AFTER_MARKER_TIMEOUT = 120.0  # systemd-analyze and power-off
POLL_SECONDS = 0.02  # the marker's time is known to this much
BOOT_CMDLINE = (bootroot.BOOT_FLAG, "fsck.mode=skip", "fastboot")
BLAME_LINES = 15


# -- one boot --------------------------------------------------------------------------


@dataclass
class Boot:
    metrics: list[Metric] = field(default_factory=list)
    samples: list[dict[str, float]] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    error: str = ""


def host_device_of(path: Path) -> str | None:
    """The block device holding `path` (the guest's root disk), for the boot's disk timeline."""
    st = os.stat(path)
    sysfs = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    if not sysfs.exists():
        return None
    return f"/dev/{sysfs.resolve().name}"


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(min|ms|us|h|s)\b")
_UNIT_SECONDS = {"h": 3600.0, "min": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6}


def parse_duration(text: str) -> float:
    """systemd's `1min 2.345s`, `837ms` -> seconds."""
    return sum(float(n) * _UNIT_SECONDS[u] for n, u in _DURATION.findall(text))


def parse_analyze_time(text: str) -> dict[str, float]:
    """`Startup finished in 1.7s (kernel) + 3.1s (initrd) + 12.3s (userspace) = 17.2s`."""
    out: dict[str, float] = {}
    line = next((ln for ln in text.splitlines() if "Startup finished in" in ln), "")
    if not line:
        return out
    head, _, total = line.partition("=")
    for part in head.split("in", 1)[1].split("+"):
        m = re.match(r"\s*(.+?)\s*\((\w+)\)", part)
        if m:
            out[m.group(2)] = parse_duration(m.group(1))
    if total.strip():
        out["total"] = parse_duration(total)
    return out


def guest_reads(
    diskstats_text: str, device: str = qemu.GUEST_ROOT.removeprefix("/dev/")
) -> int | None:
    """Bytes the guest read from its root disk (sectors read x 512) by the time it looked."""
    for line in diskstats_text.splitlines():
        parts = line.split()
        if len(parts) > 5 and parts[2] == device:
            return int(parts[5]) * 512
    return None


def boot_once(img: GuestImage, root: BootRoot, config: FsConfig, spec: VmSpec, accel: str) -> Boot:
    fs = filesystems.get(config.type)
    out = Boot()
    with run_dir(spec.workdir, spec.cache_dir) as rd:
        qemu.make_overlay(root.path, rd.overlay)
        guest = machine(
            spec,
            img,
            rd,
            accel,
            scratch=None,
            cmdline_extra=(*BOOT_CMDLINE, *spec.cmdline_extra),
            init=None,
            root_fstype=fs.mount_type or fs.name,
            root_flags=config.mount,
            root_cache="none",
        )
        out.facts["cmdline"] = guest.cmdline()
        device = host_device_of(root.path)
        out.facts["host_device"] = device
        system.drop_caches()  # syncs first
        _boot(guest, rd, accel, device, out)
        out.facts["console_log"] = rd.keep_log()
    return out


def _boot(guest: qemu.Machine, rd: RunDir, accel: str, device: str | None, out: Boot) -> None:
    """Boot, the host's disk and CPU sampled from QEMU's start to the marker: the boot
    chart is the `sampler` monitor, taken from the monitors' registry like a trial's."""
    limit = MARKER_TIMEOUT[accel]
    chart = (
        attached((monitors.SAMPLER,), Site(device=device, directory=rd.path))
        if device
        else contextlib.nullcontext(None)
    )
    with chart as sampling:
        with contextlib.ExitStack() as running:
            if sampling is not None:
                running.enter_context(sampling.running())
            watch = BootWatch(rd, limit, on_marker=running.close)
            try:
                outcome = guest.run(watch, rd.stderr, poll=POLL_SECONDS)
            finally:
                with contextlib.suppress(OSError):
                    err = rd.stderr.read_text(errors="replace").strip()
                    if err:
                        out.facts["qemu_stderr"] = err[-1000:]
        sampled = sampling.output([]) if sampling is not None else None
    if watch.marker is None:
        why = watch.reason or f"QEMU exited (code {outcome.returncode}) before the boot marker"
        out.error = rd.with_console(why)
        return
    seconds, uptime = watch.marker
    out.metrics.append(Metric("seconds", seconds, "s", Better.LOWER))
    if uptime is not None:
        out.metrics.append(Metric("guest_uptime_s", uptime, "s", Better.LOWER))
    if sampled is not None:
        out.samples = sampled.samples
        read = next((m.value for m in sampled.metrics if m.name == "device_read_bytes"), None)
        if read is not None:
            out.facts["host_read_bytes"] = read
    _collect(rd.share, out)


class BootWatch:
    """Polled while the guest boots: the marker line on the serial console (seconds since
    QEMU started, the guest's uptime then), then the guest's account of the boot in the
    share; stops QEMU when a limit passes or power-off is stuck."""

    def __init__(self, rd: RunDir, limit: float, on_marker: Callable[[], None]) -> None:
        self.console, self.done = rd.console, rd.share / bootroot.DONE_FILE
        self.limit = limit
        self.on_marker = on_marker
        self.marker: tuple[float, float | None] | None = None
        self.reason = ""
        self._offset = 0
        self._buf = b""
        self._done_at: float | None = None
        self._pattern = re.compile(rf"{bootroot.MARKER} uptime=([\d.]+)".encode())

    def __call__(self, elapsed: float) -> bool:
        """True: stop QEMU now."""
        if self.reason:
            return True
        if self.marker is None:
            return self._wait_marker(elapsed)
        if self.done.is_file():
            # Power-off follows; the results are in either way.
            if self._done_at is None:
                self._done_at = elapsed
            return elapsed - self._done_at > POWEROFF_GRACE
        return elapsed - self.marker[0] > AFTER_MARKER_TIMEOUT

    def _wait_marker(self, elapsed: float) -> bool:
        try:
            with open(self.console, "rb") as fh:
                fh.seek(self._offset)
                chunk = fh.read()
        except FileNotFoundError:
            chunk = b""
        if chunk:
            self._offset += len(chunk)
            self._buf = (self._buf + chunk)[-4096:]
            m = self._pattern.search(self._buf)
            if m:
                self.marker = (elapsed, float(m.group(1)))
                self.on_marker()
                return False
        if elapsed > self.limit:
            self.reason = f"no boot marker within {self.limit:.0f} s"
            return True
        return False


def _read(share: Path, name: str) -> str:
    try:
        return (share / name).read_text(errors="replace").strip()
    except OSError:
        return ""


def _collect(share: Path, out: Boot) -> None:
    analyze = _read(share, bootroot.TIME_FILE)
    split = parse_analyze_time(analyze)
    if "kernel" in split and "initrd" not in split:
        # initramfs-tools has no systemd to time it: systemd counts it as the kernel's.
        out.facts["kernel_s_includes"] = "the initramfs"
    for part in ("kernel", "initrd", "userspace"):
        if part in split:
            out.metrics.append(Metric(f"{part}_s", split[part], "s", Better.LOWER))
    if "total" in split:
        out.metrics.append(Metric("systemd_total_s", split["total"], "s", Better.LOWER))
    reads = guest_reads(_read(share, bootroot.DISKSTATS_FILE))
    if reads is not None:
        out.metrics.append(Metric("root_read_mb", reads / 1e6, "MB", Better.LOWER))
    out.facts["systemd_analyze_time"] = analyze
    out.facts["system_state"] = _read(share, bootroot.STATE_FILE)
    out.facts["root_mount"] = _read(share, bootroot.ROOT_FILE)
    out.facts["blame"] = _read(share, bootroot.BLAME_FILE).splitlines()[:BLAME_LINES]
    if not (share / bootroot.DONE_FILE).is_file():
        out.facts["note"] = "the guest did not finish systemd-analyze: split not recorded"


# -- a boot cell -----------------------------------------------------------------------


def run_boot_cell(vc: VmCell, spec: VmSpec, log: LogFn = quiet) -> list[TrialRecord]:
    """One boot of one root filesystem config: its TrialRecord (unsupported when the
    filesystem cannot be made, failed with the console's tail when the boot does not
    reach the marker)."""
    cell = vc.cell()
    record = new_record(vc)
    prov: dict[str, Any] = {}
    try:
        img = ensure_image(spec.kernel, spec.cache_dir, log)
        accel, accel_facts = qemu.resolve_accel(spec.accel, img.kernel)
        prov["vm"] = machine_facts(spec, img, accel, accel_facts, "systemd")
        root = ensure_boot_root(img, cell.config, spec, log)
        prov["boot_root"] = root.as_dict()
        log(f"booting {cell.config.display} (rep {vc.rep}, {accel})")
        boot = boot_once(img, root, cell.config, spec, accel)
        prov["boot"] = boot.facts
        record.samples = boot.samples
        if boot.error:
            record.status = "failed"
            record.message = f"VM: {boot.error.splitlines()[0]}"
            record.detail = boot.error
        else:
            record.status = "ok"
            record.metrics = [
                MetricRecord(m.name, m.value, m.unit, str(m.better)) for m in boot.metrics
            ]
    except Unsupported as exc:
        record.status, record.message, record.detail = "unsupported", exc.message, exc.detail
    except TrialFailed as exc:
        record.status, record.message, record.detail = "failed", exc.message, exc.detail
    except FsbenchError as exc:
        record.status, record.message = "failed", str(exc).splitlines()[0]
        record.detail = str(exc)
    record.provenance = prov
    record.finished_at = now()
    return [record]


# The boot workload is measured here, from the host (vm/measured.py names it).
MEASURED = HostMeasured("boot", run_boot_cell)
