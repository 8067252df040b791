"""Guest code refuses to run anywhere but in a guest fsbench booted.

`python -m fsbench.vm.guest JOB` (cells, a boot root, a crash boot) formats and writes
/dev/vdb, /dev/vdc, /dev/vdd without the block-device safety checks: in the guest they
are blank disks fsbench made. Started by mistake on a machine whose second virtio disk
holds data, it would format it. So before anything else, each entry point asks:

- is `fsbench.guest=MARK` on this kernel's command line (qemu.Machine puts it there, a
  new MARK for every guest)?
- does every disk it is about to write carry the virtio serial `fsbench-MARK`
  (qemu.Machine gives it to every disk; a property of the virtual disk, which no mkfs,
  discard or earlier crash can erase, unlike a signature written on it)?

and refuses in one line otherwise. Stdlib only, nothing written, no process started.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

from fsbench.vm.qemu import GUEST_MARK_PARAM, disk_serial

CMDLINE = Path("/proc/cmdline")
SYS_BLOCK = Path("/sys/class/block")
REFUSED_EXIT = 3


class NotAGuest(Exception):
    """This is not an fsbench guest, or a disk is not one fsbench gave it."""


def mark(cmdline: str) -> str | None:
    """The guest's mark on a kernel command line, or None."""
    for word in cmdline.split():
        key, eq, value = word.partition("=")
        if key == GUEST_MARK_PARAM and eq and value:
            return value
    return None


def refusal(
    devices: Iterable[str], cmdline_path: Path = CMDLINE, sys_block: Path = SYS_BLOCK
) -> str | None:
    """Why guest code must not write `devices` here (one line), or None."""
    try:
        found = mark(cmdline_path.read_text())
    except OSError as exc:
        return f"cannot read {cmdline_path} ({exc.strerror}): not an fsbench guest"
    if found is None:
        return (
            f"not an fsbench guest (no {GUEST_MARK_PARAM}= on the kernel command line): "
            "guest code runs only in the VM that fsbench boots"
        )
    want = disk_serial(found)
    for device in devices:
        name = os.path.basename(os.path.realpath(device))
        try:
            serial = (sys_block / name / "serial").read_text().strip()
        except OSError:
            serial = ""
        if serial != want:
            said = f"serial {serial!r}" if serial else "no serial"
            return f"{device} is not a disk fsbench gave this guest ({said}, expected {want!r})"
    return None


def require(*devices: str) -> None:
    """Raise NotAGuest unless this is an fsbench guest and `devices` are its disks."""
    why = refusal(devices)
    if why is not None:
        raise NotAGuest(why)


def refuse_unless_guest(*devices: str) -> None:
    """For an entry point: exit non-zero with one line unless this is an fsbench guest."""
    why = refusal(devices)
    if why is not None:
        print(f"fsbench guest: refused: {why}", file=sys.stderr)
        raise SystemExit(REFUSED_EXIT)
