"""What the VM target can do on this machine: for `fsbench doctor`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from fsbench.vm import image as vm_image
from fsbench.vm import qemu


def _guest_filesystems(cache: Path) -> dict[str, dict[str, Any]]:
    """Per cached image: which of the VM's filesystems its kernel has (a module in the
    image's modules directory, or built in), read from the image's kernel, no boot."""
    out: dict[str, dict[str, Any]] = {}
    for kern in vm_image.cached_kernels(cache):
        mods = Path(kern["modules"])
        try:
            builtin = (mods / "modules.builtin").read_text()
            index = (
                (mods / "modules.order").read_text() if (mods / "modules.order").is_file() else ""
            )
        except OSError:
            continue
        names = {
            Path(line.strip()).name.removesuffix(".ko")
            for line in (builtin + index).splitlines()
            if line.strip()
        }
        found = {p.name.split(".ko")[0] for p in (mods / "kernel" / "fs").rglob("*.ko*")}
        names |= found
        out[kern["version"]] = {fs: (fs in names) for fs in vm_image.VM_FILESYSTEMS}
    return out


def _boot_roots(cache: Path) -> list[dict[str, Any]]:
    out = []
    for meta in sorted((cache / "boot-roots").glob("*.json")):
        try:
            data = json.loads(meta.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if Path(data.get("path", "")).is_file():
            out.append(data)
    return out


def doctor_facts(cache: Path = vm_image.DEFAULT_CACHE, probe: bool = True) -> dict[str, Any]:
    """QEMU and its version, whether KVM is usable (the probe's verdict), debootstrap,
    cached images and kernels, and the filesystems the VM adds (per cached kernel)."""
    facts: dict[str, Any] = {"qemu": qemu.qemu_facts()}
    facts["debootstrap"] = shutil.which("debootstrap")
    if probe and facts["qemu"]["binary"]:
        facts["kvm"] = qemu.probe_kvm().as_dict()
    else:
        facts["kvm"] = {"usable": False, "reason": "not probed", "seconds": 0.0}
    facts["accel"] = "kvm" if facts["kvm"]["usable"] else "tcg"
    facts["cache_dir"] = str(cache)
    current = vm_image.current_keys(cache)
    facts["images"] = [
        {**img, "current": img.get("key") in current} for img in vm_image.cached_images(cache)
    ]
    facts["kernels"] = vm_image.cached_kernels(cache)
    facts["boot_roots"] = _boot_roots(cache)
    facts["vm_filesystems"] = list(vm_image.VM_FILESYSTEMS)
    # Per kernel: the VM's filesystems its modules provide (read from the files)...
    facts["guest_filesystems"] = _guest_filesystems(cache)
    # ...and, per image, what the guest itself reported at its last boot (modprobe'd,
    # in its /proc/filesystems, tools present): "ok" or the reason.
    facts["guest_verified"] = {
        img["key"]: {
            "kernel": (img.get("last_guest") or {}).get("kernel"),
            "filesystems": {
                fs: ((img.get("last_guest") or {}).get("filesystems") or {}).get(
                    fs, "not booted yet"
                )
                for fs in vm_image.VM_FILESYSTEMS
            },
        }
        for img in facts["images"]
    }
    missing = []
    if not facts["qemu"]["binary"]:
        missing.append("qemu-system-x86")
    if not facts["qemu"]["qemu_img"]:
        missing.append("qemu-utils")
    if not facts["debootstrap"]:
        missing.append("debootstrap")
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
