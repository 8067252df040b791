"""What the VM target can do on this machine: for `fsbench doctor`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from fsbench.system import filesystems
from fsbench.system import qemu as host_qemu
from fsbench.vm import qemu
from fsbench.vm.bootdisks import cached_boot_roots
from fsbench.vm.cache import DEFAULT_CACHE
from fsbench.vm.images import cached_images, current_keys
from fsbench.vm.kernels import cached_kernels, module_names


def host_lacks() -> list[str]:
    """The catalogue's filesystems this host's kernel cannot mount (neither registered nor
    a module): what the VM target is for. A fact of this machine, not a list."""
    kernel_fs = filesystems.kernel_filesystems()
    return [
        name
        for name, fs in filesystems.catalogue().items()
        if not fs.pseudo
        and fs.kernel_name not in kernel_fs  # else availability() asks modinfo
        and not filesystems.availability(fs, kernel_fs).kernel
    ]


def _guest_filesystems(cache: Path, wanted: list[str]) -> dict[str, dict[str, bool]]:
    """Per cached kernel: which of `wanted` it has (a module in its modules directory, or
    built in), read from the kernel's files, no boot."""
    out: dict[str, dict[str, bool]] = {}
    for kern in cached_kernels(cache):
        names = module_names(Path(kern["modules"]))
        if names is None:
            continue
        out[kern["version"]] = {
            fs: filesystems.get(fs).module in names or fs in names for fs in wanted
        }
    return out


def _kvm(images: list[dict[str, Any]]) -> dict[str, object]:
    """The probe's verdict, with a current image's kernel when one is cached (what a
    guest boots); else the boot sector's alone, said so."""
    kernels = [Path(i["dir"]) / "vmlinuz" for i in images if i["current"]]
    kernel = next((k for k in kernels if k.exists()), None)
    facts = qemu.probe_kvm(kernel=kernel).as_dict()
    if kernel is None and facts["usable"]:
        facts["reason"] = f"{facts['reason']} (no guest image yet: its kernel is tried first)"
    return facts


def doctor_facts(cache: Path = DEFAULT_CACHE, probe: bool = True) -> dict[str, Any]:
    """QEMU and its version, whether KVM is usable (the probe's verdict), debootstrap,
    cached images and kernels, and the filesystems the VM adds (per cached kernel)."""
    facts: dict[str, Any] = {"qemu": qemu.qemu_facts()}
    facts["debootstrap"] = shutil.which("debootstrap")
    current = current_keys(cache)
    images = [{**img, "current": img.get("key") in current} for img in cached_images(cache)]
    if probe and facts["qemu"]["binary"]:
        facts["kvm"] = _kvm(images)
    else:
        facts["kvm"] = {"usable": False, "reason": "not probed", "seconds": 0.0}
    facts["accel"] = "kvm" if facts["kvm"]["usable"] else "tcg"
    facts["cache_dir"] = str(cache)
    facts["images"] = images
    facts["kernels"] = cached_kernels(cache)
    facts["boot_roots"] = cached_boot_roots(cache)
    adds = host_lacks()
    facts["vm_filesystems"] = adds
    # Per kernel: the filesystems the host lacks that its modules provide (read from the
    # files)...
    facts["guest_filesystems"] = _guest_filesystems(cache, adds)
    # ...and, per image, what the guest itself reported at its last boot (modprobe'd,
    # in its /proc/filesystems, tools present): "ok" or the reason.
    facts["guest_verified"] = {
        img["key"]: {
            "kernel": (img.get("last_guest") or {}).get("kernel"),
            "filesystems": {
                fs: ((img.get("last_guest") or {}).get("filesystems") or {}).get(
                    fs, "not booted yet"
                )
                for fs in adds
            },
        }
        for img in facts["images"]
    }
    missing = host_qemu.missing_packages()
    facts["missing_packages"] = missing
    facts["usable"] = not missing
    if missing:
        facts["reason"] = f"apt-get install {' '.join(missing)}"
    elif not facts["images"]:
        facts["reason"] = "no image yet: the first VM run builds one (about 2-3 minutes)"
    else:
        facts["reason"] = "ok"
    return facts


if __name__ == "__main__":
    print(json.dumps(doctor_facts(), indent=1, default=str))
