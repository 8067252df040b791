"""The target contract: one block device that serves every filesystem of a run.

Use as a context manager: `open()` validates and attaches, `close()` releases
everything the target made, on every path (error, Ctrl-C, SIGTERM).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from fsbench.execute.targets import devinfo
from fsbench.system import proc
from fsbench.system.errors import TrialFailed
from fsbench.system.opened import Opened

# What blkdiscard says when the device cannot discard at all (EOPNOTSUPP): a fact about
# the device to record, not an error.
_CANNOT_DISCARD = ("operation not supported", "not supported")


class Target(Opened, ABC):
    kind: str

    @property
    @abstractmethod
    def device(self) -> str:
        """Path of the block device to format (valid between open and close)."""

    @property
    @abstractmethod
    def size_bytes(self) -> int: ...

    @abstractmethod
    def open(self) -> None:
        """Check safety, create/attach. Raises errors.FsbenchError with a one-line reason."""

    @abstractmethod
    def close(self) -> None:
        """Release what open() made. Idempotent; never raises for an already released thing."""

    def twin(self) -> Target | None:
        """A second device like this one (same size, same medium), not opened: where a
        workload makes a clean copy of what it aged (the aged-vs-clean comparison). None
        where there is no such device (a real disk)."""
        return None

    @abstractmethod
    def reset(self) -> str:
        """Before each mkfs: return the device to the same state (discard), so trials
        start alike whichever filesystem ran before. Returns what was done, for the
        trial's provenance: "ok" or "unsupported: <why>"; raises TrialFailed when the
        discard itself fails (an I/O error is an error, not a property of the device)."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Provenance: kind, path, size, backing device model, rotational, direct I/O..."""


def discard(device: str, timeout: float) -> str:
    """Discard the whole device (blkdiscard): "ok", or "unsupported: <why>" when the device
    cannot discard (a loop image on a filesystem without hole punching, a disk without
    TRIM); TrialFailed for any other failure."""
    kname = devinfo.kname_of_device(device) or Path(device).name
    max_bytes = devinfo.SYS_BLOCK / devinfo.whole_disk(kname) / "queue" / "discard_max_bytes"
    try:
        if max_bytes.read_text().strip() == "0":
            return f"unsupported: {device} cannot discard (queue/discard_max_bytes is 0)"
    except OSError:
        pass  # no sysfs entry to look at: blkdiscard says
    res = proc.run(["blkdiscard", "-f", device], timeout=timeout)
    if res.ok:
        return "ok"
    lines = [ln.strip() for ln in res.output.splitlines() if "Operation forced" not in ln]
    said = lines[0] if lines else f"exit {res.returncode}"
    if any(text in said.lower() for text in _CANNOT_DISCARD):
        return f"unsupported: {said}"
    if "busy" in said.lower():
        held = devinfo.who_holds(kname)
        said += f" (held: {'; '.join(held) if held else 'nothing found holding it'})"
    raise TrialFailed(f"blkdiscard {device} failed: {said}", res.output)
