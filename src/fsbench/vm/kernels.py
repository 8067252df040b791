"""The guest's kernels: a Debian kernel package (downloaded and unpacked into the cache,
nothing installed on the host) or your own build (a bzImage and its modules directory, or
none for a kernel with everything built in: its .config beside it says
`# CONFIG_MODULES is not set`).

    --kernel default | 6.1 | 6.12 | 6.1.0-41-amd64 | linux-image-... | /path/to/build
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fsbench.system import proc
from fsbench.system.errors import FsbenchError
from fsbench.vm.cache import DEFAULT_CACHE, LogFn, json_files, locked, quiet


@dataclass(frozen=True)
class Kernel:
    """A bootable kernel: its image, its modules directory and its version (uname -r)."""

    version: str
    bzimage: Path
    modules: Path | None  # the lib/modules/<version> directory; None: all built in
    source: str  # "debian:<package>=<version>" or "path:<bzimage>"

    @property
    def builtin(self) -> bool:
        """Everything built in: no modules, and no initrd needed to boot."""
        return self.modules is None

    def as_dict(self) -> dict[str, str]:
        return {k: "" if v is None else str(v) for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Kernel:
        modules = Path(data["modules"]) if data.get("modules") else None
        return cls(data["version"], Path(data["bzimage"]), modules, data["source"])

    def config_file(self) -> Path | None:
        """The kernel's .config: the package's boot/config-<version>, or a build's."""
        here = self.bzimage.parent
        cands = [
            here / f"config-{self.version}",
            here / ".config",
            here.parent.parent.parent / ".config",  # arch/x86/boot/bzImage
        ]
        return next((c for c in cands if c.is_file()), None)


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


def debian_kernel(spec: str | None, cache: Path = DEFAULT_CACHE, log: LogFn = quiet) -> Kernel:
    """Download and unpack a Debian kernel package into the cache (once)."""
    package = kernel_package(spec)
    base = cache / "kernels" / package
    done = base / "kernel.json"
    if done.is_file():
        return Kernel.from_dict(json.loads(done.read_text()))
    with locked(cache, f"kernel-{package}"):
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
        if not subs and _modules_off(bz):
            version = bzimage_version(bz)
            if version is None:
                raise FsbenchError(f"--kernel {p}: {bz.name} is no bzImage (no version in it)")
            return Kernel(version, bz, None, f"path:{bz}")
        if not subs:
            raise FsbenchError(
                f"--kernel {p}: no lib/modules/<version> beside it; install the modules with "
                f"`make modules_install INSTALL_MOD_PATH={root}`"
            )
        mod = subs[0]
    if not mod.is_dir():
        raise FsbenchError(f"kernel modules {mod}: not a directory")
    return Kernel(mod.name, bz, mod, f"path:{bz}")


def _modules_off(bz: Path) -> bool:
    """Whether the kernel's .config (beside it, as a build leaves it) has no modules."""
    probe = Kernel("", bz, None, "")
    config = probe.config_file()
    return config is not None and "# CONFIG_MODULES is not set" in config.read_text(
        errors="replace"
    )


def bzimage_version(bz: Path) -> str | None:
    """uname -r of a bzImage, from its setup header (the string at kernel_version + 0x200,
    after the "HdrS" magic at 0x202), as `file` reads it."""
    try:
        with open(bz, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return None
    if head[0x202:0x206] != b"HdrS" or len(head) < 0x210:
        return None
    at = int.from_bytes(head[0x20E:0x210], "little") + 0x200
    text = head[at : at + 256].split(b"\0", 1)[0].decode(errors="replace").split()
    return text[0] if text else None


def resolve_kernel(spec: str | None, cache: Path = DEFAULT_CACHE, log: LogFn = quiet) -> Kernel:
    """A --kernel value: a path (contains '/' or exists) or a Debian kernel spec."""
    if spec and ("/" in spec or Path(spec).exists()):
        return path_kernel(spec)
    return debian_kernel(spec, cache, log)


def cached_kernels(cache: Path = DEFAULT_CACHE) -> list[dict[str, str]]:
    return [data for _, data in json_files(sorted((cache / "kernels").glob("*/kernel.json")))]


def module_names(modules: Path) -> set[str] | None:
    """What a kernel's modules directory says it has, built in or as a module (read from
    the files, no boot); None when the directory cannot be read."""
    try:
        builtin = (modules / "modules.builtin").read_text()
        order = modules / "modules.order"
        index = order.read_text() if order.is_file() else ""
    except OSError:
        return None
    names = {
        Path(line.strip()).name.removesuffix(".ko")
        for line in (builtin + index).splitlines()
        if line.strip()
    }
    return names | {p.name.split(".ko")[0] for p in (modules / "kernel" / "fs").rglob("*.ko*")}
