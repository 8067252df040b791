"""A filesystem configuration: a type of the catalogue, its mkfs and mount options and a
label, as plans, `--fs` flags and search spaces give it (model.py and space.py both build
on it)."""

from __future__ import annotations

import re
import shlex
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from fsbench.system import filesystems
from fsbench.system.errors import FsbenchError


class FsConfig(BaseModel):
    """One filesystem configuration: type + mkfs options + mount options (+ a label)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str
    mkfs: tuple[str, ...] = ()
    mount: str = ""
    label: str = ""

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        try:
            filesystems.get(value)
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None
        return value

    @field_validator("mkfs", mode="before")
    @classmethod
    def _split_mkfs(cls, value: Any) -> Any:
        # A string is split like a shell would split it: into argv, never run by a shell.
        if isinstance(value, str):
            try:
                return tuple(shlex.split(value))
            except ValueError as exc:
                raise ValueError(f"mkfs options {value!r}: {exc}") from None
        return value

    @property
    def display(self) -> str:
        """The label reports use: the given one, or type + options."""
        if self.label:
            return self.label
        parts = [self.type]
        if self.mkfs:
            # Quote only what needs it for reading: `-O ^flex_bg` stays as people write it.
            parts.append(" ".join(shlex.quote(a) if " " in a else a for a in self.mkfs))
        if self.mount:
            parts.append(self.mount)
        return " ".join(parts)

    @property
    def spec(self) -> str:
        """The `--fs` value that gives this config back (parse_fs_spec's inverse)."""
        parts = [self.type]
        if self.mkfs:
            parts.append("mkfs=" + shlex.join(self.mkfs))
        if self.mount:
            parts.append("mount=" + self.mount)
        if self.label:
            parts.append("label=" + self.label)
        return ":".join(parts)


def one_line(exc: ValidationError) -> str:
    """First validation error as `where: what`, for a one-line CLI message."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    if where in ("type", "name"):  # the message names the thing already
        where = ""
    msg = str(err["msg"]).removeprefix("Value error, ")
    extra = f" ({len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    return f"{where}: {msg}{extra}" if where else f"{msg}{extra}"


_SPEC_KEYS = ("mkfs", "mount", "label")


def parse_fs_spec(text: str) -> list[FsConfig]:
    """`ext4,xfs` -> two configs; `ext4:mkfs=-I 256:mount=data=writeback,nodelalloc` -> one.

    A comma separates configs only when the spec has no `:` (mount options use commas).
    """
    text = text.strip()
    if not text:
        raise FsbenchError("empty --fs value")
    try:
        if ":" not in text:
            return [FsConfig(type=t.strip()) for t in text.split(",") if t.strip()]
        head, *rest = re.split(":(?=(?:" + "|".join(_SPEC_KEYS) + ")=)", text)
        fields: dict[str, Any] = {"type": head.strip()}
        for part in rest:
            key, _, value = part.partition("=")
            if key in fields:
                raise FsbenchError(f"--fs {text!r}: {key}= given twice")
            fields[key] = value
        if ":" in fields["type"]:
            raise FsbenchError(
                f"--fs {text!r}: expected TYPE[:mkfs=OPTS][:mount=OPTS][:label=NAME]"
            )
        return [FsConfig(**fields)]
    except ValidationError as exc:
        raise FsbenchError(f"--fs {text!r}: {one_line(exc)}") from None
