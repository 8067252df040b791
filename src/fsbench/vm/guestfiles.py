"""What is written into the guest's root for a kernel: its modules and initrd, identity,
mounts, the modules it loads, how a job starts (init script or systemd unit), the units
masked, and fsbench's own venv.

The module lists are not lists of their own: every filesystem module of the catalogue
(also those the host kernel lacks), beside what the VM's devices need.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from fsbench.system import filesystems
from fsbench.vm import pyenv
from fsbench.vm.cache import LogFn, build_step, content_key
from fsbench.vm.kernels import Kernel
from fsbench.vm.protocol import JOB
from fsbench.vm.qemu import (
    GUEST_ROOT,
    SHARE_FSTAB,
    SHARE_MOUNT_OPTIONS,
    SHARE_MOUNTPOINT,
    SHARE_TAG,
)

# Every filesystem the catalogue knows, as a module (ext2's is an alias of ext4's).
FS_MODULES: tuple[str, ...] = tuple(
    dict.fromkeys(fs.module for fs in filesystems.catalogue().values() if fs.module)
)
# Loaded before the guest runs anything: the share's transport and every filesystem (a
# missing one is reported by the guest's /proc/filesystems, not an error).
GUEST_MODULES: tuple[str, ...] = ("9p", "9pnet_virtio", *FS_MODULES)
# In the initrd: the disks (virtio) and a root on any filesystem (the boot workload's);
# those and their dependencies only, so the initrd is small and the guest's udev quick.
INITRD_MODULES: tuple[str, ...] = ("virtio_pci", "virtio_blk", "virtio_scsi", *FS_MODULES)
# Module trees a headless guest never loads (graphics, sound, network and USB drivers):
# leaving them out saves ~250 MB per image.
PRUNED_MODULES: tuple[str, ...] = (
    "kernel/sound",
    "kernel/drivers/gpu",
    "kernel/drivers/media",
    "kernel/drivers/net",
    "kernel/drivers/infiniband",
    "kernel/drivers/usb",
    "kernel/drivers/iio",
    "kernel/drivers/staging",
    "kernel/drivers/hwmon",
    "kernel/drivers/hid",
    "kernel/drivers/bluetooth",
    "kernel/drivers/isdn",
    "kernel/drivers/mmc",
    "kernel/net/wireless",
    "kernel/net/mac80211",
    "kernel/net/bluetooth",
    "kernel/net/netfilter",
    "kernel/net/ipv4/netfilter",
    "kernel/net/ipv6/netfilter",
)
GUEST_PY = f"/{pyenv.GUEST_VENV}/bin/python"
GUEST_JOB = f"{SHARE_MOUNTPOINT}/{JOB}"
GUEST_UNIT = "fsbench-guest.service"
GUEST_SERVICE = f"""\
[Unit]
Description=fsbench guest job
After=local-fs.target systemd-modules-load.service
RequiresMountsFor={SHARE_MOUNTPOINT}
ConditionPathExists={GUEST_JOB}
SuccessAction=poweroff-force
FailureAction=poweroff-force

[Service]
Type=oneshot
# The host's fsbench (share/py) before the image's copy: host and guest run the same code.
Environment=PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH={SHARE_MOUNTPOINT}/py
ExecStart={GUEST_PY} -m fsbench.vm.guest {GUEST_JOB}
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
"""

# PID 1 for a job (`init=`): systemd's own start-up costs ~30 s under TCG, so a job boots
# straight into this script; systemd stays in the image for the boot workload.
GUEST_INIT = f"/{pyenv.GUEST_VENV}/guest-init"
GUEST_INIT_SCRIPT = f"""\
#!/bin/sh
# fsbench guest init: mount what the job needs, run it, power off. PID 1: never exits
# early (the kernel would panic; with panic=-1 QEMU then stops, which is also fine).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
# The initramfs moved /proc, /sys, /dev and /run here already; mount what is missing.
m() {{ mountpoint -q "$3" || mount -t "$1" "$2" "$3"; }}
m proc proc /proc
m sysfs sysfs /sys
m devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
m devpts devpts /dev/pts
m tmpfs tmpfs /dev/shm
m tmpfs tmpfs /run
m tmpfs tmpfs /tmp
# What an explain run's tracers filter on (the workload's own group); a kernel built
# without cgroups has none, and the pass says explain is unavailable.
m cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
mount -o remount,rw /
hostname fsbench-guest
for m in {" ".join(GUEST_MODULES)}; do modprobe -q "$m"; done
mount -t 9p -o {SHARE_MOUNT_OPTIONS} {SHARE_TAG} {SHARE_MOUNTPOINT}
echo "fsbench-guest: init done after $(cut -d' ' -f1 /proc/uptime) s"
PYTHONPATH={SHARE_MOUNTPOINT}/py PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 \\
    {GUEST_PY} -m fsbench.vm.guest {GUEST_JOB}
sync
umount {SHARE_MOUNTPOINT}
mount -o remount,ro /
poweroff -f -f
echo o > /proc/sysrq-trigger
sleep 30
"""

# Units that only cost boot time or write behind the workload's back in a throwaway guest.
MASKED_UNITS = (
    "serial-getty@ttyS0.service",
    "getty.target",
    "getty-static.service",
    "apt-daily.timer",
    "apt-daily-upgrade.timer",
    "e2scrub_all.timer",
    "e2scrub_reap.service",
    "fstrim.timer",
    "systemd-timesyncd.service",
    "dpkg-db-backup.timer",
    "systemd-binfmt.service",
    "proc-sys-fs-binfmt_misc.automount",
    "sys-kernel-debug.mount",
    "sys-kernel-tracing.mount",
    "dev-hugepages.mount",
    "modprobe@dm_mod.service",
    "modprobe@efi_pstore.service",
    "modprobe@drm.service",
    "systemd-update-utmp.service",
    "systemd-update-utmp-runlevel.service",
    "systemd-journal-flush.service",
)


def files_key() -> str:
    """What configure() writes, for the image key: a catalogue change is a new image."""
    return content_key(
        GUEST_MODULES,
        INITRD_MODULES,
        PRUNED_MODULES,
        GUEST_SERVICE,
        GUEST_INIT_SCRIPT,
        MASKED_UNITS,
        SHARE_FSTAB,
    )


def configure(root: Path, k: Kernel, key: str, log: LogFn) -> None:
    """Make the staged root at `root` (a copy of the debootstrap tree) boot `k` and run jobs."""
    install_modules(root, k)
    make_initrd(root, k, log)
    # Identity, mounts, modules, the job's unit.
    _write(root / "etc/machine-id", hashlib.md5(key.encode()).hexdigest() + "\n")
    _write(root / "etc/hostname", "fsbench-guest\n")
    _write(root / "etc/hosts", "127.0.0.1 localhost\n127.0.1.1 fsbench-guest\n")
    _write(root / "etc/fstab", f"{GUEST_ROOT} / ext4 rw,errors=remount-ro 0 1\n{SHARE_FSTAB}\n")
    (root / SHARE_MOUNTPOINT.lstrip("/")).mkdir(exist_ok=True)
    _write(root / "etc/modules-load.d/fsbench.conf", "\n".join(GUEST_MODULES) + "\n")
    _write(root / "etc/systemd/system" / GUEST_UNIT, GUEST_SERVICE)
    _write(root / GUEST_INIT.lstrip("/"), GUEST_INIT_SCRIPT, 0o755)
    _link(
        root / "etc/systemd/system/multi-user.target.wants" / GUEST_UNIT,
        f"/etc/systemd/system/{GUEST_UNIT}",
    )
    for unit in MASKED_UNITS:
        _link(root / "etc/systemd/system" / unit, "/dev/null")
    _link(root / "etc/systemd/system/default.target", "/lib/systemd/system/multi-user.target")
    install_fsbench_venv(root, log)


def install_modules(root: Path, k: Kernel) -> None:
    """The kernel's modules (headless: pruned), indexed for this root."""
    if k.modules is None:
        raise ValueError(f"kernel {k.version} has everything built in: no modules to install")
    mods = root / "lib/modules" / k.version
    shutil.rmtree(mods, ignore_errors=True)
    mods.parent.mkdir(parents=True, exist_ok=True)
    pruned = {k.modules / p for p in PRUNED_MODULES}

    def ignore(directory: str, names: list[str]) -> set[str]:
        return {n for n in names if Path(directory, n) in pruned or n in ("build", "source")}

    shutil.copytree(k.modules, mods, symlinks=True, ignore=ignore)
    for link in ("build", "source"):
        (mods / link).unlink(missing_ok=True)
    build_step(["chroot", str(root), "depmod", "-a", k.version], "depmod (in the guest root)")


def make_initrd(root: Path, k: Kernel, log: LogFn) -> None:
    """The guest's own mkinitramfs (in a chroot) makes boot/initrd.img-<version>. It reads
    the kernel's config for the compressions it supports: the package's, or a build's."""
    config = root / "boot" / f"config-{k.version}"
    found = k.config_file()
    if found is not None:
        shutil.copy2(found, config)
    elif not config.is_file():
        _write(config, "CONFIG_RD_GZIP=y\n")  # assumed: every x86 distro config has it
    _write(root / "etc/initramfs-tools/conf.d/fsbench", "MODULES=list\nCOMPRESS=gzip\n")
    _write(root / "etc/initramfs-tools/modules", "\n".join(INITRD_MODULES) + "\n")
    log("mkinitramfs in the guest root")
    build_step(
        ["chroot", str(root), "mkinitramfs", "-o", f"/boot/initrd.img-{k.version}", k.version],
        "mkinitramfs",
    )


def install_fsbench_venv(root: Path, log: LogFn) -> None:
    """fsbench in a venv (no pip, no network: a pyvenv.cfg and the files), compiled."""
    venv = root / pyenv.GUEST_VENV
    (venv / "bin").mkdir(parents=True, exist_ok=True)
    _write(
        venv / "pyvenv.cfg",
        "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11\n",
    )
    _link(root / GUEST_PY.lstrip("/"), "/usr/bin/python3")
    log("copying fsbench and its Python dependencies")
    pyenv.copy_python(root / pyenv.GUEST_SITE)
    # Bytecode now: compiling pydantic & co. at every boot costs a minute under TCG.
    build_step(
        [
            "chroot",
            str(root),
            GUEST_PY,
            "-m",
            "compileall",
            "-q",
            "-j",
            "0",
            # Not imported in the guest (reports only): not worth compiling.
            "-x",
            "/(scipy|matplotlib|numpy|PIL|fontTools|contourpy|kiwisolver)/",
            f"/{pyenv.GUEST_VENV}/lib",
        ],
        "compileall in the guest root",
    )
    build_step(
        ["chroot", str(root), GUEST_PY, "-c", "import fsbench.execute.runner"],
        "import fsbench in the guest root",
    )


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def _link(link: Path, target: str) -> None:
    """A symlink at `link` to `target`, replacing what was there (masks, wants, venv)."""
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)
