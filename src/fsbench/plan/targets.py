"""Where a plan's trials run: one spec model per target kind, found by its `kind`.

A target kind is one spec class (a pydantic model with `kind`, its fields and the
command-line flags it takes) in the registry `KINDS` (system/plugins.py): `loop` below,
the others declared by their packages as entry points of `fsbench.targets.v1` (see
pyproject.toml), or registered by `register` (a test's toy kind); its executor is the one
of the same kind (execute/executors). The plan holds one target, validated by the class
its `kind` names; the CLI builds the target flags of every command from the classes
(cli/targetflags.py), so no kind is listed by hand anywhere else.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from fsbench.system.plugins import Registry
from fsbench.system.units import Bytes

DEFAULT_WORKDIR = Path("/var/tmp/fsbench")
DEFAULT_IMAGE_SIZE = 8 << 30
JsonDict = dict[str, JsonValue]


def flag(name: str, short: str = "") -> JsonDict:
    """A field's mark as a command-line flag (`Field(json_schema_extra=flag("kernel"))`)."""
    return {"flag": name, "short": short} if short else {"flag": name}


def flagged(name: str, default: Any, description: str, short: str = "", **limits: Any) -> Any:
    """A field of a target kind that is also one of its command-line flags (`--name`)."""
    return Field(
        default=default, description=description, json_schema_extra=flag(name, short), **limits
    )


def _marked(cls: type[BaseModel]) -> list[tuple[str, JsonDict]]:
    return [
        (name, extra)
        for name, info in cls.model_fields.items()
        if isinstance(extra := info.json_schema_extra, dict) and extra.get("flag")
    ]


class TargetSpec(BaseModel):
    """What every target kind has, and what it says of itself."""

    model_config = ConfigDict(extra="forbid")

    kind: str
    # The command-line flags it takes are its fields marked `flag(...)`: help and default
    # from the field; a flag of another kind is refused.

    # The loop image, or the VM's scratch disk.
    image_size: Bytes = flagged(
        "image-size", DEFAULT_IMAGE_SIZE, "Loop image (or VM scratch disk) size.", gt=0
    )
    workdir: Path = flagged("workdir", DEFAULT_WORKDIR, "Where images and mounts go.")

    @classmethod
    def flags(cls) -> dict[str, str]:
        """Its command-line flags, each with the field it sets: {"image-size": "image_size"}."""
        return {str(f["flag"]): name for name, f in _marked(cls)}

    @classmethod
    def short_flags(cls) -> dict[str, str]:
        """The one-letter forms of its flags: {"inventory": "-i"}."""
        return {str(f["flag"]): str(f["short"]) for _, f in _marked(cls) if f.get("short")}

    def dimensions(self) -> dict[str, list[str]]:
        """Matrix dimensions the target itself adds (the VM's kernels)."""
        return {}

    @classmethod
    def doctor(cls) -> TargetStatus | None:
        """What `fsbench doctor` says of this kind of target on this host, beyond the
        host's own checks (None: nothing)."""
        return None


class TargetStatus(BaseModel):
    """A target kind's part of `fsbench doctor`: whether it can run here, and a table."""

    title: str
    usable: bool
    reason: str = ""
    columns: list[str] = Field(default_factory=list)
    rows: list[list[str]] = Field(default_factory=list)
    facts: JsonDict = Field(default_factory=dict)  # the same, as data (`--json`)


class LoopTargetSpec(TargetSpec):
    """This host: a sparse loop image, or a real disk (`device` + `destroy_data`)."""

    kind: str = "loop"
    device: str | None = flagged(
        "device", None, "A real block device instead of a loop image (needs --destroy-data)."
    )
    destroy_data: bool = flagged("destroy-data", False, "Allow fsbench to overwrite --device.")


T = TypeVar("T", bound=type[TargetSpec])
DEFAULT_KIND = "loop"
# The target contract's version: a plugin built for another is refused.
CONTRACT = 1
KINDS: Registry[type[TargetSpec]] = Registry(
    "targets",
    "target kind",
    CONTRACT,
    ("fsbench.plan.targets:LoopTargetSpec",),
    key=lambda spec: str(spec.model_fields["kind"].default),
)


def register(cls: T) -> T:
    """Make a target kind known by its `kind` (a test's toy; a plugin is an entry point)."""
    KINDS.register(cls)
    return cls


def kinds() -> dict[str, type[TargetSpec]]:
    """Every target kind by its name (`--target NAME`), the default first."""
    return KINDS.all()


def parse(value: Any) -> Any:
    """A target as given (TOML, CLI flags, or a plan an older fsbench stored) as the spec
    of its kind: `kind` defaults to loop. Plans stored before the target had kinds carry
    every kind's fields at their defaults: those of other kinds are dropped where they
    are at a default, refused where they are set."""
    if not isinstance(value, dict):
        return value
    data = dict(value)
    known = kinds()
    kind = str(data.setdefault("kind", DEFAULT_KIND))
    spec = known.get(kind)
    if spec is None:
        raise ValueError(f"target kind {kind!r}: one of {', '.join(known)}")
    for key in [k for k in data if k not in spec.model_fields]:
        owners = [c for c in known.values() if key in c.model_fields]
        if any(data[key] == c.model_fields[key].default for c in owners):
            del data[key]
        elif owners:
            needs = " or ".join(
                f'--target {name} (kind = "{name}" in a plan)'
                for name in (c.model_fields["kind"].default for c in owners)
            )
            raise ValueError(f"{key} needs {needs}; this target is {kind}")
    return spec.model_validate(data)
