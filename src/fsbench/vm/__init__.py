"""The VM target: filesystems the host kernel lacks, other kernels, boot tests.

    img = ensure_image(kernel=None)                 # build once, cached
    result = run_in_vm(VmJob(cells, "tiny"), VmSpec(kernel=None, ram_mb=2048, vcpus=2))
    store.record_trials(run_id, import_records(result))

One job per module:

    cache.py      the cache directory, locks, content keys
    kernels.py    Debian kernel packages and your own builds
    rootfs.py     the debootstrap tree (packages from the catalogue and the workloads)
    pyenv.py      fsbench and its Python dependencies, copied into the guest
    guestfiles.py what is written into the guest's root (modules, initrd, init, units)
    images.py     the guest image per kernel, cached
    qemu.py       QEMU: KVM probe, the command line, launching and watching a guest
    rundir.py     a guest's run directory, released on every path (stale ones too)
    protocol.py   the share between host and guest: the job, the records
    job.py        a job's cells in a guest (run_in_vm)
    records.py    the guest's records as the store takes them (job.import_records: a job's)
    guest.py      inside the guest: the job through the host's SlotRunner
    bootroot.py   a root copied onto another filesystem (host and guest alike)
    bootdisks.py  the boot workload's root disks, cached
    boot.py       one measured boot
    doctor.py     what `fsbench doctor` says of the VM target

Names are imported on first use: the guest imports `fsbench.vm.guest` under TCG, where
every module costs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fsbench.vm.cache import DEFAULT_CACHE
    from fsbench.vm.doctor import doctor_facts
    from fsbench.vm.images import GuestImage, cached_images, ensure_image
    from fsbench.vm.job import VmResult, VmSpec, check_guest, import_records, run_in_vm
    from fsbench.vm.kernels import Kernel, cached_kernels, resolve_kernel
    from fsbench.vm.protocol import VmCell, VmJob
    from fsbench.vm.qemu import KvmProbe, probe_kvm
    from fsbench.vm.rundir import release_stale

_WHERE = {
    "DEFAULT_CACHE": "cache",
    "doctor_facts": "doctor",
    "GuestImage": "images",
    "cached_images": "images",
    "ensure_image": "images",
    "VmResult": "job",
    "VmSpec": "job",
    "check_guest": "job",
    "run_in_vm": "job",
    "Kernel": "kernels",
    "cached_kernels": "kernels",
    "resolve_kernel": "kernels",
    "VmCell": "protocol",
    "VmJob": "protocol",
    "KvmProbe": "qemu",
    "probe_kvm": "qemu",
    "import_records": "job",
    "release_stale": "rundir",
}

__all__ = [
    "DEFAULT_CACHE",
    "GuestImage",
    "Kernel",
    "KvmProbe",
    "VmCell",
    "VmJob",
    "VmResult",
    "VmSpec",
    "cached_images",
    "cached_kernels",
    "check_guest",
    "doctor_facts",
    "ensure_image",
    "import_records",
    "probe_kvm",
    "release_stale",
    "resolve_kernel",
    "run_in_vm",
]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"fsbench.vm.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'fsbench.vm' has no attribute {name!r}")
