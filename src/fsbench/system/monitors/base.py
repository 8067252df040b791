"""The monitor contract: what runs beside a trial's timed phase and says what the machine
did meanwhile.

A monitor is `class Name(Monitor)`: its `name`, a `summary`, what it `needs` (tools with
their Debian package, root, tracefs), and its `role`: a plain **monitor** runs beside every
counted trial (the 10 Hz sampler); a **tracer** runs only in an instrumented pass, never
beside a counted trial (its overhead would be in the counted values; DESIGN: measurement
rules). The runner makes a fresh instance per trial step and calls, in order:

- `attach(site)`: the trial's device and the disk under it, the mountpoint, the workload's
  cgroup when there is one, a directory for artefact files. Before the caches are
  settled: a tracer starts its child process here (slow to start, so outside the clock).
- `start()` just before the timed phase, `stop()` just after it (and on every way out
  of it);
- `output(metrics)` once it stopped, given the workload's metrics: what it yields
  (`Output`: a timeline of samples, derived metrics, facts, artefact files, and a
  tracer's maps: folded stacks, histograms);
- `detach()` on every path, also when the workload raised, the trial timed out or the run
  was interrupted: a child process is killed and reaped here (`Child` does it).
"""

from __future__ import annotations

import os
import signal
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import IO, Any, ClassVar

from fsbench.system import memcap, proc, stepgroup
from fsbench.system.metric import Folded, Metric
from fsbench.system.proc import Tool

TRACEFS = Path("/sys/kernel/tracing")


class Role(StrEnum):
    MONITOR = "monitor"  # beside every counted trial
    TRACER = "tracer"  # only in an instrumented pass


@dataclass(frozen=True)
class Needs:
    """What a monitor needs of the machine it runs on."""

    tools: tuple[Tool, ...] = ()
    root: bool = False
    tracefs: bool = False  # the kernel's tracing filesystem (tracepoints)

    def missing(self, filesystems: Path = Path("/proc/filesystems")) -> str | None:
        """Why this machine cannot run it (one line, with what to install), or None."""
        if self.root and os.geteuid() != 0:
            return "needs root"
        if self.tracefs and "tracefs" not in filesystems.read_text().split():
            return "this kernel has no tracefs (CONFIG_TRACING)"
        return proc.missing_tools(self.tools)


@dataclass(frozen=True)
class Site:
    """The trial a monitor attaches to."""

    device: str  # the block device the timed phase runs on (/dev/loop3, /dev/vdb)
    backing: str | None = None  # the disk under it (a loop image's disk); None: itself
    mountpoint: Path | None = None  # None on the bare device (`raw`)
    # The workload's own cgroup (v2), when it has one: an instrumented step's (stepgroup),
    # or the mem knob's where that is a v2 group.
    cgroup: Path | None = None
    directory: Path | None = None  # where artefact files of this trial go

    def artefact(self, monitor: str, name: str) -> Path:
        """A file of `monitor`'s in this trial's directory (made when first asked for)."""
        if self.directory is None:
            raise ValueError("this trial keeps no artefact files")
        where = self.directory / monitor
        where.mkdir(parents=True, exist_ok=True)
        return where / name


@dataclass
class Output:
    """What a monitor yields after the timed phase."""

    # The timeline (schema.SAMPLE_FIELDS each: the samples table and the report's charts).
    samples: list[dict[str, float]] = field(default_factory=list)
    metrics: list[Metric] = field(default_factory=list)  # stored with the workload's
    facts: dict[str, Any] = field(default_factory=dict)  # the trial's provenance `monitors`
    artefacts: list[Path] = field(default_factory=list)  # files in the trial's directory
    # A tracer's maps (folded stacks, histograms), stored with the trial in their table.
    folded: list[Folded] = field(default_factory=list)


class Monitor(ABC):
    name: ClassVar[str]
    summary: ClassVar[str]
    role: ClassVar[Role] = Role.MONITOR
    needs: ClassVar[Needs] = Needs()

    def __init__(self) -> None:
        self.site: Site | None = None

    @classmethod
    def missing(cls) -> str | None:
        return cls.needs.missing()

    def attach(self, site: Site) -> None:
        """Take the trial's site; a tracer starts its child process here."""
        self.site = site

    @abstractmethod
    def start(self) -> None:
        """Just before the timed phase."""

    @abstractmethod
    def stop(self) -> None:
        """Just after the timed phase, also when it raised."""

    def output(self, metrics: Sequence[Metric]) -> Output:
        """What it yields, once stopped; `metrics` are the trial's so far (the workload's,
        and the runner's `seconds`), for metrics derived from them."""
        return Output()

    def detach(self) -> None:  # noqa: B027 - optional hook
        """Release what attach made, on every path; called once, also when attach itself
        failed half way (release what was made, no more)."""


_die = proc.die_with_parent(signal.SIGKILL)


def _apart() -> None:
    """In a tracer's child before it execs: dies with fsbench, and is outside the step's
    cgroups (its threads are not the workload's)."""
    _die()
    memcap.leave()
    stepgroup.leave()


class Child:
    """A tracer's child process (bpftrace, perf): in a session of its own, outside the
    workload's cgroups, killed if fsbench itself dies (PR_SET_PDEATHSIG), and on `close`
    killed with everything it forked and reaped, whatever happened before."""

    def __init__(self, argv: Sequence[str], out: IO[bytes] | int = subprocess.DEVNULL) -> None:
        self.argv = tuple(argv)
        self.process = proc.spawn(self.argv, stdout=out, stderr=out, preexec_fn=_apart)
        self._reaped = False

    @property
    def pid(self) -> int:
        return self.process.pid

    def interrupt(self, sig: int = signal.SIGINT, grace: float = 10.0) -> int | None:
        """Ask it to finish (bpftrace prints its maps on SIGINT); its exit code, or None
        if it is still running after `grace` seconds (close kills it)."""
        if self.process.poll() is None:  # not reaped: its pid is still its own
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                pass
            return self.wait(grace)
        return self.process.returncode

    def wait(self, timeout: float) -> int | None:
        """Its exit code, or None if it still runs after `timeout` seconds."""
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def close(self) -> None:
        """Killed with its whole group (what it forked may outlive it) and reaped: no
        process and no zombie left. Idempotent: once reaped, its pid may be another's."""
        if not self._reaped:
            proc.kill_group(self.process)
            self._reaped = True
