"""A directory's layout as data: each file at a fixed name in a directory its owner
holds, declared once (`console = FileIn("path", "console.log")`) instead of a property
per file that repeats `return self.path / NAME`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, overload


class FileIn:
    """`owner.<attribute>` is `owner.<directory> / name`: a path, never made or checked."""

    def __init__(self, directory: str, name: str) -> None:
        self.directory, self.name = directory, name

    @overload
    def __get__(self, owner: None, owner_type: type[Any]) -> FileIn: ...

    @overload
    def __get__(self, owner: object, owner_type: type[Any]) -> Path: ...

    def __get__(self, owner: object | None, owner_type: type[Any]) -> FileIn | Path:
        if owner is None:
            return self  # on the class: the declaration itself (its name, for a list)
        base: Path = getattr(owner, self.directory)
        return base / self.name
