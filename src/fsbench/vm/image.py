"""The guest: a Debian 12 root image and a kernel, built once and cached.

Layout under the cache directory (default /var/tmp/fsbench/cache/vm):

    rootfs-<hash>/          debootstrap minbase + the package list (kernel-independent)
    kernels/<package>/      a Debian kernel package, downloaded and unpacked (dpkg -x)
    images/<hash>/          root.img (raw ext4), vmlinuz, initrd.img, meta.json

The image key hashes the kernel version, the package list, the recipe version and the
fsbench version plus its Python dependencies, so a change to any of them makes a new image
and an unchanged one is reused. Nothing is installed on the host: kernels are unpacked,
the guest's own mkinitramfs (inside a chroot) makes the initrd. The guest needs no network:
fsbench and its dependencies are copied from the host's environment (same CPython minor).
"""

from __future__ import annotations

import compileall
import fcntl
import hashlib
import importlib.metadata as md
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import fsbench
from fsbench import proc
from fsbench.errors import FsbenchError

DEFAULT_CACHE = Path("/var/tmp/fsbench/cache/vm")
SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
# Bump when the way an image is made changes: old images are then rebuilt, not reused.
RECIPE_VERSION = "4"
ROOTFS_RECIPE = "2"  # the same for the debootstrap step alone

# The guest's packages: every filesystem's tools (also those the host kernel lacks), the
# workload tools, and what a booted system needs (systemd for the boot workload later).
PACKAGES: tuple[str, ...] = (
    "e2fsprogs",
    "xfsprogs",
    "btrfs-progs",
    "jfsutils",
    "reiserfsprogs",
    "f2fs-tools",
    "nilfs-tools",
    "fio",
    "dbench",
    "fsmark",
    "postmark",
    "sysbench",
    "stress-ng",
    "gzip",
    "xz-utils",
    "python3",
    "util-linux",
    "kmod",
    "udev",
    "systemd-sysv",
    "initramfs-tools",
    "procps",
)
# The filesystems the VM adds to what a Debian host kernel usually has.
VM_FILESYSTEMS: tuple[str, ...] = ("jfs", "reiserfs", "f2fs", "nilfs2")
# Filesystem modules the guest loads before it runs anything (a missing one is reported
# by the guest's /proc/filesystems, not an error).
GUEST_MODULES: tuple[str, ...] = (
    "9p",
    "9pnet_virtio",
    "ext4",
    "xfs",
    "btrfs",
    "jfs",
    "reiserfs",
    "f2fs",
    "nilfs2",
)
ROOT_HEADROOM = 768 << 20
# bookworm's python3: the host's fsbench environment must have the same minor version,
# since its packages (C extensions included) are copied into the guest.
GUEST_PYTHON = (3, 11)
INITRD_MODULES: tuple[str, ...] = (
    "virtio_pci",
    "virtio_blk",
    "virtio_scsi",
    "ext4",
    "xfs",
    "btrfs",
    "jfs",
    "reiserfs",
    "f2fs",
    "nilfs2",
)
# Module trees a headless guest never loads (graphics, sound, network and USB drivers):
# leaving them out saves ~250 MB per image.
PRUNED_MODULES: tuple[str, ...] = (
    "kernel/sound",
    "kernel/drivers/gpu",
    "kernel/drivers/media",
    "kernel/drivers/net",
    "kernel/drivers/infiniband",
    "kernel/drivers/usb",
    "kernel/drivers/iio",
    "kernel/drivers/staging",
    "kernel/drivers/hwmon",
    "kernel/drivers/hid",
    "kernel/drivers/bluetooth",
    "kernel/drivers/isdn",
    "kernel/drivers/mmc",
    "kernel/net/wireless",
    "kernel/net/mac80211",
    "kernel/net/bluetooth",
    "kernel/net/netfilter",
    "kernel/net/ipv4/netfilter",
    "kernel/net/ipv6/netfilter",
)
GUEST_SITE = "opt/fsbench/lib/python3.11/site-packages"
GUEST_UNIT = "fsbench-guest.service"
SHARE_TAG = "fsbench"
LogFn = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def _hash(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


# -- kernels ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Kernel:
    """A bootable kernel: its image, its modules directory and its version (uname -r)."""

    version: str
    bzimage: Path
    modules: Path  # the lib/modules/<version> directory
    source: str  # "debian:<package>=<version>" or "path:<bzimage>"

    def as_dict(self) -> dict[str, str]:
        return {k: str(v) for k, v in asdict(self).items()}


def kernel_package(spec: str | None) -> str:
    """The Debian package for a kernel spec: None/"default" -> what linux-image-amd64
    depends on; "6.1"/"6.12" -> the newest linux-image-<that>.*-amd64 apt knows;
    "6.1.0-41-amd64" or "linux-image-6.1.0-41-amd64" as given."""
    if spec in (None, "", "default"):
        res = proc.run(["apt-cache", "depends", "linux-image-amd64"], timeout=60)
        for line in res.stdout.splitlines():
            m = re.search(r"Depends:\s*(linux-image-\S+-amd64)\b", line)
            if m:
                return m.group(1)
        raise FsbenchError(
            "cannot resolve linux-image-amd64 with apt-cache "
            f"({res.output.splitlines()[0] if res.output else 'no output'}); run apt-get update"
        )
    assert spec is not None
    if spec.startswith("linux-image-"):
        return spec
    if re.fullmatch(r"\d+\.\d+\.\d+-\S+", spec):
        return f"linux-image-{spec}"
    if re.fullmatch(r"\d+\.\d+", spec):
        res = proc.run(
            ["apt-cache", "search", "--names-only", f"^linux-image-{re.escape(spec)}[.-].*-amd64$"],
            timeout=60,
        )
        names = [ln.split()[0] for ln in res.stdout.splitlines() if ln.split()]
        # Real kernels only (6.1.0-41-amd64, 6.12.57+deb12-amd64, ...+bpo-amd64), not the
        # meta-packages (linux-image-6.12-amd64) that only depend on one.
        real = r"linux-image-\d+\.\d+\.\d+(-\d+)?(\+(bpo|deb\d+))?-amd64"
        names = [n for n in names if re.fullmatch(real, n)]
        if not names:
            hint = " (6.12 comes from bookworm-backports: add it to the apt sources)"
            raise FsbenchError(
                f"no Debian kernel package for {spec} in the apt sources"
                f"{hint if spec != '6.1' else ''}; run apt-get update"
            )
        return max(names, key=lambda n: [int(x) for x in re.findall(r"\d+", n)])
    raise FsbenchError(
        f"--kernel {spec!r}: expected default, a version (6.1, 6.12, 6.1.0-41-amd64), a Debian "
        "package name, or a path to a bzImage / kernel build directory"
    )


def debian_kernel(spec: str | None, cache: Path = DEFAULT_CACHE, log: LogFn = _quiet) -> Kernel:
    """Download and unpack a Debian kernel package into the cache (once)."""
    package = kernel_package(spec)
    base = cache / "kernels" / package
    done = base / "kernel.json"
    if done.is_file():
        data = json.loads(done.read_text())
        return Kernel(data["version"], Path(data["bzimage"]), Path(data["modules"]), data["source"])
    with _locked(cache, f"kernel-{package}"):
        if done.is_file():
            return debian_kernel(package, cache, log)
        log(f"downloading {package}")
        shutil.rmtree(base, ignore_errors=True)
        (base / "deb").mkdir(parents=True)
        res = proc.run(
            ["apt-get", "download", "-o", "APT::Sandbox::User=root", package],
            cwd=base / "deb",
            timeout=600,
        )
        debs = sorted((base / "deb").glob("*.deb"))
        if not res.ok or not debs:
            raise FsbenchError(f"apt-get download {package} failed: {res.output[-500:]}")
        res = proc.run(["dpkg-deb", "-x", str(debs[0]), str(base / "root")], timeout=600)
        if not res.ok:
            raise FsbenchError(f"dpkg-deb -x {debs[0].name} failed: {res.output[-500:]}")
        mods = sorted((base / "root" / "lib" / "modules").iterdir())
        if not mods:
            raise FsbenchError(f"{package} has no lib/modules")
        version = mods[0].name
        bz = base / "root" / "boot" / f"vmlinuz-{version}"
        deb_version = debs[0].name.split("_")[1] if "_" in debs[0].name else "?"
        kernel = Kernel(version, bz, mods[0], f"debian:{package}={deb_version}")
        for d in debs:
            d.unlink()
        done.write_text(json.dumps(kernel.as_dict(), indent=1))
        return kernel


def path_kernel(path: str | Path, modules: str | Path | None = None) -> Kernel:
    """Your own build: a bzImage (or a kernel build/install directory holding one) and a
    modules directory (lib/modules/<version>, as `make modules_install INSTALL_MOD_PATH=`
    leaves it). Without `modules`, it is looked for beside the bzImage."""
    p = Path(path).resolve()
    if p.is_dir():
        cands = [p / "arch/x86/boot/bzImage", p / "bzImage", *sorted(p.glob("boot/vmlinuz-*"))]
        cands += sorted(p.glob("vmlinuz-*"))
        found = next((c for c in cands if c.is_file()), None)
        if found is None:
            raise FsbenchError(f"--kernel {p}: no bzImage, vmlinuz-* or boot/vmlinuz-* in it")
        root, bz = p, found
    elif p.is_file():
        root, bz = p.parent, p
    else:
        raise FsbenchError(f"--kernel {p}: no such file or directory")
    if modules is not None:
        mod = Path(modules).resolve()
        if not (mod / "modules.order").exists() and (mod / "lib/modules").is_dir():
            subs = sorted((mod / "lib/modules").iterdir())
            mod = subs[0] if subs else mod
    else:
        subs = [d for d in sorted(root.glob("lib/modules/*")) if d.is_dir()]
        subs += [d for d in sorted(root.glob("modules/*")) if d.is_dir()]
        if not subs:
            raise FsbenchError(
                f"--kernel {p}: no lib/modules/<version> beside it; install the modules with "
                f"`make modules_install INSTALL_MOD_PATH={root}`"
            )
        mod = subs[0]
    if not mod.is_dir():
        raise FsbenchError(f"kernel modules {mod}: not a directory")
    return Kernel(mod.name, bz, mod, f"path:{bz}")


def resolve_kernel(spec: str | None, cache: Path = DEFAULT_CACHE, log: LogFn = _quiet) -> Kernel:
    """A --kernel value: a path (contains '/' or exists) or a Debian kernel spec."""
    if spec and ("/" in spec or Path(spec).exists()):
        return path_kernel(spec)
    return debian_kernel(spec, cache, log)


def cached_kernels(cache: Path = DEFAULT_CACHE) -> list[dict[str, str]]:
    out = []
    for f in sorted((cache / "kernels").glob("*/kernel.json")):
        try:
            out.append(json.loads(f.read_text()))
        except (OSError, json.JSONDecodeError):
            continue
    return out


# -- Python: fsbench and its dependencies, copied from the host's environment ------------


def _requirement_closure() -> list[md.Distribution]:
    seen: dict[str, md.Distribution] = {}
    todo = ["fsbench"]
    while todo:
        name = re.split(r"[\s;<>=!~\[(]", todo.pop(), maxsplit=1)[0].lower().replace("_", "-")
        if not name or name in seen:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        seen[name] = dist
        for req in dist.requires or []:
            if "extra ==" in req:
                continue
            todo.append(req)
    seen.pop("fsbench", None)
    return sorted(seen.values(), key=lambda d: d.metadata["Name"].lower())


def python_deps() -> list[str]:
    """name==version of every runtime dependency the guest gets (part of the image key)."""
    return [f"{d.metadata['Name']}=={d.version}" for d in _requirement_closure()]


def fsbench_source() -> Path:
    return Path(fsbench.__file__).resolve().parent


def _copy_python(site: Path) -> None:
    """Copy each dependency's files (as its RECORD lists them) and fsbench's own package."""
    site.mkdir(parents=True, exist_ok=True)
    for dist in _requirement_closure():
        base = Path(str(dist.locate_file("")))
        for f in dist.files or []:
            rel = Path(str(f))
            if rel.is_absolute() or ".." in rel.parts or "__pycache__" in rel.parts:
                continue
            if rel.parts and rel.parts[0] == "bin":
                continue
            src = base / rel
            if src.is_file():
                dst = site / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
    install_fsbench(site)


def install_fsbench(site: Path, compile_: bool = False) -> None:
    """fsbench's package from the checkout (or wherever it is installed) into `site`; with
    `compile_`, its bytecode too (same CPython minor as the guest's, so it is valid there)."""
    dst = site / "fsbench"
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(fsbench_source(), dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if compile_ and sys.version_info[:2] == GUEST_PYTHON:
        compileall.compile_dir(str(dst), quiet=1)


# -- the root filesystem ---------------------------------------------------------------


def apt_mirror() -> str:
    """The host's configured Debian mirror for bookworm (deb822 .sources or sources.list)."""
    files = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for f in files:
        try:
            text = f.read_text()
        except OSError:
            continue
        if f.suffix == ".sources":
            for stanza in re.split(r"\n\s*\n", text):
                fields: dict[str, str] = {}
                for ln in stanza.splitlines():
                    k, _, v = ln.partition(":")
                    if not ln.lstrip().startswith("#") and v.strip():
                        fields[k.strip().lower()] = v.strip()
                suites = fields.get("suites", "").split()
                if SUITE in suites and "deb" in fields.get("types", "").split():
                    return fields.get("uris", DEFAULT_MIRROR).split()[0]
        else:
            for ln in text.splitlines():
                parts = ln.split()
                if len(parts) >= 3 and parts[0] == "deb" and SUITE in parts:
                    uri = next((x for x in parts[1:] if "://" in x), None)
                    if uri and parts[parts.index(uri) + 1] == SUITE:
                        return uri
    return DEFAULT_MIRROR


def rootfs_key() -> str:
    return _hash("rootfs", ROOTFS_RECIPE, SUITE, sorted(PACKAGES))


def build_rootfs(cache: Path = DEFAULT_CACHE, log: LogFn = _quiet) -> Path:
    """debootstrap minbase + PACKAGES into cache/rootfs-<hash> (once)."""
    if shutil.which("debootstrap") is None:
        raise FsbenchError("the VM target needs debootstrap: apt-get install debootstrap")
    root = cache / f"rootfs-{rootfs_key()}"
    if (root / ".fsbench-complete").is_file():
        return root
    with _locked(cache, root.name):
        if (root / ".fsbench-complete").is_file():
            return root
        tmp = cache / f"{root.name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
        mirror = apt_mirror()
        # The .debs stay in the cache: a rebuild (another package list) downloads only
        # what is new.
        debs = (cache / "debs").resolve()
        debs.mkdir(parents=True, exist_ok=True)
        log(f"debootstrap {SUITE} minbase from {mirror} (about a minute)")
        t0 = time.monotonic()
        res = proc.run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--cache-dir={debs}",
                "--include=" + ",".join(PACKAGES),
                SUITE,
                str(tmp),
                mirror,
            ],
            timeout=1800,
        )
        if not res.ok:
            logf = tmp / "debootstrap" / "debootstrap.log"
            tail = logf.read_text()[-1500:] if logf.is_file() else res.output[-1500:]
            shutil.rmtree(tmp, ignore_errors=True)
            raise FsbenchError(f"debootstrap failed (exit {res.returncode}): {tail}")
        # Packages are in the image now; the .debs only take room.
        shutil.rmtree(tmp / "var/cache/apt/archives", ignore_errors=True)
        (tmp / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
        (tmp / ".fsbench-complete").write_text(f"{time.monotonic() - t0:.1f}\n")
        tmp.rename(root)
        return root


# -- the image -------------------------------------------------------------------------


@dataclass(frozen=True)
class GuestImage:
    """A built image: boot it with `kernel` + `initrd`, root on `root` (raw ext4)."""

    key: str
    dir: Path
    kernel_version: str
    kernel_source: str

    @property
    def root(self) -> Path:
        return self.dir / "root.img"

    @property
    def kernel(self) -> Path:
        return self.dir / "vmlinuz"

    @property
    def initrd(self) -> Path:
        return self.dir / "initrd.img"

    @property
    def meta(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.dir / "meta.json").read_text())
        return data


def image_key(kernel: Kernel) -> str:
    # A kernel from a path is identified by its files, not only by its version string.
    kid: Any = kernel.source
    if kernel.source.startswith("path:"):
        st = kernel.bzimage.stat()
        kid = [kernel.source, st.st_size, st.st_mtime_ns]
    return _hash(
        "image",
        RECIPE_VERSION,
        kernel.version,
        kid,
        rootfs_key(),
        fsbench.__version__,
        python_deps(),
        f"{sys.version_info.major}.{sys.version_info.minor}",
    )


def cached_images(cache: Path = DEFAULT_CACHE) -> list[dict[str, Any]]:
    out = []
    for meta in sorted((cache / "images").glob("*/meta.json")):
        try:
            data = json.loads(meta.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        size = sum(f.stat().st_blocks * 512 for f in meta.parent.iterdir() if f.is_file())
        guest = meta.parent / "guest.json"
        try:
            facts = json.loads(guest.read_text()) if guest.is_file() else None
        except (OSError, json.JSONDecodeError):
            facts = None
        out.append({**data, "dir": str(meta.parent), "disk_bytes": size, "last_guest": facts})
    return out


def ensure_image(
    kernel: str | Kernel | None = None, cache: Path = DEFAULT_CACHE, log: LogFn = _quiet
) -> GuestImage:
    """The cached image for this kernel, built first if needed (as root; a few minutes the
    first time, ~30 s for another kernel, nothing when cached)."""
    cache = Path(cache)
    if os.geteuid() != 0:
        raise FsbenchError("building the VM image needs root (debootstrap, chroot)")
    if sys.version_info[:2] != GUEST_PYTHON:
        raise FsbenchError(
            "the VM image copies fsbench's Python packages into a Debian 12 guest (Python "
            f"3.11); this fsbench runs on Python {sys.version_info[0]}.{sys.version_info[1]}: "
            "use a Python 3.11 virtualenv"
        )
    k = kernel if isinstance(kernel, Kernel) else resolve_kernel(kernel, cache, log)
    key = image_key(k)
    final = cache / "images" / key
    image = GuestImage(key, final, k.version, k.source)
    if (final / "meta.json").is_file():
        return image
    rootfs = build_rootfs(cache, log)
    with _locked(cache, f"image-{key}"):
        if (final / "meta.json").is_file():
            return image
        t0 = time.monotonic()
        tmp = cache / "images" / f"{key}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            stage = tmp / "root"
            log(f"staging the root filesystem for kernel {k.version}")
            _run(["cp", "-a", "--reflink=auto", f"{rootfs}/.", str(stage)], "copy rootfs")
            _configure(stage, k, key, log)
            shutil.copy2(k.bzimage, tmp / "vmlinuz")
            shutil.copy2(stage / "boot" / f"initrd.img-{k.version}", tmp / "initrd.img")
            used = int(proc.run(["du", "-sb", str(stage)], timeout=300).stdout.split()[0])
            size = ((used * 13 // 10 + ROOT_HEADROOM) >> 20) << 20
            log(f"making the root image ({size >> 20} MiB, sparse)")
            _run(
                [
                    "mkfs.ext4",
                    "-q",
                    "-F",
                    "-L",
                    "fsbench-root",
                    "-E",
                    "lazy_itable_init=0,lazy_journal_init=0",
                    "-d",
                    str(stage),
                    str(tmp / "root.img"),
                    f"{size >> 20}M",
                ],
                "mkfs.ext4 -d",
            )
            shutil.rmtree(stage)
            meta = {
                "key": key,
                "kernel_version": k.version,
                "kernel_source": k.source,
                "suite": SUITE,
                "packages": list(PACKAGES),
                "python_deps": python_deps(),
                "fsbench_version": fsbench.__version__,
                "recipe": RECIPE_VERSION,
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "build_seconds": round(time.monotonic() - t0, 1),
            }
            (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
            shutil.rmtree(final, ignore_errors=True)
            tmp.rename(final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        log(f"image {key} ready in {time.monotonic() - t0:.0f} s")
        return image


def _run(argv: list[str], what: str, timeout: float = 1800) -> proc.Result:
    res = proc.run(argv, timeout=timeout)
    if not res.ok:
        raise FsbenchError(f"VM image: {what} failed (exit {res.returncode}): {res.output[-1500:]}")
    return res


def _copy_modules(src: Path, dst: Path) -> None:
    pruned = {src / p for p in PRUNED_MODULES}

    def ignore(directory: str, names: list[str]) -> set[str]:
        return {n for n in names if Path(directory, n) in pruned or n in ("build", "source")}

    shutil.copytree(src, dst, symlinks=True, ignore=ignore)


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def _mask(root: Path, unit: str) -> None:
    link = root / "etc/systemd/system" / unit
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to("/dev/null")


GUEST_SERVICE = """\
[Unit]
Description=fsbench guest job
After=local-fs.target systemd-modules-load.service
RequiresMountsFor=/share
ConditionPathExists=/share/job.json
SuccessAction=poweroff-force
FailureAction=poweroff-force

[Service]
Type=oneshot
# The host's fsbench (share/py) before the image's copy: host and guest run the same code.
Environment=PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=/share/py
ExecStart=/opt/fsbench/bin/python -m fsbench.vm.guest /share/job.json
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
"""

# PID 1 for a job (`init=`): systemd's own start-up costs ~30 s under TCG, so a job boots
# straight into this script; systemd stays in the image for the boot workload.
GUEST_INIT = "/opt/fsbench/guest-init"
GUEST_INIT_SCRIPT = f"""\
#!/bin/sh
# fsbench guest init: mount what the job needs, run it, power off. PID 1: never exits
# early (the kernel would panic; with panic=-1 QEMU then stops, which is also fine).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
# The initramfs moved /proc, /sys, /dev and /run here already; mount what is missing.
m() {{ mountpoint -q "$3" || mount -t "$1" "$2" "$3"; }}
m proc proc /proc
m sysfs sysfs /sys
m devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
m devpts devpts /dev/pts
m tmpfs tmpfs /dev/shm
m tmpfs tmpfs /run
m tmpfs tmpfs /tmp
mount -o remount,rw /
hostname fsbench-guest
for m in {" ".join(GUEST_MODULES)}; do modprobe -q "$m"; done
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 {SHARE_TAG} /share
echo "fsbench-guest: init done after $(cut -d' ' -f1 /proc/uptime) s"
PYTHONPATH=/share/py PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 \\
    /opt/fsbench/bin/python -m fsbench.vm.guest /share/job.json
sync
umount /share
mount -o remount,ro /
poweroff -f -f
echo o > /proc/sysrq-trigger
sleep 30
"""

# Units that only cost boot time or write behind the workload's back in a throwaway guest.
MASKED_UNITS = (
    "serial-getty@ttyS0.service",
    "getty.target",
    "getty-static.service",
    "apt-daily.timer",
    "apt-daily-upgrade.timer",
    "e2scrub_all.timer",
    "e2scrub_reap.service",
    "fstrim.timer",
    "systemd-timesyncd.service",
    "dpkg-db-backup.timer",
    "systemd-binfmt.service",
    "proc-sys-fs-binfmt_misc.automount",
    "sys-kernel-debug.mount",
    "sys-kernel-tracing.mount",
    "dev-hugepages.mount",
    "modprobe@dm_mod.service",
    "modprobe@efi_pstore.service",
    "modprobe@drm.service",
    "systemd-update-utmp.service",
    "systemd-update-utmp-runlevel.service",
    "systemd-journal-flush.service",
)


def _configure(root: Path, k: Kernel, key: str, log: LogFn) -> None:
    # The kernel's modules, indexed for this root.
    mods = root / "lib/modules" / k.version
    shutil.rmtree(mods, ignore_errors=True)
    mods.parent.mkdir(parents=True, exist_ok=True)
    _copy_modules(k.modules, mods)
    for link in ("build", "source"):
        (mods / link).unlink(missing_ok=True)
    _run(["chroot", str(root), "depmod", "-a", k.version], "depmod (in the guest root)")
    # The guest's own mkinitramfs: virtio and the root's ext4 in the initrd. It reads the
    # kernel's config (for the compression it supports): the package's, or a build's.
    config = root / "boot" / f"config-{k.version}"
    cands = [
        k.bzimage.parent / f"config-{k.version}",
        k.bzimage.parent / ".config",
        k.bzimage.parent.parent.parent.parent / ".config",  # arch/x86/boot/bzImage
    ]
    found = next((c for c in cands if c.is_file()), None)
    if found is not None:
        shutil.copy2(found, config)
    elif not config.is_file():
        _write(config, "CONFIG_RD_GZIP=y\n")  # assumed: every x86 distro config has it
    _write(
        root / "etc/initramfs-tools/conf.d/fsbench",
        "MODULES=list\nCOMPRESS=gzip\n",
    )
    # What a root on virtio needs (the boot workload's roots too): the listed modules and
    # their dependencies only, so the initrd is small and the guest's udev quick.
    _write(root / "etc/initramfs-tools/modules", "\n".join(INITRD_MODULES) + "\n")
    log("mkinitramfs in the guest root")
    _run(
        ["chroot", str(root), "mkinitramfs", "-o", f"/boot/initrd.img-{k.version}", k.version],
        "mkinitramfs",
    )
    # Identity, mounts, modules, the job's unit.
    _write(root / "etc/machine-id", hashlib.md5(key.encode()).hexdigest() + "\n")
    _write(root / "etc/hostname", "fsbench-guest\n")
    _write(root / "etc/hosts", "127.0.0.1 localhost\n127.0.1.1 fsbench-guest\n")
    _write(
        root / "etc/fstab",
        "/dev/vda / ext4 rw,errors=remount-ro 0 1\n"
        f"{SHARE_TAG} /share 9p trans=virtio,version=9p2000.L,msize=262144,nofail 0 0\n",
    )
    (root / "share").mkdir(exist_ok=True)
    _write(root / "etc/modules-load.d/fsbench.conf", "\n".join(GUEST_MODULES) + "\n")
    _write(root / "etc/systemd/system" / GUEST_UNIT, GUEST_SERVICE)
    _write(root / GUEST_INIT.lstrip("/"), GUEST_INIT_SCRIPT, 0o755)
    wants = root / "etc/systemd/system/multi-user.target.wants" / GUEST_UNIT
    wants.parent.mkdir(parents=True, exist_ok=True)
    wants.unlink(missing_ok=True)
    wants.symlink_to(f"/etc/systemd/system/{GUEST_UNIT}")
    for unit in MASKED_UNITS:
        _mask(root, unit)
    (root / "etc/systemd/system/default.target").unlink(missing_ok=True)
    (root / "etc/systemd/system/default.target").symlink_to("/lib/systemd/system/multi-user.target")
    # fsbench in a venv at /opt/fsbench (no pip, no network: a pyvenv.cfg and the files).
    venv = root / "opt/fsbench"
    (venv / "bin").mkdir(parents=True, exist_ok=True)
    _write(
        venv / "pyvenv.cfg",
        "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11\n",
    )
    py = venv / "bin/python"
    py.unlink(missing_ok=True)
    py.symlink_to("/usr/bin/python3")
    log("copying fsbench and its Python dependencies")
    _copy_python(root / GUEST_SITE)
    # Bytecode now: compiling pydantic & co. at every boot costs a minute under TCG.
    _run(
        [
            "chroot",
            str(root),
            "/opt/fsbench/bin/python",
            "-m",
            "compileall",
            "-q",
            "-j",
            "0",
            # Not imported in the guest (reports only): not worth compiling.
            "-x",
            "/(scipy|matplotlib|numpy|PIL|fontTools|contourpy|kiwisolver)/",
            "/opt/fsbench/lib",
        ],
        "compileall in the guest root",
    )
    _run(
        ["chroot", str(root), "/opt/fsbench/bin/python", "-c", "import fsbench.runner"],
        "import fsbench in the guest root",
    )


def current_keys(cache: Path = DEFAULT_CACHE) -> set[str]:
    """The image key each cached Debian kernel gets with this fsbench and package list."""
    keys = set()
    for data in cached_kernels(cache):
        k = Kernel(data["version"], Path(data["bzimage"]), Path(data["modules"]), data["source"])
        if k.bzimage.is_file():
            keys.add(image_key(k))
    return keys


def prune_cache(cache: Path = DEFAULT_CACHE, keep: set[str] | None = None) -> list[str]:
    """Delete what no current build uses: rootfs trees of another package list, images
    not in `keep` (default: the current key of every cached Debian kernel), and leftovers
    of interrupted builds. Returns the paths removed."""
    if keep is None:
        keep = current_keys(cache)
    removed = []
    current_rootfs = f"rootfs-{rootfs_key()}"
    for path in sorted(cache.glob("rootfs-*")):
        if path.name != current_rootfs:
            removed.append(path)
    for path in sorted((cache / "images").glob("*")):
        if path.name not in keep:
            removed.append(path)
    for path in removed:
        with _locked(cache, path.name if path.name.startswith("rootfs-") else f"image-{path.name}"):
            shutil.rmtree(path, ignore_errors=True)
    return [str(p) for p in removed]


# -- locking ---------------------------------------------------------------------------


@contextmanager
def _locked(cache: Path, name: str) -> Iterator[None]:
    """One builder per artefact across processes (two runs starting at once)."""
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f".lock-{name}", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
