"""The target flags of the commands that run a plan, made from the target kinds' spec
models (plan/targets.py): each kind says which flags it takes and which field each sets;
a flag's help and default are the field's. No kind is named here."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BeforeValidator
from pydantic.fields import FieldInfo

from fsbench.plan import targets

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class TargetFlag:
    flag: str  # on the command line, without its dashes: "image-size"
    field: str  # the field it sets in the spec of the kinds that take it
    kinds: tuple[str, ...]
    help: str
    type: type  # as the command line takes it (a size written 8G is text, parsed later)
    short: tuple[str, ...] = ()

    @property
    def is_bool(self) -> bool:
        return self.type is bool

    @property
    def param(self) -> str:
        """The name it has among a command's arguments."""
        return self.flag.replace("-", "_")


def all_flags(only: str | None = None) -> list[TargetFlag]:
    """Every target flag of every kind (or of the kind `only`), first seen first."""
    found: dict[str, TargetFlag] = {}
    for kind, spec in targets.kinds().items():
        if only is not None and kind != only:
            continue
        for flag, name in spec.flags().items():
            info = spec.model_fields[name]
            seen = found.get(flag)
            if seen is not None:
                found[flag] = replace(seen, kinds=(*seen.kinds, kind))
                continue
            default = info.default
            shown = f" \\[default: {default}]" if default not in (None, False, {}, []) else ""
            if name == "image_size" and isinstance(default, int):
                shown = f" \\[default: {default >> 30}G]" if default % (1 << 30) == 0 else shown
            shorts = spec.short_flags()
            short = (shorts[flag],) if flag in shorts else ()
            found[flag] = TargetFlag(
                flag,
                name,
                (kind,),
                (info.description or "") + shown,
                _cli_type(info),
                short,
            )
    return list(found.values())


def only_of(kind: str) -> list[TargetFlag]:
    """The flags that kind `kind` takes and no other kind does."""
    return [f for f in all_flags() if f.kinds == (kind,)]


def _cli_type(info: FieldInfo) -> type:
    """The type the command line parses a field's flag as: its own where typer knows it
    and nothing parses it first (a size such as 8G goes to the model as text)."""
    parsed_first = any(isinstance(m, BeforeValidator) for m in info.metadata)
    kind = info.annotation
    if kind in (bool, int, float, Path) and not parsed_first and isinstance(kind, type):
        return kind
    return str


def kind_help() -> str:
    kinds = targets.kinds()
    described = "; ".join(
        f"{name}: {(spec.__doc__ or '').strip().splitlines()[0]}" for name, spec in kinds.items()
    )
    return f"Where the trials run ({described})"


TargetOpt = Annotated[str | None, typer.Option("--target", help=kind_help())]


def with_params(func: F, first: list[inspect.Parameter], last: list[inspect.Parameter]) -> F:
    """`func`, whose `**kwargs` take them, as typer sees it: with `first` before its own
    parameters and `last` after them (its keyword-only ones stay at the end)."""
    signature = inspect.signature(func, eval_str=True)
    own = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    names = {p.name for p in own}
    positional = [p for p in own if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    keyword = [p for p in own if p.kind is inspect.Parameter.KEYWORD_ONLY]
    first = [p for p in first if p.name not in names]
    last = [p for p in last if p.name not in names]
    func.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*first, *positional, *last, *keyword]
    )
    return func


def with_target_flags(only: str | None = None) -> Callable[[F], F]:
    """A command that takes `**kwargs`, given the target flags as options of its own
    (after its parameters, as the help lists them)."""

    def decorate(func: F) -> F:
        added = [
            inspect.Parameter(
                f.param,
                inspect.Parameter.KEYWORD_ONLY,
                default=False if f.is_bool else None,
                annotation=Annotated[
                    bool if f.is_bool else f.type | None,
                    typer.Option(f"--{f.flag}", *f.short, help=f.help, show_default=False),
                ],
            )
            for f in all_flags(only)
        ]
        return with_params(func, [], added)

    return decorate


def given(arguments: dict[str, Any]) -> dict[str, Any]:
    """The target flags among a command's arguments that were given, by flag name."""
    out: dict[str, Any] = {}
    for f in all_flags():
        value = arguments.get(f.param)
        if value is not None and value is not False:
            out[f.flag] = value
    return out
