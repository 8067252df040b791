"""The VM target's packages are stated once: the guest root's list is fsbench.execute.packages'
(the catalogue, the workloads' tools, what the runner and a booted guest need), and the
host packages the VM's doctor and preflight name are among those `make install` installs."""

from __future__ import annotations

from fsbench import workloads
from fsbench.execute import packages
from fsbench.system import filesystems
from fsbench.system import qemu as host_qemu
from fsbench.vm import guestfiles, rootfs
from fsbench.vm.cache import content_key


def test_guest_root_gets_every_filesystem_and_workload_tool() -> None:
    wanted = {fs.package for fs in filesystems.catalogue().values()}
    wanted |= {t.package for wl in workloads.all_workloads().values() for t in wl.tools}
    assert wanted <= set(packages.guest_packages())
    assert {"python3", "kmod", "systemd-sysv", "initramfs-tools"} <= set(packages.guest_packages())
    # The debootstrap tree is keyed by that list: another list is another tree.
    assert rootfs.rootfs_key() == content_key(
        "rootfs", rootfs.ROOTFS_RECIPE, rootfs.SUITE, list(packages.guest_packages())
    )


def test_vm_host_packages_are_installed_by_make_install() -> None:
    assert set(host_qemu.HOST_PACKAGES) <= set(packages.host_packages())


def test_guest_loads_every_catalogue_module() -> None:
    modules = {fs.module for fs in filesystems.catalogue().values() if fs.module}
    assert modules <= set(guestfiles.GUEST_MODULES)
    assert modules <= set(guestfiles.INITRD_MODULES)  # a boot root may be any of them
    assert f"for m in {' '.join(guestfiles.GUEST_MODULES)}; do" in guestfiles.GUEST_INIT_SCRIPT
