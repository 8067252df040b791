"""The VM's cache directory: what is kept there, one builder per artefact across processes,
content keys, and the build steps that must succeed.

    <cache>/ (default /var/tmp/fsbench/cache/vm; FSBENCH_VM_CACHE names another)
      debs/                  .debs debootstrap downloaded (a rebuild fetches what is new)
      rootfs-<key>/          debootstrap minbase + the guest's packages      (rootfs.py)
      kernels/<package>/     a Debian kernel package, unpacked (dpkg -x)     (kernels.py)
      images/<key>/          root.img, vmlinuz, initrd.img, meta.json        (images.py)
      boot-roots/<key>.img   the boot workload's roots, one per config       (bootdisks.py)
      logs/                  the last serial console logs                    (rundir.py)

A key hashes everything that goes into its artefact, so a change to any of it makes a new
one and an unchanged one is reused, after a check: a published build's meta.json lists its
files with their sizes (`publish`), and one whose files are not all there at those sizes
(cut short, truncated, removed by hand) is built again, not trusted (`damaged`).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fsbench.system import proc
from fsbench.system.errors import FsbenchError

VM_CACHE_ENV = "FSBENCH_VM_CACHE"  # another place for the cache (the suite's cold runs)


def default_cache(environ: Mapping[str, str] = os.environ) -> Path:
    """The cache's directory: FSBENCH_VM_CACHE when set, else /var/tmp/fsbench/cache/vm."""
    return Path(environ.get(VM_CACHE_ENV) or "/var/tmp/fsbench/cache/vm")


DEFAULT_CACHE = default_cache()
LogFn = Callable[[str], None]  # what a builder says it is doing (the CLI's progress line)


def quiet(_: str) -> None:
    """A LogFn that says nothing."""


def content_key(*parts: Any) -> str:
    """16 hex digits naming an artefact made from `parts` (JSON-able)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


@contextmanager
def locked(cache: Path, name: str) -> Iterator[None]:
    """One builder per artefact across processes (two runs starting at once)."""
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f".lock-{name}", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build_step(argv: list[str], what: str, timeout: float = 1800) -> proc.Result:
    """A step of an image build that must succeed; its output's tail when it does not."""
    res = proc.run(argv, timeout=timeout)
    if not res.ok:
        raise FsbenchError(f"VM image: {what} failed (exit {res.returncode}): {res.output[-1500:]}")
    return res


def json_files(paths: Iterable[Path]) -> Iterator[tuple[Path, dict[str, Any]]]:
    """(path, data) of each JSON file of `paths` that reads; a broken one is passed over."""
    for path in paths:
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(data, dict):
            yield path, data


def publish(tmp: Path, final: Path, meta: dict[str, Any]) -> None:
    """A build made in `tmp` becomes `final` with its meta.json (listing its files and
    their sizes, for `damaged`), in one rename: a reader sees the whole build or none."""
    files = {f.name: f.stat().st_size for f in sorted(tmp.iterdir()) if f.is_file()}
    (tmp / "meta.json").write_text(json.dumps({**meta, "files": files}, indent=1))
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)


def damaged(final: Path, required: Iterable[str]) -> str | None:
    """Why the published build `final` cannot be used (None: it can): no meta.json that
    reads, a `required` file missing or empty, or a file not at the size its meta.json
    recorded. A symlink is checked through to its target."""
    try:
        meta = json.loads((final / "meta.json").read_text())
    except (OSError, json.JSONDecodeError):
        return "no meta.json" if not (final / "meta.json").exists() else "meta.json unreadable"
    recorded: dict[str, int] = meta.get("files") or {}
    for name in sorted({*required, *recorded}):
        try:
            size = (final / name).stat().st_size
        except OSError:
            return f"{name} missing"
        if name in recorded and size != recorded[name]:
            return f"{name} is {size} bytes, built as {recorded[name]}"
        if size == 0 and name in required:
            return f"{name} empty"
    return None
