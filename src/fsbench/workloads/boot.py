"""boot: the guest OS booting from a root filesystem of each config (VM target only).

The host makes a root image of the guest's Debian on the config's filesystem (mkfs
options honoured; mount options in fstab and rootflags=), boots it under QEMU with
systemd, and times QEMU's start to a marker service ordered after multi-user.target;
systemd-analyze gives the kernel (with the initramfs) / userspace split, and the host's disk and CPU
are sampled at 10 Hz until the marker (the bootchart). fsck is skipped on every root
(only e2fsck would be in the initrd). The VM target does the work (its boot measurement);
the runner never runs this workload itself.
"""

from __future__ import annotations

from fsbench.system.errors import Unsupported
from fsbench.workloads.base import Params, Scale, TrialContext, Workload
from fsbench.workloads.metric import Metric


class BootParams(Params):
    pass


class BootWorkload(Workload[BootParams]):
    name = "boot"
    summary = "boot the guest OS from a root on each filesystem (VM target)"
    scale_defaults = {Scale.TINY: {}, Scale.QUICK: {}, Scale.FULL: {}}
    # kernel_s includes the initramfs (initramfs-tools: no systemd in it to time it apart).
    headline = ("seconds", "kernel_s", "userspace_s")
    vm_only = True
    # Boot-time differences between root filesystems are smaller than the noise of fewer.
    default_reps = 10

    @classmethod
    def missing(cls) -> str | None:
        from fsbench.system.qemu import qemu_missing

        return qemu_missing()

    def run(self, ctx: TrialContext, params: BootParams) -> list[Metric]:
        raise Unsupported("boot runs on the VM target only: --target vm")
