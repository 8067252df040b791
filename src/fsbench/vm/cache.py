"""The VM's cache directory: what is kept there, one builder per artefact across processes,
content keys, and the build steps that must succeed.

    <cache>/ (default /var/tmp/fsbench/cache/vm)
      debs/                  .debs debootstrap downloaded (a rebuild fetches what is new)
      rootfs-<key>/          debootstrap minbase + the guest's packages      (rootfs.py)
      kernels/<package>/     a Debian kernel package, unpacked (dpkg -x)     (kernels.py)
      images/<key>/          root.img, vmlinuz, initrd.img, meta.json        (images.py)
      boot-roots/<key>.img   the boot workload's roots, one per config       (bootdisks.py)
      logs/                  the last serial console logs                    (rundir.py)

A key hashes everything that goes into its artefact, so a change to any of it makes a new
one and an unchanged one is reused.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fsbench.system import proc
from fsbench.system.errors import FsbenchError

DEFAULT_CACHE = Path("/var/tmp/fsbench/cache/vm")
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
    """A build made in `tmp` becomes `final` with its meta.json, in one rename: a reader
    sees the whole build or none of it."""
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
