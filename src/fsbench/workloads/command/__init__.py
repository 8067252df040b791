"""command: the user's own command, timed in the filesystem under test like every other
workload. An optional setup (untimed: clone a repository, unpack a tarball), the cache
settled as the plan says, then the command, and the sync the plan says inside the time.

The command runs as given: argv with no shell, unless the plan writes a shell line itself
(`shell = "..."`); in a clean environment (PATH, HOME: a fresh empty directory outside the
target, LANG) plus the plan's `env`; in `cwd` under the mount point; standard input empty.
All of its processes are held in a group (system/contained.py) and whatever is left when
it ends, or when the trial is cut short, is killed. A command that fails (exit status,
signal, the trial's time limit) is a failed trial with the tails of its output; metrics
parsed from its output that do not match fail it too, naming the metric."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Collection
from pathlib import Path
from typing import IO

from fsbench.system.contained import Contained, Ended
from fsbench.system.errors import TrialFailed, TrialTimeout
from fsbench.workloads._tools import tail
from fsbench.workloads.base import CacheState, Flush, Scale, TrialContext, Workload
from fsbench.workloads.command.params import CommandParams, MetricPattern
from fsbench.workloads.metric import Better, Metric

# What the command finds in its environment before the plan's `env`.
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
LANG = "C.UTF-8"
SHELL = "/bin/sh"
TAIL_LINES = 20  # of stdout and of stderr, in a failed trial's detail


def argv_of(argv: tuple[str, ...] | None, shell: str | None) -> list[str] | None:
    """What is executed: argv as given, or the shell line the user wrote, by sh -c."""
    if argv is not None:
        return list(argv)
    return [SHELL, "-c", shell] if shell is not None else None


def path_of(params: CommandParams) -> str:
    return params.env.get("PATH", PATH)


def not_found(argv: list[str], path: str) -> str | None:
    """Why argv[0] cannot be executed here, or None. A relative path with a slash is made
    by the setup, perhaps: it is looked for when the command starts."""
    program = argv[0]
    if "/" in program:
        if program.startswith("/") and not os.access(program, os.X_OK):
            return f"{program}: no such executable"
        return None
    if shutil.which(program, path=path) is None:
        return f"{program}: command not found (PATH={path})"
    return None


class Command(Workload[CommandParams]):
    name = "command"
    summary = "your own command (argv, or a shell line), timed in the filesystem under test"
    # Nothing to size by scale: the command is the user's. `run` or `shell` is required.
    scale_defaults = {Scale.TINY: {}, Scale.QUICK: {}, Scale.FULL: {}}
    required_example = {"run": ["make", "-j2"]}
    headline = ("seconds",)

    def __init__(self) -> None:
        self._scratch: Path | None = None  # outside the target: HOME, the output files

    def cache_for(self, params: CommandParams) -> CacheState:
        return params.cache

    def flush_for(self, params: CommandParams) -> Flush:
        return params.flush

    @classmethod
    def headline_for(cls, params: CommandParams, reported: Collection[str]) -> tuple[str, ...]:
        """The metrics the plan parses first (what the user asked to see), then the time."""
        wanted = [m.name for m in params.metric] + list(cls.headline)
        return tuple(name for name in wanted if name in reported)

    def threads(self, params: CommandParams) -> int:
        return os.cpu_count() or 1  # a command may keep every CPU busy (make -j)

    def refuses(self, params: CommandParams) -> str | None:
        for what, argv in (
            ("setup", argv_of(params.setup, params.setup_shell)),
            ("run", argv_of(params.run, params.shell)),
        ):
            why = not_found(argv, path_of(params)) if argv else None
            if why:
                return f"{what}: {why}"
        return None

    def prepare(self, ctx: TrialContext, params: CommandParams) -> None:
        self._scratch = Path(tempfile.mkdtemp(prefix="command-", dir=ctx.run_dir))
        (self._scratch / "home").mkdir()
        setup = argv_of(params.setup, params.setup_shell)
        if setup is not None:
            ended, out = self._execute(ctx, params, setup, "setup", ctx.mountpoint)
            if not ended.ok:
                raise _failed("setup", setup, ended, out)

    def run(self, ctx: TrialContext, params: CommandParams) -> list[Metric]:
        argv = argv_of(params.run, params.shell)
        assert argv is not None, "the model requires run or shell"
        ended, out = self._execute(ctx, params, argv, "run", _cwd(ctx.mountpoint, params.cwd))
        ctx.facts["command"] = {
            "argv": argv,
            "cwd": params.cwd,
            "status": ended.status,
            "held_by": ended.held_by,
            "left_running": ended.left,
        }
        if not ended.ok:
            raise _failed("command", argv, ended, out)
        metrics = [
            Metric("command_user_s", ended.user_s, "s", Better.LOWER),
            Metric("command_sys_s", ended.sys_s, "s", Better.LOWER),
        ]
        return metrics + [parsed(m, out, argv) for m in params.metric]

    def release(self, ctx: TrialContext, params: CommandParams) -> None:
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def _execute(
        self, ctx: TrialContext, params: CommandParams, argv: list[str], what: str, cwd: Path
    ) -> tuple[Ended, tuple[str, str]]:
        """Run argv held in its group; its status and its output (stdout, stderr). The
        trial's time limit, or Ctrl-C, kills it whole and says what it had printed."""
        assert self._scratch is not None, "prepare makes the scratch directory"
        env = {"PATH": PATH, "HOME": str(self._scratch / "home"), "LANG": LANG, **params.env}
        paths = (self._scratch / f"{what}.out", self._scratch / f"{what}.err")
        with paths[0].open("w+b") as stdout, paths[1].open("w+b") as stderr:
            try:
                with Contained(argv, cwd=cwd, env=env, stdout=stdout, stderr=stderr) as child:
                    ended = child.wait()
            except TrialTimeout as exc:  # killed whole on the way out: say what it printed
                said = _detail(argv, exc.message, _read(stdout, stderr))
                raise TrialTimeout(exc.message, said) from None
            except (FileNotFoundError, PermissionError) as exc:  # made by setup, or not
                message = f"{what}: {argv[0]}: {exc.strerror}"
                raise TrialFailed(message, _detail(argv, "", ("", ""))) from None
            return ended, _read(stdout, stderr)


def _cwd(mountpoint: Path, cwd: str) -> Path:
    """The command's directory: inside the filesystem under test, after symbolic links too
    (the setup may have made one)."""
    where = (mountpoint / cwd).resolve()
    if not where.is_relative_to(mountpoint.resolve()):
        raise TrialFailed(f"cwd {cwd}: leaves the filesystem under test (to {where})")
    if not where.is_dir():
        raise TrialFailed(f"cwd {cwd}: no such directory in the filesystem under test")
    return where


def _read(*files: IO[bytes]) -> tuple[str, str]:
    texts = []
    for f in files:
        f.flush()
        f.seek(0)
        texts.append(f.read().decode("utf-8", "replace"))
    return texts[0], texts[1]


def _detail(argv: list[str], said: str, out: tuple[str, str]) -> str:
    parts = [f"$ {' '.join(argv)}", *([said] if said else [])]
    for name, text in (("stderr", out[1]), ("stdout", out[0])):
        if text.strip():
            parts += [f"--- {name} (last {TAIL_LINES} lines)", tail(text, TAIL_LINES)]
    return "\n".join(parts)


def _failed(what: str, argv: list[str], ended: Ended, out: tuple[str, str]) -> TrialFailed:
    """`command: exit status 2: make: *** [all] Error 1`: the status, and the last line it
    printed (stderr first)."""
    last = next((t.strip().splitlines()[-1] for t in (out[1], out[0]) if t.strip()), "")
    message = f"{what}: {ended.said()}" + (f": {last}" if last else "")
    return TrialFailed(message, _detail(argv, ended.said(), out))


def parsed(metric: MetricPattern, out: tuple[str, str], argv: list[str]) -> Metric:
    """The metric's value: the pattern's last match in stdout, else in stderr."""
    for text in out:
        matches = list(re.finditer(metric.pattern, text, re.MULTILINE))
        if matches:
            found = matches[-1].group(1)
            try:
                value = float(found)
            except (TypeError, ValueError):
                raise TrialFailed(
                    f"metric {metric.name}: {metric.pattern!r} matched {found!r}, not a number",
                    _detail(argv, "", out),
                ) from None
            return Metric(metric.name, value, metric.unit, metric.better)
    raise TrialFailed(
        f"metric {metric.name}: {metric.pattern!r} matched nothing the command printed",
        _detail(argv, "", out),
    )
