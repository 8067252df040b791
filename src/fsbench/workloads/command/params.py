"""The `command` workload's parameters: the user's own command as argv (or a shell line
only when written as one), its setup, environment, working directory, cache state, flush
and the metrics parsed from its output; all checked when the plan is read."""

from __future__ import annotations

import posixpath
import re
import shlex
import tomllib
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from fsbench.workloads.base import CacheState, Flush, Params
from fsbench.workloads.metric import Better

# Words that mean something only to a shell: given alone in a `run` written as one line,
# they say the user expected a shell (`make > log`), and run= starts none.
SHELL_OPERATORS = frozenset({"|", "||", "&&", ">", ">>", "<", "<<", "2>", "2>&1", "&>", "&"})
# Metrics every command trial reports already (the runner's, the sampler's, this
# workload's own): a parsed metric may not take their names.
RESERVED = frozenset(
    {
        "seconds",
        "flush_seconds",
        "command_user_s",
        "command_sys_s",
        "cpu_user_s",
        "cpu_sys_s",
        "device_read_bytes",
        "device_write_bytes",
        "device_util_pct",
        "write_amplification",
    }
)
METRIC_NAME = re.compile(r"[a-z][a-z0-9_]*")


def toml_value(text: str) -> Any:
    """A value written on the command line as a plan file writes it (`["make", "-j2"]`,
    `{ name = "tps", ... }`)."""
    try:
        return tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{text!r}: not a TOML value ({exc})") from None


def words(value: Any) -> Any:
    """A command line given as one string, as argv: a list as a plan writes it
    (`["make", "-j2"]`), else the words a shell would split it into (shlex), with no shell
    run: no pipes, redirections, variables or globs. A list is argv already."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.startswith("["):
        return toml_value(text)
    try:
        split = shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"{text!r}: {exc}") from None
    operator = next((w for w in split if w in SHELL_OPERATORS), None)
    if operator is not None:
        raise ValueError(
            f"{operator!r} is shell syntax, and a command given as words runs no shell: "
            'write it as shell = "..." to run a shell line'
        )
    return split


Argv = Annotated[tuple[str, ...], BeforeValidator(words)]


class MetricPattern(BaseModel):
    """A metric read from the command's output: `{ name = "tps", pattern = "tps = ([0-9.]+)",
    unit = "tx/s", better = "higher" }`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="the metric's name in reports")
    pattern: str = Field(description="a regular expression with one group: the number")
    unit: str = Field(default="", description="its unit, shown beside the value")
    better: Better = Field(description="higher or lower: which direction is better")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not METRIC_NAME.fullmatch(value):
            raise ValueError(f"metric name {value!r}: lower case letters, digits and _")
        if value in RESERVED or value.startswith("steady_"):
            raise ValueError(f"metric name {value!r} is one every command trial reports")
        return value

    @field_validator("pattern")
    @classmethod
    def _one_group(cls, value: str) -> str:
        try:
            groups = re.compile(value, re.MULTILINE).groups
        except re.error as exc:
            raise ValueError(f"pattern {value!r}: {exc}") from None
        if groups != 1:
            raise ValueError(
                f"pattern {value!r} has {groups} groups: one, around the number "
                "(write (?:...) for the others)"
            )
        return value


def _patterns(value: Any) -> Any:
    """One table or a list of them; on the command line, as a plan file writes them."""
    if isinstance(value, str):
        value = toml_value(value.strip())
    return [value] if isinstance(value, dict) else value


class CommandParams(Params):
    run: Argv | None = Field(
        default=None,
        description="the timed command as argv (a list; a string is split into words as a "
        "shell would, but no shell runs)",
    )
    shell: str | None = Field(
        default=None, description="the timed command as a shell line (sh -c), instead of run"
    )
    setup: Argv | None = Field(
        default=None,
        description="untimed, before the cache is settled, at the filesystem's root: clone a "
        "repository, unpack a tarball (argv, like run)",
    )
    setup_shell: str | None = Field(
        default=None, description="the setup as a shell line (sh -c), instead of setup"
    )
    cwd: str = Field(
        default=".",
        description="where the command runs, relative to the filesystem's root (the setup "
        "runs at the root)",
    )
    env: dict[str, str] = Field(
        default={},
        description="variables added to the clean environment (PATH, HOME, LANG)",
    )
    cache: CacheState = Field(
        default=CacheState.COLD,
        description="the page cache when the command starts: cold (sync + drop caches after "
        "setup), cold-remount (umount and mount too), warm (what setup left)",
    )
    flush: Flush = Field(
        default=Flush.SYNC,
        description="timed after the command: sync (of the filesystem: buffered writes are "
        "paid for), sync+umount, or none",
    )
    metric: Annotated[tuple[MetricPattern, ...], BeforeValidator(_patterns)] = Field(
        default=(),
        description="metrics parsed from its output (the last match; stdout, then stderr): "
        "{ name, pattern with one group, unit, better = higher|lower }",
    )

    @field_validator("run", "setup")
    @classmethod
    def _argv(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is not None and (not value or not value[0]):
            raise ValueError("an empty command")
        return value

    @field_validator("cwd")
    @classmethod
    def _inside(cls, value: str) -> str:
        if value.startswith("/"):
            raise ValueError(f"{value!r}: a directory of the filesystem under test, relative")
        if posixpath.normpath(value).split("/")[0] == "..":
            raise ValueError(f"{value!r} leaves the filesystem under test")
        return value

    @field_validator("env")
    @classmethod
    def _names(cls, value: dict[str, str]) -> dict[str, str]:
        bad = next((k for k in value if not k or "=" in k or "\0" in k), None)
        if bad is not None:
            raise ValueError(f"variable name {bad!r}")
        return value

    @model_validator(mode="after")
    def _one_each(self) -> CommandParams:
        if (self.run is None) == (self.shell is None):
            raise ValueError(
                "run and shell both given: one of them"
                if self.run is not None
                else 'give the command: run = [argv...] or shell = "a shell line"'
            )
        if self.setup is not None and self.setup_shell is not None:
            raise ValueError("setup and setup_shell both given: one of them")
        names = [m.name for m in self.metric]
        twice = next((n for n in names if names.count(n) > 1), None)
        if twice is not None:
            raise ValueError(f"metric {twice!r} given twice")
        return self
