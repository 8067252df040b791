"""The search space of `fsbench tune`: many filesystem configs written compactly.

Two forms, expanded to the same configs (`FsConfig`, each with the `--fs` string that
gives it back as `spec`):

- **Braces in a `--fs` value**, as a shell expands them: each `{a,b,c}` is one dimension
  of alternatives, and a value's dimensions multiply::

      ext4:mount=data={ordered,writeback},commit={5,30,60}   -> 6 configs
      xfs:mkfs=-b size={4k,16k}                              -> 2 configs
      ext4:mount=data=ordered,{,nodelalloc}                  -> without, with

  Braces nest (`{a,b{1,2}}` is a, b1, b2). Commas outside braces are literal (mount
  options use them). An empty alternative is allowed (`{,nodelalloc}`: without, with) and
  the empty mount option it leaves (`data=ordered,`) is dropped; an empty `{}` and
  unbalanced braces are errors.

- **A `[search]` table in a plan**, one entry per filesystem: `mkfs` and `mount` are
  lists of dimensions, each dimension a list of alternatives (an empty string: the option
  left out) or one string (a fixed option). Configs are the product over all dimensions;
  mkfs parts are joined with spaces, mount parts with commas::

      [search.ext4]
      mkfs = [["-I 128", "-I 256"]]
      mount = [["data=ordered", "data=writeback"], ["commit=5", "commit=30"], ["", "nodelalloc"]]

      [search.xfs]
      mkfs = [["-b size=4096", "-b size=16384"]]
      mount = "logbsize=256k"             # one string: one fixed option

      [search.ext4-nojournal]          # a second entry of one type: name it, give its type
      type = "ext4"
      mkfs = ["-O ^has_journal", ["-I 128", "-I 256"]]

Identical configs (the same type, mkfs argv, mount string and label) are kept once, in
the order they first appear. `describe` counts the space before anything runs.

Pure: strings and tables in, configs out; errors are `FsbenchError` with one line.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from fsbench.plan.fsconfig import FsConfig, one_line, parse_fs_spec
from fsbench.system.errors import FsbenchError

# --------------------------------------------------------------------------- braces


def expand_braces(text: str) -> list[str]:
    """Every string the braces of `text` stand for, in order (duplicates kept).

    `a{b,c}d{1,2}` -> abd1, abd2, acd1, acd2. Raises FsbenchError on an unbalanced or
    empty brace, naming the column."""
    out, end = _sequence(text, 0, 0)
    if end < len(text):  # only a stray '}' stops the top level early
        raise FsbenchError(f"{text!r}: '}}' at column {end + 1} closes no '{{'")
    return out


def _sequence(text: str, pos: int, depth: int) -> tuple[list[str], int]:
    """A run of literal text and brace groups, up to a ',' or '}' that belongs to an
    enclosing group (or the end): the product of its parts."""
    results = [""]
    literal: list[str] = []
    while pos < len(text):
        ch = text[pos]
        if ch == "}" or (ch == "," and depth > 0):
            break
        if ch == "{":
            group, pos = _group(text, pos, depth + 1)
            prefix = "".join(literal)
            literal = []
            results = [r + prefix + g for r in results for g in group]
            continue
        literal.append(ch)
        pos += 1
    tail = "".join(literal)
    return [r + tail for r in results], pos


def _group(text: str, start: int, depth: int) -> tuple[list[str], int]:
    """`{alt,alt,...}` starting at `start`: the alternatives' expansions, in order, and
    the position after the closing brace."""
    if text.startswith("{}", start):
        raise FsbenchError(f"{text!r}: empty braces '{{}}' at column {start + 1}")
    alternatives: list[str] = []
    pos = start + 1
    while True:
        found, pos = _sequence(text, pos, depth)
        alternatives.extend(found)
        if pos >= len(text):
            raise FsbenchError(f"{text!r}: '{{' at column {start + 1} is never closed")
        if text[pos] == "}":
            return alternatives, pos + 1
        pos += 1  # a ',' between alternatives


# --------------------------------------------------------------------------- configs


def _clean(config: FsConfig) -> FsConfig:
    """Drop the empty mount options an empty alternative leaves (`data=ordered,`)."""
    mount = ",".join(part for part in config.mount.split(",") if part.strip())
    if mount == config.mount:
        return config
    return FsConfig(type=config.type, mkfs=config.mkfs, mount=mount, label=config.label)


def expand_fs_spec(text: str) -> list[FsConfig]:
    """The configs of one `--fs` value with braces (a value without braces gives what
    `parse_fs_spec` gives), duplicates removed."""
    configs: list[FsConfig] = []
    try:
        expansions = expand_braces(text.strip())
    except FsbenchError as exc:
        raise FsbenchError(f"--fs {exc}") from None
    for expanded in expansions:
        try:
            found = parse_fs_spec(expanded)
        except FsbenchError as exc:
            if expanded == text.strip():
                raise
            raise FsbenchError(f"--fs {text!r} expands to {expanded!r}: {exc}") from None
        configs.extend(_clean(c) for c in found)
    return _unique(configs, source=f"--fs {text!r}")


def _unique(configs: Iterable[FsConfig], source: str) -> list[FsConfig]:
    """Configs in first-seen order, each once; two different configs under one label
    (a label= beside braces) are an error: reports tell configs apart by label."""
    seen: dict[FsConfig, None] = {}
    labels: dict[str, FsConfig] = {}
    for config in configs:
        if config in seen:
            continue
        if config.label:
            other = labels.setdefault(config.label, config)
            if other != config:
                raise FsbenchError(
                    f"{source}: label {config.label!r} names more than one config "
                    f"({other.spec!r} and {config.spec!r}); drop label= or vary it too"
                )
        seen[config] = None
    return list(seen)


Dimension = str | list[str]


class SearchEntry(BaseModel):
    """One filesystem's part of a `[search]` table: dimensions of mkfs and mount options."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str = ""  # the filesystem type; empty: the entry's name
    mkfs: list[Dimension] = []
    mount: list[Dimension] = []
    label: str = ""  # a prefix for the configs' labels; empty: reports show the options

    @field_validator("mkfs", "mount", mode="before")
    @classmethod
    def _one_string(cls, value: Any) -> Any:
        # `mount = "noatime"`: one fixed option, a list of one dimension.
        return [value] if isinstance(value, str) else value


def _alternatives(dim: Dimension) -> list[str]:
    return [dim] if isinstance(dim, str) else list(dim)


def search_configs(table: Mapping[str, Any], source: str = "search") -> list[FsConfig]:
    """The configs of a plan's `[search]` table (see the module's docstring), duplicates
    removed. Raises FsbenchError on an unknown key, type or an empty dimension."""
    configs: list[FsConfig] = []
    for name, raw in table.items():
        where = f"[{source}.{name}]"
        try:
            entry = SearchEntry.model_validate(raw)
        except ValidationError as exc:
            raise FsbenchError(f"{where}: {one_line(exc)}") from None
        dims: list[list[str]] = []
        for kind, given in (("mkfs", entry.mkfs), ("mount", entry.mount)):
            for i, dim in enumerate(given):
                alts = _alternatives(dim)
                if not alts:
                    raise FsbenchError(f"{where}: {kind} dimension {i + 1} has no alternatives")
                dims.append(alts)
        n_mkfs = len(entry.mkfs)
        for choice in itertools.product(*dims):
            mkfs = " ".join(p.strip() for p in choice[:n_mkfs] if p.strip())
            mount = ",".join(p.strip() for p in choice[n_mkfs:] if p.strip())
            label = f"{entry.label} {' '.join(p for p in choice if p)}".strip()
            try:
                # A dict, so that FsConfig's validator splits the mkfs string into argv.
                config = FsConfig.model_validate(
                    {
                        "type": entry.type or name,
                        "mkfs": mkfs,
                        "mount": mount,
                        "label": label if entry.label else "",
                    }
                )
            except ValidationError as exc:
                raise FsbenchError(f"{where}: {one_line(exc)}") from None
            configs.append(_clean(config))
    return _unique(configs, source=f"[{source}]")


# --------------------------------------------------------------------------- the space


@dataclass(frozen=True)
class Space:
    """The configs a race starts with, in order, each once."""

    configs: tuple[FsConfig, ...]
    duplicates: int = 0  # identical configs given more than once, kept once

    @property
    def specs(self) -> list[str]:
        """The `--fs` value of every config."""
        return [c.spec for c in self.configs]

    def per_type(self) -> dict[str, int]:
        """Configs per filesystem type, in first-seen order."""
        counts: dict[str, int] = {}
        for config in self.configs:
            counts[config.type] = counts.get(config.type, 0) + 1
        return counts

    def __len__(self) -> int:
        return len(self.configs)


def expand_space(fs_specs: Sequence[str] = (), search: Mapping[str, Any] | None = None) -> Space:
    """The space of `--fs` values (braces expanded) and a plan's `[search]` table, in
    that order, identical configs kept once. An empty space is an error."""
    found: list[FsConfig] = []
    for spec in fs_specs:
        found.extend(expand_fs_spec(spec))
    if search:
        found.extend(search_configs(search))
    configs = _unique(found, source="the search space")
    if not configs:
        raise FsbenchError("the search space is empty: give --fs or a [search] table")
    return Space(tuple(configs), duplicates=len(found) - len(configs))


@dataclass(frozen=True)
class SpaceSummary:
    """What the space holds, printed before anything runs."""

    per_type: dict[str, int]
    total: int
    duplicates: int
    specs: list[str]

    def lines(self) -> list[str]:
        """`ext4: 6 configs`, ..., then the total (and the duplicates dropped)."""
        out = [f"{fs}: {n} config{'s' if n != 1 else ''}" for fs, n in self.per_type.items()]
        total = f"total: {self.total} config{'s' if self.total != 1 else ''}"
        if self.duplicates:
            total += f" ({self.duplicates} duplicate{'s' if self.duplicates != 1 else ''} dropped)"
        return [*out, total]


def describe(space: Space) -> SpaceSummary:
    """Count the space: configs per filesystem type and in all, with their `--fs` values."""
    return SpaceSummary(space.per_type(), len(space), space.duplicates, space.specs)
