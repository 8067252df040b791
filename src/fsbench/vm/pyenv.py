"""fsbench and its Python dependencies in the guest, copied from the host's environment:
the guest needs no network and no pip, and runs the same code as the host."""

from __future__ import annotations

import compileall
import importlib.metadata as md
import re
import shutil
import sys
from pathlib import Path

import fsbench
from fsbench.system.errors import FsbenchError

# bookworm's python3: the host's fsbench environment must have the same minor version,
# since its packages (C extensions included) are copied into the guest.
GUEST_PYTHON = (3, 11)
GUEST_VENV = "opt/fsbench"  # in the guest's root
GUEST_SITE = f"{GUEST_VENV}/lib/python3.11/site-packages"


def require_guest_python() -> None:
    if sys.version_info[:2] != GUEST_PYTHON:
        raise FsbenchError(
            "the VM image copies fsbench's Python packages into a Debian 12 guest (Python "
            f"3.11); this fsbench runs on Python {sys.version_info[0]}.{sys.version_info[1]}: "
            "use a Python 3.11 virtualenv"
        )


def requirement_closure() -> list[md.Distribution]:
    """fsbench's runtime dependencies, and theirs (extras left out)."""
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
    return [f"{d.metadata['Name']}=={d.version}" for d in requirement_closure()]


def fsbench_source() -> Path:
    return Path(fsbench.__file__).resolve().parent


def copy_python(site: Path) -> None:
    """Copy each dependency's files (as its RECORD lists them) and fsbench's own package."""
    site.mkdir(parents=True, exist_ok=True)
    for dist in requirement_closure():
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
