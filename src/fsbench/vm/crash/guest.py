"""Inside the guest: one boot of a crash cell (fsbench.vm.guest hands a job with `crash`
here). A boot first checks the disk the last power cut left (when there is one), then
makes a fresh filesystem and runs the pattern until the host cuts the power:

    check  read-only fsck; mount (timed: journal recovery); the pattern's check against
           the acknowledgements the host received; umount; read-only fsck again.
           Written to the share as check.json.
    run    mkfs + mount the config on the scratch disk; the pattern acknowledges each
           operation on the virtio serial port `fsbench.acks`, line by line, as it goes.

The disk is /dev/vdb, as for every guest job; its content survives from boot to boot.
With dm-log-writes (logwrites.py) the run's writes are also recorded on /dev/vdc, and the
check replays one volatile-cache state onto /dev/vdd and checks it the same way. Each of
them is written only once guestcheck.py says this is an fsbench guest and the disk is one
fsbench gave it.
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path
from typing import Any

from fsbench.plan.model import FsConfig
from fsbench.system import filesystems, fsops, proc
from fsbench.system.errors import Unsupported
from fsbench.vm import guestcheck
from fsbench.vm.crash import logwrites
from fsbench.vm.crash.patterns import PATTERNS, READY, read_acks

ACK_PORT = "fsbench.acks"  # the virtio serial port's name (QEMU's virtserialport name=)
CHECK_FILE = "check.json"
REFUSED_FILE = "refused.json"
ACKS_IN = "acks.jsonl"  # the last run's acknowledgements, as the host received them
RECORDED_FILE = "recorded.json"  # whether the run's writes are in the log, else why not
LOG_DISK = "/dev/vdc"  # dm-log-writes' log of the run's writes (kept from boot to boot)
REPLAY_DISK = "/dev/vdd"  # a fresh disk per boot: the volatile-cache state replayed
MOUNT = Path("/run/fsbench/crash")
FSCK_TIMEOUT = 600
# What a read-only check prints when the journal or log is waiting for the mount to
# replay it: its complaints may be what the replay repairs, so the check after counts.
RECOVERY_PENDING = (
    "skipping journal recovery",  # e2fsck -n
    "needs_recovery",
    "valuable metadata changes in a log",  # xfs_repair -n
    "log tree",  # btrfs check: a log tree to replay
)
OUTPUT_TAIL = 4000
# What the kernel says when a mount replayed the journal or log the power cut left: the
# evidence that the crash reached the filesystem mid-transaction (ext4/jbd2, xfs, btrfs).
JOURNAL_REPLAYED = ("recovery complete", "Ending recovery", "start tree-log replay")


def ack_port() -> str:
    """The character device of the acknowledgements port (no udev in a job's guest)."""
    proc.run(["modprobe", "-q", "virtio_console"], timeout=30)
    # Up to 30 s: under TCG on a loaded host the port can take seconds to register (5 s
    # were once too few, and the guest failed with a traceback).
    for _ in range(300):
        for name_file in Path("/sys/class/virtio-ports").glob("*/name"):
            if name_file.read_text().strip() == ACK_PORT:
                return f"/dev/{name_file.parent.name}"
        time.sleep(0.1)
    raise RuntimeError(f"no virtio serial port named {ACK_PORT} in the guest")


def fsck(argv: list[str]) -> dict[str, Any]:
    res = proc.run(argv, timeout=FSCK_TIMEOUT)
    out = res.output
    return {
        "argv": argv,
        "exit": res.returncode,
        "clean": res.returncode == 0,
        "recovery_pending": any(p in out for p in RECOVERY_PENDING),
        "output": out[-OUTPUT_TAIL:],
    }


def examine(crash: dict[str, Any], device: str, acks: list[dict[str, Any]]) -> dict[str, Any]:
    """What a crash left on `device`: read-only fsck, mount (timed), the pattern's check
    against `acks`, umount, read-only fsck again."""
    config = FsConfig.model_validate(crash["config"])
    fs = filesystems.get(config.type)
    argv = [*fs.fsck_readonly, device] if fs.fsck_readonly else []
    out: dict[str, Any] = {"acks": len(acks)}
    if argv:
        out["fsck_before"] = fsck(argv)
    try:
        made = fsops.mount(fs, device, MOUNT, config.mount)
    except Unsupported as exc:  # the filesystem no longer mounts: everything is lost
        out["mount_error"] = exc.detail or exc.message
        out["verdict"] = None
        return out
    out["mount_seconds"] = round(made.seconds, 4)
    out["mount_kernel"] = made.kernel[-20:]
    out["journal_replayed"] = any(m in line for line in made.kernel for m in JOURNAL_REPLAYED)
    try:
        check = PATTERNS[crash["pattern"]].check
        out["verdict"] = check(MOUNT, crash["check"]["seed"], acks, crash["size"]).as_dict()
    finally:
        fsops.umount(MOUNT)
    if argv:
        out["fsck_after"] = fsck(argv)
    return out


def check(crash: dict[str, Any], device: str, share: Path) -> dict[str, Any]:
    """The power cut's state on the disk; then, when the run recorded its writes, one
    state a disk with a volatile cache could have shown instead (logwrites.py)."""
    acks = read_acks((share / ACKS_IN).read_text())
    out = examine(crash, device, acks)
    if not crash["check"].get("recorded"):
        return out
    guestcheck.require(LOG_DISK, REPLAY_DISK)
    sectorsize, entries = logwrites.read_log(LOG_DISK)
    state = logwrites.choose(entries, random.Random(f"state:{crash['check']['seed']}"))
    if state is None:
        out["cache"] = {"skipped": f"no flush point after the setup in {len(entries)} entries"}
        return out
    logwrites.replay(LOG_DISK, entries, sectorsize, state, REPLAY_DISK)
    logwrites.scan_forget(device)  # btrfs: mount the replayed copy, not the original
    promised = logwrites.marked_acks(acks, state)
    if not PATTERNS[crash["pattern"]].durable:
        promised = acks  # no durability promised: every version written may show
    out["cache"] = {**state.as_dict(), "entries": len(entries)}
    out["cache"].update(examine(crash, REPLAY_DISK, promised))
    return out


def run(crash: dict[str, Any], device: str, share: Path) -> None:
    """mkfs, mount, the pattern until the power goes, its writes recorded when the guest
    can (dm-log-writes). A config the kernel refuses is written to the share (the host
    records it as unsupported) and the guest powers off."""
    config = FsConfig.model_validate(crash["config"])
    fs = filesystems.get(config.type)
    port = ack_port()
    why_not = "not asked (volatile_cache=false)"
    if crash.get("volatile_cache"):
        why_not = logwrites.unavailable() or ""
    marker = None
    if not why_not:
        guestcheck.require(LOG_DISK)
        device = logwrites.start(device, LOG_DISK)
        marker = logwrites.Marker()
    _write(share / RECORDED_FILE, json.dumps({"recorded": marker is not None, "why_not": why_not}))
    try:
        fsops.mkfs(fs, list(config.mkfs), device)
        fsops.mount(fs, device, MOUNT, config.mount)
    except Unsupported as exc:
        _write(share / REFUSED_FILE, json.dumps({"message": exc.message, "detail": exc.detail}))
        return
    fd = os.open(port, os.O_WRONLY)
    sent = 0

    def ack(what: dict[str, Any]) -> None:
        nonlocal sent
        if marker is not None:  # in the log before the host hears of it
            marker.mark(logwrites.READY_MARK if READY in what else f"{logwrites.ACK_MARK}{sent}")
        os.write(fd, (json.dumps(what, separators=(",", ":")) + "\n").encode())
        sent += 1

    PATTERNS[crash["pattern"]].run(MOUNT, crash["run"]["seed"], ack, crash["size"])


def crash_boot(crash: dict[str, Any], device: str, share: Path) -> None:
    guestcheck.require(device)
    if crash.get("check"):
        _write(share / CHECK_FILE, json.dumps(check(crash, device, share), default=str))
    if crash.get("run"):
        run(crash, device, share)


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
