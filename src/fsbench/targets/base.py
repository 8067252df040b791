"""The target contract: one block device that serves every filesystem of a run.

Use as a context manager: `open()` validates and attaches, `close()` releases
everything the target made, on every path (error, Ctrl-C, SIGTERM).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Any


class Target(ABC):
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

    @abstractmethod
    def reset(self) -> None:
        """Before each mkfs: return the device to the same state (discard), so trials
        start alike whichever filesystem ran before."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Provenance: kind, path, size, backing device model, rotational, direct I/O..."""

    def __enter__(self) -> Target:
        self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
