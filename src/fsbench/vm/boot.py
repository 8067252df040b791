"""The boot workload on the host: a root image of the guest OS per filesystem config,
booted under QEMU with systemd; seconds from QEMU's start to the marker service, and
systemd-analyze's kernel / initrd / userspace split.

Roots are made once per (guest image, filesystem config) and cached: on the host for the
filesystems its kernel writes (a copy of the cached image's root, mounted read-only), in a
guest for the others (jfs, reiserfs, ...: the guest copies its own root onto its scratch
disk). Every boot reads its root through a fresh qcow2 overlay with the host cache off, the
host's caches dropped first, so no boot is warmer than another.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fsbench import filesystems, fsops, mounts, proc, system
from fsbench.errors import FsbenchError, TrialFailed, Unsupported
from fsbench.monitors.sampler import Sampler
from fsbench.plan import FsConfig
from fsbench.store import MetricRecord, TrialRecord, now
from fsbench.targets.loop import detach_loop
from fsbench.vm import bootroot, qemu
from fsbench.vm import image as vm_image
from fsbench.vm import job as vm_job
from fsbench.workloads.base import Better, Metric

# Bump when the way a boot root is made changes: cached roots are then remade.
BOOT_RECIPE = "2"  # 2: copied with tar (no ACLs/xattrs anywhere)
# QEMU start -> marker. A systemd boot takes ~10-30 s under TCG on 2 cores.
MARKER_TIMEOUT = {"kvm": 120.0, "tcg": 420.0}
AFTER_MARKER_TIMEOUT = 120.0  # systemd-analyze and power-off
POLL_SECONDS = 0.02  # the marker's time is known to this much
BOOT_CMDLINE = (bootroot.BOOT_FLAG, "fsck.mode=skip", "fastboot")
BLAME_LINES = 15
GUEST_ROOT_TIMEOUT = 1800.0  # making a root inside a guest: boot + mkfs + copying ~1 GB


@dataclass(frozen=True)
class BootRoot:
    path: Path
    key: str
    config: str  # the filesystem config's label
    made_in: str  # host | guest
    mkfs: list[str]
    seconds: float  # to make it

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "key": self.key,
            "config": self.config,
            "made_in": self.made_in,
            "mkfs": self.mkfs,
            "seconds": round(self.seconds, 1),
        }


def root_key(img: vm_image.GuestImage, config: FsConfig) -> str:
    text = json.dumps(
        [
            img.key,
            config.type,
            list(config.mkfs),
            config.mount,
            BOOT_RECIPE,
            bootroot.MARKER_SCRIPT_TEXT,
            bootroot.MARKER_UNIT_TEXT,
        ]
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def host_can_make(fs_type: str) -> bool:
    """The host kernel mounts it and its mkfs is installed."""
    fs = filesystems.get(fs_type)
    avail = filesystems.availability(fs, filesystems.kernel_filesystems())
    return avail.available and proc.which(fs.mkfs[0]) is not None


# root key -> why it could not be made: asked once per run, not again at every rep.
_refused: dict[str, Unsupported | TrialFailed] = {}


def ensure_boot_root(
    img: vm_image.GuestImage,
    config: FsConfig,
    spec: vm_job.VmSpec,
    log: vm_job.LogFn = vm_job._quiet,
) -> BootRoot:
    key = root_key(img, config)
    if key in _refused:
        raise _refused[key]
    roots = spec.cache_dir / "boot-roots"
    path, meta = roots / f"{key}.img", roots / f"{key}.json"
    if path.is_file() and meta.is_file():
        return _load(meta)
    roots.mkdir(parents=True, exist_ok=True)
    with vm_image._locked(spec.cache_dir, f"bootroot-{key}"):
        if path.is_file() and meta.is_file():
            return _load(meta)
        t0 = time.monotonic()
        try:
            if host_can_make(config.type):
                log(f"making the {config.display} root on the host")
                made_in, mkfs = "host", _make_on_host(img, config, spec.workdir, path)
            else:
                log(f"making the {config.display} root in a guest (not in the host's kernel)")
                made_in, mkfs = "guest", _make_in_guest(img, config, spec, path, log)
        except (Unsupported, TrialFailed) as exc:
            _refused[key] = exc
            raise
        root = BootRoot(path, key, config.display, made_in, mkfs, time.monotonic() - t0)
        meta.write_text(json.dumps(root.as_dict(), indent=1))
        return root


def _load(meta: Path) -> BootRoot:
    data = json.loads(meta.read_text())
    return BootRoot(
        Path(data["path"]),
        data["key"],
        data.get("config", ""),
        data["made_in"],
        data["mkfs"],
        data["seconds"],
    )


def _make_on_host(
    img: vm_image.GuestImage, config: FsConfig, workdir: Path, dest: Path
) -> list[str]:
    """mkfs on a sparse image the size of the guest's root, copy the cached root into it
    (mounted read-only, no journal replay), add the boot files; released on every path.
    Named like the loop target's images and mount directories, so a killed run's leftovers
    are found and released by `fsbench doctor` / the next run."""
    fs = filesystems.get(config.type)
    workdir.mkdir(parents=True, exist_ok=True)
    pid = os.getpid()
    tmp = workdir / f"fsbench-{pid}-{900 + int(time.time()) % 100}.img"
    src_mnt, dst_mnt = workdir / f"mnt-{pid}-bootroot-src", workdir / f"mnt-{pid}-bootroot-dst"
    with open(tmp, "wb") as fh:
        fh.truncate(img.root.stat().st_size)
    try:
        made = _fill_on_host(img, config, fs, tmp, src_mnt, dst_mnt)
        shutil.move(tmp, dest)  # a rename: the same filesystem by default
    finally:
        tmp.unlink(missing_ok=True)
    return made.argv


def _fill_on_host(
    img: vm_image.GuestImage,
    config: FsConfig,
    fs: filesystems.FsType,
    tmp: Path,
    src_mnt: Path,
    dst_mnt: Path,
) -> fsops.Made:
    """mkfs on `tmp` and copy the root into it; everything unmounted and detached after."""
    with contextlib.ExitStack() as stack:
        res = proc.run(["losetup", "--find", "--show", str(tmp)], timeout=60)
        if not res.ok or not res.stdout.strip():
            raise FsbenchError(f"losetup {tmp}: {res.output.strip()}")
        device = res.stdout.strip().splitlines()[-1]
        stack.callback(detach_loop, device)
        made = fsops.mkfs(fs, list(config.mkfs), device)
        for mnt in (src_mnt, dst_mnt):
            mnt.mkdir(exist_ok=True)
            stack.callback(_rmdir_if_unmounted, mnt)
        # loop: autoclear, so the source's loop device goes with its umount.
        src = proc.run(
            ["mount", "-t", "ext4", "-o", "ro,noload,loop", str(img.root), str(src_mnt)],
            timeout=120,
        )
        if not src.ok:
            raise FsbenchError(f"cannot mount the guest image {img.root}: {src.output.strip()}")
        stack.callback(mounts.umount, src_mnt)
        fsops.mount(fs, device, dst_mnt, config.mount)
        stack.callback(mounts.umount, dst_mnt)
        bootroot.copy_root(src_mnt, dst_mnt)
        bootroot.install_boot_files(dst_mnt, fs.mount_type or fs.name, config.mount)
    return made


def _rmdir_if_unmounted(path: Path) -> None:
    # Never a recursive delete here: a mount that did not go would take its files along.
    if not os.path.ismount(path):
        with contextlib.suppress(OSError):
            path.rmdir()


def _make_in_guest(
    img: vm_image.GuestImage,
    config: FsConfig,
    spec: vm_job.VmSpec,
    dest: Path,
    log: vm_job.LogFn,
) -> list[str]:
    tmp = dest.with_name(f"{dest.name}.{os.getpid()}.tmp")
    try:
        result = vm_job.run_in_vm(
            vm_job.VmJob([], "tiny", make_root=config.model_dump(mode="json")),
            replace(
                spec,
                scratch_path=tmp,
                scratch_bytes=img.root.stat().st_size,
                init="script",
                throttle={},
            ),
            # Copying the root under TCG takes minutes; the default limit is for cells.
            timeout=GUEST_ROOT_TIMEOUT,
            log=log,
        )
        if not result.ok:
            said = re.search(r"fsbench\.errors\.Unsupported: (.*)", result.error)
            if said:
                raise Unsupported(f"{config.display} root: {said.group(1)}", detail=result.error)
            first = result.error.splitlines()[0] if result.error else "no DONE"
            guest_said = re.findall(r"fsbench\.errors\.\w+: (.*)", result.error)
            raise TrialFailed(
                f"making the {config.display} root in a guest failed: "
                f"{guest_said[-1] if guest_said else first}",
                result.error,
            )
        mkfs = next((r.get("mkfs") for r in result.records if "mkfs" in r), None) or []
        os.replace(tmp, dest)
        return list(mkfs)
    finally:
        tmp.unlink(missing_ok=True)


# -- one boot --------------------------------------------------------------------------


@dataclass
class Boot:
    metrics: list[Metric] = field(default_factory=list)
    samples: list[dict[str, float]] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    error: str = ""


def host_device_of(path: Path) -> str | None:
    """The block device holding `path` (/dev/vda), for the boot's disk timeline."""
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


def guest_reads(diskstats_text: str, device: str = "vda") -> int | None:
    """Bytes the guest read from its root disk (sectors read x 512) by the time it looked."""
    for line in diskstats_text.splitlines():
        parts = line.split()
        if len(parts) > 5 and parts[2] == device:
            return int(parts[5]) * 512
    return None


def boot_once(
    img: vm_image.GuestImage,
    root: BootRoot,
    config: FsConfig,
    spec: vm_job.VmSpec,
    accel: str,
) -> Boot:
    fs = filesystems.get(config.type)
    run_dir = vm_job._new_run_dir(spec.workdir)
    share, console = run_dir / "share", run_dir / "console.log"
    out = Boot()
    try:
        share.mkdir(parents=True)
        overlay = run_dir / "root.qcow2"
        qemu.make_overlay(root.path, overlay)
        machine = qemu.Machine(
            kernel=img.kernel,
            initrd=img.initrd,
            root_overlay=overlay,
            scratch=None,
            share=share,
            console_log=console,
            ram_mb=spec.ram_mb,
            vcpus=spec.vcpus,
            accel=accel,
            cmdline_extra=(*BOOT_CMDLINE, *spec.cmdline_extra),
            init=None,
            root_fstype=fs.mount_type or fs.name,
            root_flags=config.mount,
            root_cache="none",
        )
        argv = machine.argv(qemu.qemu_binary() or qemu.QEMU)
        argv += ["-pidfile", str(run_dir / "qemu.pid")]
        out.facts["cmdline"] = machine.cmdline()
        device = host_device_of(root.path)
        out.facts["host_device"] = device
        system.drop_caches()  # syncs first
        _boot(argv, console, share, accel, device, out, run_dir / "qemu.stderr")
        out.facts["console_log"] = vm_job._keep_log(console, spec.cache_dir)
    finally:
        vm_job._release(run_dir)
    return out


def _boot(
    argv: list[str],
    console: Path,
    share: Path,
    accel: str,
    device: str | None,
    out: Boot,
    stderr_path: Path,
) -> None:
    limit = MARKER_TIMEOUT[accel]
    sampler = Sampler(device) if device else None
    child: subprocess.Popen[bytes] | None = None
    try:
        with (
            open(stderr_path, "wb") as stderr,
            sampler if sampler is not None else contextlib.nullcontext(),
        ):
            t0 = time.monotonic()
            child = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,
                preexec_fn=vm_job._set_pdeathsig,
            )
            marker = _wait_marker(child, console, t0, limit)
        if marker is None:
            why = (
                f"no boot marker within {limit:.0f} s"
                if child.poll() is None
                else f"QEMU exited (code {child.returncode}) before the boot marker"
            )
            tail = vm_job.console_tail(console)
            out.error = f"{why}\n--- serial console (last lines) ---\n{tail}"
            return
        seconds, uptime = marker
        out.metrics.append(Metric("seconds", seconds, "s", Better.LOWER))
        if uptime is not None:
            out.metrics.append(Metric("guest_uptime_s", uptime, "s", Better.LOWER))
        if sampler is not None:
            out.samples = [s.as_dict() for s in sampler.samples]
            if sampler.totals and sampler.totals.disk:
                out.facts["host_read_bytes"] = sampler.totals.disk.read_bytes
        _wait_done(child, share)
        _collect(share, out)
    finally:
        if child is not None and child.poll() is None:
            qemu.kill(child)
        with contextlib.suppress(OSError):
            err = stderr_path.read_text(errors="replace").strip()
            if err:
                out.facts["qemu_stderr"] = err[-1000:]


def _wait_marker(
    child: subprocess.Popen[bytes], console: Path, t0: float, limit: float
) -> tuple[float, float | None] | None:
    """(seconds since QEMU started, the guest's uptime then) when the marker line appears
    on the serial console; None if QEMU exits or the limit passes first."""
    pattern = re.compile(rf"{bootroot.MARKER} uptime=([\d.]+)".encode())
    offset = 0
    buf = b""
    while True:
        elapsed = time.monotonic() - t0
        try:
            with open(console, "rb") as fh:
                fh.seek(offset)
                chunk = fh.read()
        except FileNotFoundError:
            chunk = b""
        if chunk:
            offset += len(chunk)
            buf = (buf + chunk)[-4096:]
            m = pattern.search(buf)
            if m:
                return elapsed, float(m.group(1))
        if child.poll() is not None or elapsed > limit:
            return None
        time.sleep(POLL_SECONDS)


def _wait_done(child: subprocess.Popen[bytes], share: Path) -> None:
    deadline = time.monotonic() + AFTER_MARKER_TIMEOUT
    while time.monotonic() < deadline:
        if (share / bootroot.DONE_FILE).is_file():
            # Power-off follows; the results are in either way.
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=30)
            return
        if child.poll() is not None:
            return
        time.sleep(0.2)


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


def run_boot_cell(
    vc: vm_job.VmCell, spec: vm_job.VmSpec, log: vm_job.LogFn = vm_job._quiet
) -> list[TrialRecord]:
    """One boot of one root filesystem config: its TrialRecord (unsupported when the
    filesystem cannot be made, failed with the console's tail when the boot does not
    reach the marker)."""
    cell = vc.cell()
    record = TrialRecord(
        seq=vc.seq,
        rep=vc.rep,
        step=0,
        chain="",
        cell_key=cell.key,
        config=cell.config.display,
        fs=cell.config.type,
        mkfs_options=list(cell.config.mkfs),
        mount_options=cell.config.mount,
        workload=cell.workload,
        params=dict(cell.params),
        knobs=dict(cell.knobs),
        status="pending",
        started_at=now(),
    )
    prov: dict[str, Any] = {}
    try:
        img = vm_image.ensure_image(spec.kernel, spec.cache_dir, log)
        accel, accel_facts = vm_job.resolve_accel(spec.accel)
        prov["vm"] = vm_job.machine_facts(spec, img, accel, accel_facts, "systemd")
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
