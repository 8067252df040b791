"""The guest's root filesystem on another filesystem, for the boot workload.

Used on the host (ext4, xfs, btrfs: the host kernel writes them) and inside a guest (jfs,
reiserfs, f2fs, nilfs2): the same copy and the same few files, so every root differs only
in its filesystem. Light on imports: the guest runs this under TCG.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from fsbench.system.errors import FsbenchError
from fsbench.vm.qemu import GUEST_ROOT, SHARE_FSTAB

MARKER = "FSBENCH-BOOT-MARKER"
MARKER_SCRIPT = "/opt/fsbench/boot-marker"
MARKER_UNIT = "fsbench-boot-marker.service"
BOOT_FLAG = "fsbench.boot=1"  # on the kernel command line: this boot is a measured one

# The boot's files in the share, written by the marker script after the marker.
STATE_FILE = "boot-state.txt"
TIME_FILE = "boot-time.txt"
BLAME_FILE = "boot-blame.txt"
ROOT_FILE = "boot-root.txt"
DISKSTATS_FILE = "boot-diskstats.txt"
DONE_FILE = "DONE"

# Once the default target is reached: the marker on the serial console at once (the host
# times QEMU start -> this line), then systemd's own account of the boot, then power off.
MARKER_SCRIPT_TEXT = f"""\
#!/bin/sh
echo "{MARKER} uptime=$(cut -d' ' -f1 /proc/uptime)" > /dev/ttyS0
systemctl is-system-running --wait > /share/{STATE_FILE} 2>&1
systemd-analyze time > /share/{TIME_FILE} 2>&1
systemd-analyze blame --no-pager > /share/{BLAME_FILE} 2>&1
findmnt -n -o SOURCE,FSTYPE,OPTIONS / > /share/{ROOT_FILE} 2>&1
cat /proc/diskstats > /share/{DISKSTATS_FILE}
sync
echo done > /share/{DONE_FILE}
sync
"""

# Type=simple: the start job ends at once, so the boot counts as finished and
# systemd-analyze can report it; ordered after the default target it marks.
MARKER_UNIT_TEXT = f"""\
[Unit]
Description=fsbench boot marker
After=multi-user.target
RequiresMountsFor=/share
ConditionKernelCommandLine={BOOT_FLAG}
SuccessAction=poweroff-force
FailureAction=poweroff-force

[Service]
Type=simple
ExecStart={MARKER_SCRIPT}
StandardOutput=journal+console

[Install]
WantedBy=multi-user.target
"""


def fstab(fs_type: str, mount_options: str) -> str:
    # Pass 0: no fsck at boot on any root (only e2fsck would be in the initrd; the boot
    # command line also says fsck.mode=skip): what is compared is mount + boot.
    return f"{GUEST_ROOT} / {fs_type} {mount_options or 'defaults'} 0 0\n{SHARE_FSTAB}\n"


def install_boot_files(root: Path, fs_type: str, mount_options: str) -> None:
    """The fstab for this root and the marker unit, enabled."""
    (root / "etc/fstab").write_text(fstab(fs_type, mount_options))
    script = root / MARKER_SCRIPT.lstrip("/")
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(MARKER_SCRIPT_TEXT)
    script.chmod(0o755)
    unit = root / "etc/systemd/system" / MARKER_UNIT
    unit.parent.mkdir(parents=True, exist_ok=True)
    unit.write_text(MARKER_UNIT_TEXT)
    wants = root / "etc/systemd/system/multi-user.target.wants" / MARKER_UNIT
    wants.parent.mkdir(parents=True, exist_ok=True)
    if wants.is_symlink() or wants.exists():
        wants.unlink()
    wants.symlink_to(f"/etc/systemd/system/{MARKER_UNIT}")


def copy_root(src: Path, dst: Path, timeout: float = 3600) -> None:
    """Everything of the root at `src` onto `dst`, one filesystem only (the mount points of
    /proc, /sys, /share... come along empty): owners, modes, times, hard links, holes.
    GNU tar rather than `cp -a`: ACLs and xattrs are left behind on every filesystem alike
    (reiserfs refuses the journal directory's ACL), so the roots differ in nothing else."""
    with tempfile.TemporaryFile() as pack_err:
        pack = subprocess.Popen(
            ["tar", "-C", str(src), "--one-file-system", "--sparse", "-cf", "-", "."],
            stdout=subprocess.PIPE,
            stderr=pack_err,
        )
        assert pack.stdout is not None
        try:
            unpack = subprocess.run(
                ["tar", "-C", str(dst), "--same-owner", "-xpf", "-"],
                stdin=pack.stdout,
                capture_output=True,
                timeout=timeout,
                check=False,
            )
            pack.stdout.close()
            pack.wait(timeout=timeout)
        finally:
            if pack.poll() is None:
                pack.kill()
                pack.wait()
        pack_err.seek(0)
        errors = pack_err.read() + unpack.stderr
    if pack.returncode != 0 or unpack.returncode != 0:
        text = errors.decode(errors="replace").strip()
        raise FsbenchError(f"copying the guest root failed: {text[-500:] or 'tar failed'}")
    os.sync()
