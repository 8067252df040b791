"""The `fsbench` command: one module per subcommand, no logic here."""

from __future__ import annotations

import sys
from types import ModuleType

import typer

from fsbench.system.errors import FsbenchError
from fsbench.system.plugins import Registry

app = typer.Typer(
    name="fsbench",
    help="Compare filesystems and their mkfs/mount options with real workloads, done right.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


# The command contract's version: a plugin built for another is refused.
CONTRACT = 1
# The commands: modules with `register(app)` and their place in `--help` (`RANK`): these
# the built-ins, plugins entry points of `fsbench.commands.v1` (system/plugins.py).
COMMANDS: Registry[ModuleType] = Registry(
    "commands",
    "command",
    CONTRACT,
    (
        "fsbench.cli.bisect",
        "fsbench.cli.calibrate",
        "fsbench.cli.compare",
        "fsbench.cli.doctor",
        "fsbench.cli.explain",
        "fsbench.cli.features",
        "fsbench.cli.fleet",
        "fsbench.cli.history",
        "fsbench.cli.listing",
        "fsbench.cli.merge",
        "fsbench.cli.record",
        "fsbench.cli.report",
        "fsbench.cli.resume",
        "fsbench.cli.run",
        "fsbench.cli.tune",
    ),
    key=lambda module: module.__name__.rsplit(".", 1)[-1],
)


def _register_commands() -> None:
    """Every command module registers itself, in the order of its RANK."""
    for module in sorted(COMMANDS.all().values(), key=lambda m: getattr(m, "RANK", 1000)):
        module.register(app)


_register_commands()


def main() -> None:
    try:
        # Not standalone: click's usage errors (an option's value of the wrong type, one
        # missing) come here, to be said in one line like fsbench's own.
        code = app(standalone_mode=False)
    except FsbenchError as exc:
        # One line, never wrapped: scripts and people grep it.
        sys.stderr.write(f"fsbench: error: {exc}\n")
        sys.exit(2)
    except KeyboardInterrupt:
        sys.stderr.write("fsbench: interrupted\n")
        sys.exit(130)
    except typer.Abort:
        sys.stderr.write("fsbench: aborted\n")
        sys.exit(1)
    except typer.TyperException as exc:
        usage_error(exc)
    sys.exit(code if isinstance(code, int) and not isinstance(code, bool) else 0)


def usage_error(exc: typer.TyperException) -> None:
    """A usage error of click's in one line, with where to find help; `fsbench` alone
    (no_args_is_help) still shows the help."""
    show = getattr(exc, "show", None)
    message = str(exc.format_message() if hasattr(exc, "format_message") else exc).strip()
    if "\n" in message and callable(show):
        show()
    if "\n" in message or not message:  # the help, shown already
        sys.exit(getattr(exc, "exit_code", 2))
    ctx = getattr(exc, "ctx", None)
    hint = f" (see {ctx.command_path} --help)" if ctx is not None else ""
    sys.stderr.write(f"fsbench: error: {message}{hint}\n")
    sys.exit(getattr(exc, "exit_code", 2))
