"""The Debian packages fsbench needs, stated once.

Most of the list is not a list: it is read from the records that already name a package,
the filesystem catalogue (`FsType.package`: mkfs, fsck, geometry tools; also of the
filesystems the host kernel lacks, which the VM target adds), the workloads' tools and
the monitors' (`Tool.package`). `EXTRA` names, with the reason for each, what is none of these.

`make install` asks this module for the host's list (`python -m fsbench.execute.packages`,
from the venv, which needs only python3-venv to be made); `make run` for the default
preset's (`run`: its filesystems' and workloads' tools and what every run on the host
calls; not QEMU, the database servers, the kernel source or the browser, which a fresh
machine would otherwise fetch before its first table); the VM target's guest root gets
`guest_packages()`. A workload that declares a new tool, or a filesystem added to the
catalogue, brings its package to both without another edit.

    python -m fsbench.execute.packages [host|guest|run]   # one package a line, sorted
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from fsbench import workloads
from fsbench.system import filesystems, monitors


@dataclass(frozen=True)
class Extra:
    """Packages that are no filesystem's or workload's tools, and why fsbench needs them."""

    packages: tuple[str, ...]
    why: str
    guest: bool = False  # the VM target's guest needs them too (it runs the same runner)
    run: bool = False  # every run on the host needs them (`make run` installs them)


EXTRA: tuple[Extra, ...] = (
    Extra(
        ("python3", "python3-venv"),
        "fsbench's own Python, and the venv make install makes",
        run=True,
    ),
    Extra(("util-linux",), "loop devices, blkdiscard, findmnt, blockdev", guest=True, run=True),
    Extra(
        ("stress-ng", "xz-utils"),
        "the contention=busy knob (stress-ng); the kernel tarball's decompression (xz)",
        guest=True,
    ),
    # In every Debian system (required priority): the guest's debootstrap minbase has them.
    Extra(("mount", "tar"), "mount and umount; tar for the trees (untar, tree-read)", run=True),
    Extra(("quota", "btrfs-compsize"), "feature probes (fsbench features): quotas, compression"),
    Extra(
        ("linux-source", "libelf-dev", "libssl-dev"),
        "the kernel-tree workloads: Debian's kernel tarball and the headers its build needs",
    ),
    Extra(
        ("ccache",),
        "fsbench bisect: each step's kernel build reuses what earlier steps compiled",
    ),
    Extra(
        ("qemu-system-x86", "qemu-utils", "debootstrap"),
        "the VM target: QEMU, and the guest's Debian root made by debootstrap",
    ),
    Extra(("strace",), "fsbench record: the tracer of a command's filesystem calls (replay)"),
    Extra(("chromium",), "the test that renders the HTML report in a real browser"),
    Extra(
        ("postgresql", "openssh-server"),
        "many machines: the PostgreSQL store and the SSH Ansible uses (tests run both locally)",
    ),
)
# What a booted guest itself is: modprobe, udev for the scratch disk, systemd (the boot
# workload boots it), the initramfs builder, ps and sysctl.
GUEST_SYSTEM: tuple[str, ...] = (
    "python3",
    "kmod",
    "udev",
    "systemd-sysv",
    "initramfs-tools",
    "procps",
)


def tool_packages() -> set[str]:
    """The packages of every filesystem's, workload's and monitor's tools."""
    found = {fs.package for fs in filesystems.catalogue().values()}
    found |= {t.package for wl in workloads.all_workloads().values() for t in wl.tools}
    found |= {t.package for m in monitors.all_monitors().values() for t in m.needs.tools}
    return found


def host_packages() -> tuple[str, ...]:
    """What `make install` installs on the host, sorted."""
    extra = {p for e in EXTRA for p in e.packages}
    return tuple(sorted(tool_packages() | extra))


def run_packages(preset: str | None = None) -> tuple[str, ...]:
    """What `make run` installs, sorted: the tools of the preset's filesystems, workloads
    and monitors (the default preset's when None) and what every run on the host calls."""
    from fsbench.plan import model as planning
    from fsbench.plan import presets

    plan = presets.load_preset(preset or presets.DEFAULT_PRESET)
    found = {p for e in EXTRA if e.run for p in e.packages}
    found |= {t.package for name in plan.monitors for t in monitors.get(name).needs.tools}
    for cell in planning.expand(plan):
        found.add(filesystems.get(cell.config.type).package)
        for name, _ in cell.steps:
            found |= {t.package for t in workloads.get(name).tools}
    return tuple(sorted(found))


def guest_packages() -> tuple[str, ...]:
    """What the VM target's guest root gets, sorted: every filesystem's tools (also those
    the host kernel lacks), every workload's tools, what the runner calls, the system."""
    extra = {p for e in EXTRA if e.guest for p in e.packages}
    return tuple(sorted(tool_packages() | extra | set(GUEST_SYSTEM)))


def main(argv: list[str]) -> int:
    which = argv[0] if argv else "host"
    if which not in ("host", "guest", "run") or len(argv) > 1:
        print("usage: python -m fsbench.execute.packages [host|guest|run]", file=sys.stderr)
        return 2
    found = {"host": host_packages, "guest": guest_packages, "run": run_packages}[which]()
    print("\n".join(found))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
