"""A run's target in one line, from the description the run stored (its `target`): what
every report prints above its tables, and what the store's migrations give the runs of
versions that stored no summary. Pure functions of stored JSON, so that the executors that
describe a target and the migrations that read an old one say the same thing."""

from __future__ import annotations

from typing import Any

from fsbench.system import numbers


def target_summary(desc: dict[str, Any]) -> str:
    """One line for reports: what the filesystems were made on."""
    known = desc.get("rotational")
    rotational = "rotational?" if known is None else "rotational" if known else "non-rotational"
    if desc.get("kind") == "loop":
        model = f", {desc['backing_model']}" if desc.get("backing_model") else ""
        return (
            f"loop image {numbers.size(desc.get('size_bytes', 0))} on "
            f"{desc.get('backing_fs', '?')} ({desc.get('backing_device', '?')}{model}, "
            f"{rotational}), direct I/O {'on' if desc.get('direct_io') else 'off'}"
        )
    model = f" {desc['model']}" if desc.get("model") else ""
    return f"{desc.get('path')} {numbers.size(desc.get('size_bytes', 0))}{model}, {rotational}"


def vm_notes(t: dict[str, Any]) -> list[str]:
    """What a report must say beside a VM run's numbers."""
    if t.get("accel") != "tcg":
        return []
    return [
        "TCG (software emulation): these numbers compare the configs within this run, not "
        "with the host or with KVM runs"
    ]


def vm_summary(t: dict[str, Any]) -> str:
    guest = t.get("guest") or {}
    kernels = t.get("kernels") or {}
    kernel = (
        " / ".join(str(v) for v in kernels.values())
        if len(kernels) > 1
        else guest.get("kernel") or t.get("kernel_version", "?")
    )
    disk = (
        f"virtio scratch disk {numbers.size(t['scratch_bytes'])}"
        if t.get("scratch_bytes")
        else "booting from a root image per config"
    )
    return (
        f"QEMU guest, kernel {kernel}, accel {t.get('accel', '?')}, {t.get('vcpus', '?')} "
        f"vCPUs, {t.get('guest_ram_mb', '?')} MiB RAM, {disk}"
    )
