"""The VM target: filesystems the host kernel lacks, other kernels, boot tests.

    img = ensure_image(kernel=None)                 # build once, cached
    result = run_in_vm(VmJob(cells, "tiny"), VmSpec(kernel=None, ram_mb=2048, vcpus=2))
    store.record_trials(run_id, import_records(result))

Names are imported on first use: the guest imports `fsbench.vm.guest` under TCG, where
every module costs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fsbench.vm.doctor import doctor_facts
    from fsbench.vm.image import (
        DEFAULT_CACHE,
        VM_FILESYSTEMS,
        GuestImage,
        Kernel,
        cached_images,
        cached_kernels,
        ensure_image,
        resolve_kernel,
    )
    from fsbench.vm.job import (
        VmCell,
        VmJob,
        VmResult,
        VmSpec,
        check_guest,
        import_records,
        release_stale,
        run_in_vm,
    )
    from fsbench.vm.qemu import KvmProbe, probe_kvm

_WHERE = {
    "doctor_facts": "doctor",
    "DEFAULT_CACHE": "image",
    "VM_FILESYSTEMS": "image",
    "GuestImage": "image",
    "Kernel": "image",
    "cached_images": "image",
    "cached_kernels": "image",
    "ensure_image": "image",
    "resolve_kernel": "image",
    "VmCell": "job",
    "VmJob": "job",
    "VmResult": "job",
    "VmSpec": "job",
    "import_records": "job",
    "release_stale": "job",
    "run_in_vm": "job",
    "check_guest": "job",
    "KvmProbe": "qemu",
    "probe_kvm": "qemu",
}

__all__ = [
    "DEFAULT_CACHE",
    "VM_FILESYSTEMS",
    "GuestImage",
    "Kernel",
    "KvmProbe",
    "VmCell",
    "VmJob",
    "VmResult",
    "VmSpec",
    "cached_images",
    "check_guest",
    "cached_kernels",
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
