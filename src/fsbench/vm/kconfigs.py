"""The kernel configurations fsbench builds guests with, by name (`fsbench bisect --config
NAME`), kept here and nowhere else. Each is `make tinyconfig`, the tree's own fragments
(`kernel/configs/<name>`) and fsbench's options merged in, then `make olddefconfig`;
everything is built in (no modules, no initrd: the VM target boots it with the default
guest image's root).

- `default`: what `fsbench bisect` builds unless told otherwise: kvm_guest.config and
  what the VM target's guest needs, with ext4, xfs and btrfs and dm-log-writes (the crash
  workload's volatile cache) built in.
- `minimal`: what a guest job on ext4 needs and nothing more (the serial console, virtio
  blk and console, the job's 9p share, ACPI to power off, what Python, mkfs and fio use).
  The bisection's test and every other test that builds a kernel use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# What every guest job needs beyond tinyconfig: a console, the job's share (9p, which
# needs INET), the disks (virtio-blk), virtio console ports and rng, ACPI to power off,
# what Python, mkfs and fio use, ext4, everything built in.
GUEST: dict[str, str] = {
    "CONFIG_64BIT": "y",
    "CONFIG_SMP": "y",
    "CONFIG_PRINTK": "y",
    "CONFIG_BUG": "y",
    "CONFIG_ACPI": "y",
    "CONFIG_MULTIUSER": "y",
    "CONFIG_SYSVIPC": "y",
    "CONFIG_POSIX_TIMERS": "y",
    "CONFIG_FUTEX": "y",
    "CONFIG_EPOLL": "y",
    "CONFIG_SIGNALFD": "y",
    "CONFIG_TIMERFD": "y",
    "CONFIG_EVENTFD": "y",
    "CONFIG_SHMEM": "y",
    "CONFIG_AIO": "y",
    "CONFIG_IO_URING": "y",
    "CONFIG_FILE_LOCKING": "y",
    "CONFIG_FHANDLE": "y",
    "CONFIG_INOTIFY_USER": "y",
    "CONFIG_PROC_FS": "y",
    "CONFIG_PROC_SYSCTL": "y",
    "CONFIG_SYSFS": "y",
    "CONFIG_TMPFS": "y",
    "CONFIG_DEVTMPFS": "y",
    "CONFIG_DEVTMPFS_MOUNT": "y",
    "CONFIG_BINFMT_ELF": "y",
    "CONFIG_BINFMT_SCRIPT": "y",
    "CONFIG_BLK_DEV_INITRD": "y",
    "CONFIG_MAGIC_SYSRQ": "y",
    "CONFIG_NET": "y",
    "CONFIG_UNIX": "y",
    "CONFIG_TTY": "y",
    "CONFIG_UNIX98_PTYS": "y",
    "CONFIG_SERIAL_8250": "y",
    "CONFIG_SERIAL_8250_CONSOLE": "y",
    "CONFIG_PCI": "y",
    "CONFIG_VIRTIO_MENU": "y",
    "CONFIG_VIRTIO": "y",
    "CONFIG_VIRTIO_PCI": "y",
    "CONFIG_VIRTIO_BLK": "y",
    "CONFIG_VIRTIO_CONSOLE": "y",
    "CONFIG_HW_RANDOM": "y",
    "CONFIG_HW_RANDOM_VIRTIO": "y",
    "CONFIG_NET_9P": "y",
    "CONFIG_NET_9P_VIRTIO": "y",
    "CONFIG_NETWORK_FILESYSTEMS": "y",
    "CONFIG_9P_FS": "y",
    "CONFIG_9P_FS_POSIX_ACL": "y",
    "CONFIG_BLOCK": "y",
    "CONFIG_BLK_DEV": "y",
    "CONFIG_EXT4_FS": "y",
    "CONFIG_EXT4_FS_POSIX_ACL": "y",
    "CONFIG_FS_ENCRYPTION": "n",
    "CONFIG_MODULES": "n",
    "CONFIG_LOCALVERSION_AUTO": "y",
}

# The default's additions: loop devices, dm-log-writes (the crash workload's log device),
# xfs and btrfs, quotas.
FILESYSTEMS: dict[str, str] = {
    "CONFIG_BLK_DEV_LOOP": "y",
    "CONFIG_MD": "y",
    "CONFIG_BLK_DEV_DM": "y",
    "CONFIG_DM_LOG_WRITES": "y",
    "CONFIG_XFS_FS": "y",
    "CONFIG_BTRFS_FS": "y",
    "CONFIG_QUOTA": "y",
}

# The minimal's leaving out what tinyconfig, ACPI and kvm_guest.config's choices turn on
# by default and no guest job uses: IPv6, input devices and the virtual terminal, ACPI's
# laptop drivers, CPU frequency scaling, the host CPUs' PMU and rng drivers, PCI serial
# cards, initrd decompressors (the guest's initrd is empty), the scheduler's debug files.
# The bzImage is gzip: xz is the slowest to compress at every link and to unpack under TCG.
LEFT_OUT: dict[str, str] = {
    "CONFIG_IPV6": "n",
    "CONFIG_INPUT": "n",
    "CONFIG_VT": "n",
    "CONFIG_HID": "n",
    "CONFIG_ACPI_AC": "n",
    "CONFIG_ACPI_BATTERY": "n",
    "CONFIG_ACPI_FAN": "n",
    "CONFIG_ACPI_THERMAL": "n",
    "CONFIG_ACPI_TABLE_UPGRADE": "n",
    "CONFIG_SCHED_MC_PRIO": "n",
    "CONFIG_PERF_EVENTS_INTEL_UNCORE": "n",
    "CONFIG_PERF_EVENTS_INTEL_RAPL": "n",
    "CONFIG_PERF_EVENTS_INTEL_CSTATE": "n",
    "CONFIG_HW_RANDOM_AMD": "n",
    "CONFIG_HW_RANDOM_INTEL": "n",
    "CONFIG_HW_RANDOM_VIA": "n",
    "CONFIG_SERIAL_8250_PCI": "n",
    "CONFIG_SERIAL_8250_EXAR": "n",
    "CONFIG_SERIAL_8250_LPSS": "n",
    "CONFIG_SERIAL_8250_MID": "n",
    "CONFIG_SERIAL_8250_PERICOM": "n",
    "CONFIG_RD_BZIP2": "n",
    "CONFIG_RD_LZMA": "n",
    "CONFIG_RD_XZ": "n",
    "CONFIG_RD_LZO": "n",
    "CONFIG_RD_LZ4": "n",
    "CONFIG_RD_ZSTD": "n",
    "CONFIG_SCHED_DEBUG": "n",
    "CONFIG_KERNEL_XZ": "n",
    "CONFIG_KERNEL_GZIP": "y",
    # What kvm_guest.config adds that the minimal still wants (it does not merge it).
    "CONFIG_INET": "y",
    "CONFIG_PCI_MSI": "y",
    "CONFIG_HYPERVISOR_GUEST": "y",
    "CONFIG_PARAVIRT": "y",
    "CONFIG_KVM_GUEST": "y",
}


@dataclass(frozen=True)
class KernelConfig:
    """A named configuration: tinyconfig, the tree's fragments `merged`, then `options`."""

    name: str
    summary: str
    merged: tuple[str, ...]  # fragments of the tree's kernel/configs/, in order
    options: Mapping[str, str]

    def fragment_text(self) -> str:
        """fsbench's options as a Kconfig fragment (`# CONFIG_X is not set` for n)."""
        return "".join(
            f"# {k} is not set\n" if v == "n" else f"{k}={v}\n" for k, v in self.options.items()
        )

    def key_text(self) -> str:
        """What names this config's builds in the cache: its fragments and its options."""
        return "".join(f"# merged: {name}\n" for name in self.merged) + self.fragment_text()

    def missing(self, made: Mapping[str, str]) -> list[str]:
        """The options asked for that the made config (option -> value, 'n' for unset)
        does not have: their dependencies are not met in this tree."""
        return [k for k, v in self.options.items() if made.get(k, "n") != v]


DEFAULT = KernelConfig(
    "default",
    "tinyconfig + kvm_guest.config + the guest's needs, ext4, xfs, btrfs, dm-log-writes",
    ("kvm_guest.config",),
    {**GUEST, **FILESYSTEMS},
)
MINIMAL = KernelConfig(
    "minimal",
    "tinyconfig + the guest's needs and ext4",
    (),
    {**GUEST, **LEFT_OUT},
)
NAMED: dict[str, KernelConfig] = {c.name: c for c in (DEFAULT, MINIMAL)}
# What a bisection stored before configs had names, for the default.
LEGACY_DEFAULT = "tinyconfig+fsbench"


def choose(value: str | Path | None) -> KernelConfig | Path:
    """A `--config` value: a name of NAMED (None: the default), else the path of a
    .config of the user's own."""
    if value is None or str(value) == LEGACY_DEFAULT:
        return DEFAULT
    return NAMED.get(str(value)) or Path(value)


def stored(config: KernelConfig | Path | None) -> str:
    """How a bisection's facts keep its config: the name, or the path as given."""
    return (config or DEFAULT).name if not isinstance(config, Path) else str(config)
