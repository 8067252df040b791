"""QEMU on the host, as far as the layers below the VM target need to know: whether it is
there, in which version, and the Debian packages that bring it. The VM target (vm/qemu.py)
does the rest: the accelerator, the command line, the guest."""

from __future__ import annotations

import re

from fsbench.system import proc

QEMU = "qemu-system-x86_64"
# The VM target's side on the host, as Debian packages and the command each gives: QEMU
# and qemu-img run a guest; debootstrap builds the guest image (a cached one needs none).
HOST_PACKAGES = {"qemu-system-x86": QEMU, "qemu-utils": "qemu-img", "debootstrap": "debootstrap"}


def qemu_binary() -> str | None:
    return proc.which(QEMU)


def missing_packages() -> list[str]:
    """The host packages of the VM target that are not installed (by their commands)."""
    return [pkg for pkg, command in HOST_PACKAGES.items() if proc.which(command) is None]


def qemu_missing() -> str | None:
    """Why this host cannot run a guest at all, or None."""
    if qemu_binary() is None:
        return f"the VM target needs QEMU: apt-get install {' '.join(HOST_PACKAGES)}"
    return None


def qemu_version(binary: str | None = None) -> str | None:
    binary = binary or qemu_binary()
    if binary is None:
        return None
    res = proc.run([binary, "--version"], timeout=20)
    m = re.search(r"version\s+(\S+)", res.stdout)
    return m.group(1) if m else None
