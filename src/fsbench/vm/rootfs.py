"""The guest's root filesystem before any kernel: Debian 12 minbase by debootstrap, with
the guest's packages, built once per package list and cached (kernel-independent).

The packages are not a list of their own (fsbench.execute.packages): every filesystem's tools
(the catalogue, also those the host kernel lacks), every workload's tools, what the runner
calls beside them, and what a booted guest needs.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

from fsbench.execute import packages
from fsbench.system import proc
from fsbench.system.errors import FsbenchError
from fsbench.vm.cache import DEFAULT_CACHE, LogFn, content_key, locked, quiet

SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
ROOTFS_RECIPE = "2"  # bump when the debootstrap step changes: old trees are then rebuilt


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
    return content_key("rootfs", ROOTFS_RECIPE, SUITE, list(packages.guest_packages()))


def build_rootfs(cache: Path = DEFAULT_CACHE, log: LogFn = quiet) -> Path:
    """debootstrap minbase + packages.guest_packages() into cache/rootfs-<key> (once)."""
    if shutil.which("debootstrap") is None:
        raise FsbenchError("the VM target needs debootstrap: apt-get install debootstrap")
    root = cache / f"rootfs-{rootfs_key()}"
    if (root / ".fsbench-complete").is_file():
        return root
    with locked(cache, root.name):
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
                "--include=" + ",".join(packages.guest_packages()),
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
