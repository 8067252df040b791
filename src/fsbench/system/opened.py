"""Something made by `open()` and released by `close()` on every path (error, Ctrl-C,
SIGTERM): used as a context manager. Targets and executors are."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Opened:
    def open(self) -> None:
        """Make what is needed."""

    def close(self) -> None:
        """Release what open() made. Idempotent."""

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
