"""QEMU: find it, prove KVM works (or fall back to TCG), build the command line, and the
one way a guest is launched and watched: an outer limit, and killed on every path out."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsbench.system import proc
from fsbench.system.errors import FsbenchError
from fsbench.system.qemu import (
    QEMU,
    qemu_binary,
    qemu_version,
)

KVM_PROBE_SECONDS = 10.0
# The probe's guest: a boot sector that writes 0x31 to isa-debug-exit (qemu exits with
# (0x31 << 1) | 1 = 99) and halts. Exiting with 99 proves the accelerator ran guest code.
_PROBE_CODE = bytes([0xB0, 0x31, 0xE6, 0xF4, 0xF4, 0xEB, 0xFE])
PROBE_EXIT = 99
# The guest's root disk: the first virtio drive QEMU is given (argv() adds it first).
GUEST_ROOT = "/dev/vda"
# What makes a guest an fsbench guest (vm/guestcheck.py refuses to touch a disk without
# both): `fsbench.guest=MARK` on its kernel command line, and on every disk fsbench gives
# it the virtio serial `fsbench-MARK` (a disk property mkfs and discard cannot erase).
# MARK is new for every guest.
GUEST_MARK_PARAM = "fsbench.guest"
DISK_SERIAL_PREFIX = "fsbench-"


def disk_serial(mark: str) -> str:
    """The serial of every disk of the guest whose mark is `mark` (virtio: 20 bytes)."""
    return f"{DISK_SERIAL_PREFIX}{mark}"


# The host directory the guest sees (9p over virtio): the job in, the records out.
SHARE_TAG = "fsbench"
SHARE_MOUNTPOINT = "/share"
SHARE_MOUNT_OPTIONS = "trans=virtio,version=9p2000.L,msize=262144"
# In a systemd boot, after systemd-modules-load: while another process is still loading
# 9pnet_virtio, its transport exists before its device does, and the mount fails with
# "9pnet_virtio: no channels available for device fsbench" (seen under load).
SHARE_FSTAB = (
    f"{SHARE_TAG} {SHARE_MOUNTPOINT} 9p {SHARE_MOUNT_OPTIONS},nofail,"
    "x-systemd.after=systemd-modules-load.service 0 0"
)


@dataclass(frozen=True)
class KvmProbe:
    usable: bool
    reason: str
    seconds: float

    def as_dict(self) -> dict[str, object]:
        return {"usable": self.usable, "reason": self.reason, "seconds": round(self.seconds, 2)}


# Per kernel (None: the boot sector alone), for this process.
_probe_memo: dict[str | None, KvmProbe] = {}
# What the kernel probe's console shows once the guest kernel ran to its root mount.
KERNEL_PROBE_MARK = "Kernel panic"
# The kernel probe's verdict, kept beside the kernel for this boot of the host (each
# fsbench process would otherwise wait out a hanging KVM again).
KERNEL_PROBE_FILE = "kvm-probe.json"


def probe_kvm(
    timeout: float = KVM_PROBE_SECONDS, *, kernel: Path | None = None, fresh: bool = False
) -> KvmProbe:
    """Boot a 512-byte guest under KVM, then `kernel` (the guests' own) with no root disk;
    usable only if both run and exit in time. (`/dev/kvm` can exist and hang: only a guest
    that really ran proves it. A nested /dev/kvm seen here ran the boot sector, even into
    long mode, yet hung every Linux kernel right after its real-mode setup.)"""
    key = str(kernel) if kernel is not None else None
    if key in _probe_memo and not fresh:
        return _probe_memo[key]
    # A verdict kept for this boot of the host answers without starting a guest at all.
    probe = _kept(kernel) if kernel is not None and not fresh else None
    if probe is None:
        probe = _probe(timeout)
        if probe.usable and kernel is not None:
            probe = _probe_kernel(kernel, timeout)
            _keep(kernel, probe)
    _probe_memo[key] = probe
    return probe


def _verdict_key(kernel: Path) -> dict[str, Any]:
    """What a kept verdict holds for: this boot of the host, this QEMU, this kernel."""
    stat = kernel.stat()
    return {
        "boot_id": Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
        "qemu": qemu_binary(),
        "kernel": [str(kernel), stat.st_size, stat.st_mtime_ns],
    }


def _kept(kernel: Path) -> KvmProbe | None:
    """The verdict kept beside `kernel` for this boot, if there is one."""
    try:
        data = json.loads(kernel.with_name(KERNEL_PROBE_FILE).read_text())
        if data.get("key") == _verdict_key(kernel):
            return KvmProbe(**data["probe"])
    except (OSError, ValueError, TypeError, KeyError):
        pass
    return None


def _keep(kernel: Path, probe: KvmProbe) -> None:
    """The kernel probe's verdict beside `kernel`, for the next fsbench of this boot."""
    kept = kernel.with_name(KERNEL_PROBE_FILE)
    try:
        tmp = kept.with_name(f"{kept.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"key": _verdict_key(kernel), "probe": probe.as_dict()}))
        os.replace(tmp, kept)
    except OSError:
        pass  # a read-only cache: probed again next time


def _probe(timeout: float) -> KvmProbe:
    binary = qemu_binary()
    if binary is None:
        return KvmProbe(False, f"{QEMU} not found", 0.0)
    if not os.path.exists("/dev/kvm"):
        return KvmProbe(False, "no /dev/kvm", 0.0)
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return KvmProbe(False, "/dev/kvm not accessible", 0.0)
    with tempfile.TemporaryDirectory(prefix="fsbench-kvmprobe-") as tmp:
        disk = Path(tmp) / "boot.img"
        disk.write_bytes(_PROBE_CODE.ljust(510, b"\0") + b"\x55\xaa")
        argv = [
            *_kvm_argv(binary, 32),
            *["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"],
            *["-drive", f"file={disk},format=raw,if=floppy"],
        ]
        out = launch(argv, Path(tmp) / "stderr", lambda elapsed: elapsed > timeout, poll=0.05)
    if out.returncode == PROBE_EXIT:
        return KvmProbe(True, f"test guest ran under KVM in {out.seconds:.1f} s", out.seconds)
    return _failed("test guest", out, timeout)


def _probe_kernel(kernel: Path, timeout: float) -> KvmProbe:
    """`kernel` under KVM with no root disk: it runs to its root mount, panics, and
    (panic=-1, -no-reboot) QEMU exits; its console must show the panic."""
    binary = qemu_binary()
    assert binary is not None  # _probe found it
    with tempfile.TemporaryDirectory(prefix="fsbench-kvmprobe-") as tmp:
        console = Path(tmp) / "console"
        argv = [
            *_kvm_argv(binary, 256),
            *["-serial", f"file:{console}", "-kernel", str(kernel)],
            *["-append", "console=ttyS0 panic=-1"],
        ]
        out = launch(argv, Path(tmp) / "stderr", lambda elapsed: elapsed > timeout, poll=0.05)
        shown = console.read_text(errors="replace") if console.exists() else ""
    what = f"the guest kernel ({kernel.name})"
    if not out.stopped and KERNEL_PROBE_MARK in shown:
        return KvmProbe(
            True, f"{what} ran under KVM to its root mount in {out.seconds:.1f} s", out.seconds
        )
    return _failed(what, out, timeout)


def _kvm_argv(binary: str, ram_mb: int) -> list[str]:
    return [
        *[binary, "-accel", "kvm", "-cpu", "host", "-m", str(ram_mb)],
        *["-display", "none", "-nodefaults", "-no-reboot"],
    ]


def _failed(what: str, out: Outcome, timeout: float) -> KvmProbe:
    if out.stopped:
        return KvmProbe(False, f"{what} under KVM hung (no exit in {timeout:.0f} s)", out.seconds)
    err = out.stderr.strip().splitlines()[0] if out.stderr.strip() else f"exit {out.returncode}"
    return KvmProbe(False, f"{what} under KVM failed: {err}", out.seconds)


# The CPU a TCG guest gets: qemu64 with x86-64-v2 (the guest's Python packages are the
# host's: numpy >= 2.4 is built for x86-64-v2 and dies of SIGILL on plain qemu64), and
# +rdrand: an entropy source, or mkfs stalls seconds for the random pool.
TCG_CPU = "qemu64,+rdrand,+cx16,+lahf_lm,+popcnt,+ssse3,+sse4.1,+sse4.2"


def resolve_accel(requested: str, kernel: Path | None = None) -> tuple[str, dict[str, Any]]:
    """auto | kvm | tcg -> the accelerator a guest booting `kernel` gets, and how that was
    decided."""
    if requested == "tcg":
        return "tcg", {"requested": "tcg"}
    probe = probe_kvm(kernel=kernel)
    if requested == "kvm" and not probe.usable:
        raise FsbenchError(f"--accel kvm: {probe.reason}")
    return ("kvm" if probe.usable else "tcg"), {
        "requested": requested,
        "kvm_probe": probe.as_dict(),
    }


@dataclass
class Outcome:
    returncode: int | None
    stopped: bool  # the watch stopped it (QEMU was killed) rather than QEMU exiting
    seconds: float
    stderr: str


# Called with the seconds since QEMU started, every poll while it runs and once after it
# ends; True: stop QEMU now.
Watch = Callable[[float], bool]


@dataclass
class Machine:
    """Everything QEMU needs for one guest job (the command line is a pure function)."""

    kernel: Path
    initrd: Path
    root_overlay: Path  # qcow2 over the cached raw image
    scratch: Path | None  # raw, sparse; None: no second disk (a boot)
    share: Path
    console_log: Path
    ram_mb: int = 2048
    vcpus: int = 2
    accel: str = "tcg"  # tcg | kvm
    throttle: dict[str, int] = field(default_factory=dict)
    cmdline_extra: tuple[str, ...] = ()
    init: str | None = None  # init=... (None: the image's systemd)
    root_fstype: str | None = None  # rootfstype= (the boot workload's roots)
    root_flags: str = ""  # rootflags=: the config's mount options
    # The root's host cache: `unsafe` for jobs (the root is a throwaway overlay); `none` for
    # a boot, so every boot reads its root from the disk, not from the host's page cache.
    root_cache: str = "unsafe"
    pidfile: Path | None = None  # QEMU writes its pid there (a stale run is released by it)
    # A second scratch disk like the first (/dev/vdc): the clean copies of aged filesystems.
    twin: Path | None = None
    # Disks after those (/dev/vdd, ...): the crash workload's write log and replay target.
    extra: tuple[Path, ...] = ()
    # virtio serial ports, by name, each written by the guest into a host file as it
    # comes (the crash workload's acknowledgements).
    ports: tuple[tuple[str, Path], ...] = ()
    # This guest's mark (GUEST_MARK_PARAM): on its command line and its disks' serials.
    mark: str = field(default_factory=lambda: secrets.token_hex(4))

    def cmdline(self) -> str:
        base = [
            f"root={GUEST_ROOT}",
            *([f"rootfstype={self.root_fstype}"] if self.root_fstype else []),
            *([f"rootflags={self.root_flags}"] if self.root_flags else []),
            "rw",
            "console=ttyS0,115200",
            "panic=-1",
            "loglevel=4",
            "systemd.show_status=auto",
            "random.trust_cpu=on",
            "cryptomgr.notests",
            # The boot's IO-APIC timer check counts timer ticks in a short window: a TCG
            # guest on a loaded host misses it and panics ("IO-APIC + timer doesn't work!",
            # seen while the host ran other tests); a virtual machine's timer is not the
            # one that check is for.
            "no_timer_check",
            f"{GUEST_MARK_PARAM}={self.mark}",
        ]
        if self.init:
            base.append(f"init={self.init}")
        return " ".join([*base, *self.cmdline_extra])

    def argv(self, binary: str = QEMU) -> list[str]:
        if self.accel == "kvm":
            accel = ["-accel", "kvm", "-cpu", "host"]
        else:
            accel = ["-accel", "tcg,thread=multi", "-cpu", TCG_CPU]
        # Each disk a virtio-blk device of its own, in order (/dev/vda, vdb...), carrying
        # this guest's serial.
        disks = [(self.root_overlay, f"format=qcow2,cache={self.root_cache}", False)]
        disks += [
            (disk, "format=raw,cache=none,aio=threads,discard=unmap", True)
            for disk in (self.scratch, self.twin, *self.extra)
            if disk is not None
        ]
        drives = []
        for n, (disk, options, scratch) in enumerate(disks):
            drive = f"file={disk},{options},if=none,id=disk{n}"
            if scratch:
                for key, value in sorted(self.throttle.items()):
                    drive += f",throttling.{key}={int(value)}"
            device = f"virtio-blk-pci,drive=disk{n},serial={disk_serial(self.mark)}"
            drives += ["-drive", drive, "-device", device]
        ports = ["-device", "virtio-serial-pci,id=vser0"] if self.ports else []
        for n, (name, path) in enumerate(self.ports):
            ports += ["-chardev", f"file,id=port{n},path={path}"]
            ports += ["-device", f"virtserialport,bus=vser0.0,chardev=port{n},name={name}"]
        return [
            binary,
            *accel,
            "-machine",
            "q35",
            "-m",
            str(self.ram_mb),
            "-smp",
            str(self.vcpus),
            "-nodefaults",
            "-no-user-config",
            "-display",
            "none",
            "-no-reboot",
            "-serial",
            f"file:{self.console_log}",
            "-kernel",
            str(self.kernel),
            "-initrd",
            str(self.initrd),
            "-append",
            self.cmdline(),
            *drives,
            *ports,
            "-virtfs",
            f"local,path={self.share},mount_tag={SHARE_TAG},security_model=none,id={SHARE_TAG}",
            "-device",
            "virtio-rng-pci",
            *(["-pidfile", str(self.pidfile)] if self.pidfile else []),
        ]

    def run(self, watch: Watch, stderr_path: Path, poll: float = 0.5) -> Outcome:
        """Launch this machine with the QEMU found on PATH (see `launch`)."""
        return launch(self.argv(qemu_binary() or QEMU), stderr_path, watch, poll)


THROTTLE_KEYS = ("iops-total", "bps-total", "iops-read", "iops-write", "bps-read", "bps-write")


def validate_throttle(throttle: dict[str, int] | None) -> dict[str, int]:
    out = {}
    for key, value in (throttle or {}).items():
        if key not in THROTTLE_KEYS:
            raise ValueError(f"throttle {key!r}: expected one of {', '.join(THROTTLE_KEYS)}")
        if int(value) <= 0:
            raise ValueError(f"throttle {key}={value}: must be > 0")
        out[key] = int(value)
    return out


def make_overlay(backing: Path, overlay: Path) -> None:
    res = proc.run(
        [
            "qemu-img",
            "create",
            "-q",
            "-f",
            "qcow2",
            "-F",
            "raw",
            "-b",
            str(backing),
            str(overlay),
        ],
        timeout=60,
    )
    if not res.ok:
        raise FsbenchError(f"qemu-img create overlay: {res.output}")


def make_scratch(path: Path, size_bytes: int) -> None:
    with open(path, "wb") as fh:
        fh.truncate(size_bytes)


def launch(argv: list[str], stderr_path: Path, watch: Watch, poll: float = 0.5) -> Outcome:
    """Start QEMU in a session of its own that dies with this process, call `watch` every
    `poll` seconds until QEMU exits or `watch` says stop, then once more (the last results
    in). QEMU is killed on every path out, Ctrl-C included. Its stderr goes to
    `stderr_path` and comes back in the Outcome."""
    t0 = time.monotonic()
    stopped = False
    with open(stderr_path, "wb") as err:
        child = proc.spawn(argv, stderr=err, preexec_fn=proc.die_with_parent(signal.SIGKILL))
        try:
            while True:
                try:
                    child.wait(timeout=poll)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if watch(time.monotonic() - t0):
                    stopped = True
                    break
            watch(time.monotonic() - t0)
        finally:
            if child.poll() is None:
                kill(child)
    stderr = stderr_path.read_text(errors="replace")
    return Outcome(child.returncode, stopped, time.monotonic() - t0, stderr)


def kill(child: subprocess.Popen[bytes]) -> None:
    """SIGTERM the group, then SIGKILL; never wait forever (a process stuck in KVM)."""
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(child.pid, sig)
        except ProcessLookupError:
            return
        try:
            child.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def qemu_facts() -> dict[str, object]:
    binary = qemu_binary()
    return {
        "binary": binary,
        "version": qemu_version(binary) if binary else None,
        "qemu_img": proc.which("qemu-img"),
    }
