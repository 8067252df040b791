"""The workload contract: a name, a parameter model with defaults per scale, the
tools it needs, an untimed prepare, a timed run, and an optional untimed inspect.

A workload is `class Name(Workload[NameParams])`: the generic argument is its parameter
model (`params_model`), and every hook receives the validated model of that type.

The runner owns the clock: it times `run` plus the flush the workload asks for (sync, or
sync + umount) that puts the data on disk. A workload only does its work and reports
metrics; the runner's own checks (cold reads, CPU-bound, short) read what the workload
declares (`expected_read_bytes`, `threads`); its own validity checks (`check`) and
after-the-fact measurements (`inspect`) are separate hooks.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping
from enum import StrEnum
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, ClassVar, Generic, Protocol, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict

# Re-exported for the modules that take every workload noun from here (plans, runner).
from fsbench.system.proc import Tool as Tool
from fsbench.system.proc import missing_tools
from fsbench.system.units import Bytes as Bytes
from fsbench.workloads.metric import Better as Better
from fsbench.workloads.metric import Metric as Metric
from fsbench.workloads.metric import Rate


class Scale(StrEnum):
    TINY = "tiny"  # seconds: tests
    QUICK = "quick"  # minutes
    FULL = "full"  # the original comparison's sizes


class Flush(StrEnum):
    """What the runner does after `run`, inside the timing: data counts as written only
    once it is on disk."""

    NONE = "none"  # the workload flushes itself, or only reads
    SYNC = "sync"  # syncfs of the filesystem
    SYNC_UMOUNT = "sync+umount"  # syncfs then umount: nothing left in flight at all


class CacheState(StrEnum):
    WARM = "warm"  # whatever prepare left in the page cache
    COLD = "cold"  # sync + drop_caches before the timed phase
    COLD_REMOUNT = "cold-remount"  # umount + mount + drop_caches: nothing cached at all


class Params(BaseModel):
    """Base of every workload's parameter model: unknown names are errors. Every field
    says what it means (`Field(description=...)`): `fsbench list workloads`, the stored
    run facts and the README read it from here."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def whole_values(cls) -> frozenset[str]:
        """The parameters whose one value is itself a list (a command's argv, its metric
        patterns): a list given for them in a plan is that value, never a sweep."""
        return frozenset(n for n, f in cls.model_fields.items() if _is_list(f.annotation))


def _is_list(annotation: Any) -> bool:
    """A list or tuple type, also optional (`X | None`) or annotated."""
    origin = get_origin(annotation)
    if origin in (list, tuple):
        return True
    if origin is Annotated:
        return _is_list(get_args(annotation)[0])
    return origin in (Union, UnionType) and any(_is_list(a) for a in get_args(annotation))


P = TypeVar("P", bound=Params)


class TrialContext(Protocol):
    """What the runner gives a workload during one trial."""

    @property
    def mountpoint(self) -> Path: ...

    @property
    def device(self) -> str: ...

    @property
    def fs_type(self) -> str: ...

    @property
    def cache_dir(self) -> Path:
        """A directory outside the target for inputs kept across trials (source trees)."""

    @property
    def scale(self) -> Scale: ...

    def sync(self) -> None: ...

    def drop_caches(self) -> None: ...

    def remount(self) -> None:
        """umount + mount with the same options: nothing of the filesystem stays cached."""

    def umount(self) -> None: ...

    def mount(self) -> object: ...

    def flag(self, name: str, detail: str) -> None:
        """Mark the trial with a validity flag (e.g. `not-cold`): kept with the result."""

    @property
    def age(self) -> str:
        """The cell's age knob: `none`, or a recipe and its parameters."""

    @property
    def facts(self) -> dict[str, Any]:
        """What the trial records beside its metrics (provenance), this step's."""

    def fresh_twin(self) -> TrialContext:
        """A fresh mkfs of this config on a second device like the target, mounted."""

    def series(self, name: str, unit: str, better: str, t: list[float], v: list[float]) -> None:
        """Keep a per-second series of the timed phase with the trial (drawn over time)."""

    @property
    def run_dir(self) -> Path:
        """The run's own directory outside the target: a server's socket, crash notes."""

    @property
    def mem_bytes(self) -> int:
        """The memory the workload may use (the `mem` knob's cap, else the machine's): what
        `scale_to_mem` sizes a working set against."""


class Workload(ABC, Generic[P]):
    name: ClassVar[str]
    summary: ClassVar[str]
    # The generic argument: `class Fio(Workload[FioParams])` sets it (__init_subclass__).
    params_model: ClassVar[type[Params]]
    # Parameter values per scale; a list value is a sweep (one cell per element).
    scale_defaults: ClassVar[Mapping[Scale, Mapping[str, Any]]]
    # Parameters that name files of the machine that starts the run (the replay's trace):
    # a place that runs trials elsewhere (a VM guest, many hosts) carries each file
    # there; `refuses` checks them on the machine that has them.
    input_params: ClassVar[tuple[str, ...]] = ()
    # Parameters no default fits, that every plan gives (the command's own `run`), each
    # with an example value: with them, every scale's defaults validate.
    required_example: ClassVar[Mapping[str, Any]] = {}
    tools: ClassVar[tuple[Tool, ...]] = ()
    cache: ClassVar[CacheState] = CacheState.COLD
    flush: ClassVar[Flush] = Flush.SYNC_UMOUNT
    needs_filesystem: ClassVar[bool] = True
    # False for workloads that act on the unmounted device (fsck): the runner unmounts
    # before `run` and mounts again for whatever comes next.
    needs_mount: ClassVar[bool] = True
    # Metrics the terminal table shows, most telling first; every metric is stored and in
    # md/csv/json. `headline_for` narrows them to what one trial's parameters report.
    headline: ClassVar[tuple[str, ...]] = ("seconds",)
    # Metrics derived per second of the timed phase (metric.Rate): `derive` gives them.
    rates: ClassVar[tuple[Rate, ...]] = ()
    # Measured by the VM target itself (a whole guest booting), never by the runner: the
    # VM target knows which of its functions measures it.
    vm_only: ClassVar[bool] = False
    # False: its groups get no warm-up round (each trial starts from fresh guests anyway).
    warms: ClassVar[bool] = True
    # Repetitions of an ad-hoc run (`--workload NAME` without --reps); None: the plan's.
    default_reps: ClassVar[int | None] = None
    # Ages the filesystem itself, in stages, by the cell's `age` (the runner does not age
    # it first); the age of an ad-hoc run when none is given.
    ages_itself: ClassVar[bool] = False
    default_age: ClassVar[str | None] = None
    # The per-second throughput series (recorded with ctx.series) whose steady state
    # decides where measuring starts (steady.py: fio's ss= rule); None: not time-based.
    steady_series: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in cls.__dict__.get("__orig_bases__", ()):  # its own bases, as written
            for arg in get_args(base):
                if isinstance(arg, type) and issubclass(arg, Params):
                    cls.params_model = arg

    def stages(self, params: P, age: str, scale: Scale) -> list[dict[str, Any]]:
        """A workload that measures in stages on one filesystem (the `aging` workload) is
        stored as one step per stage: each stage's own parameters, over `params`. `age` is
        the cell's age knob."""
        return [{}]

    def cache_for(self, params: P) -> CacheState:
        """The cache state the timed phase starts in, with these parameters: the class's
        `cache`, unless a parameter says (the `command` workload's `cache`)."""
        return self.cache

    def flush_for(self, params: P) -> Flush:
        """The flush the runner times after `run`, with these parameters: the class's
        `flush`, unless a parameter says (the `command` workload's `flush`)."""
        return self.flush

    def run_context(self, ctx: TrialContext, params: P) -> TrialContext:
        """The filesystem this step's timed phase runs on: the trial's own (`ctx`), or one
        the workload made in `prepare` (a clean copy: `ctx.fresh_twin()`)."""
        return ctx

    def release(self, ctx: TrialContext, params: P) -> None:  # noqa: B027 - optional hook
        """After the step, on every path (success, failure, timeout, Ctrl-C): stop what
        `prepare` started (a database server)."""

    def for_memory(self, params: P, mem_bytes: int) -> P:
        """The parameters as they run where the workload may use `mem_bytes` of memory (the
        `mem` knob's cap, else the machine's RAM): a `scale_to_mem` resolved into the size
        of the working set. Every hook of a step gets what this returns (the runner records
        what it changed), and so does `required_bytes` before a run starts."""
        return params

    def required_bytes(self, params: P) -> int:
        """Space the workload needs on the filesystem; checked before a run starts, with
        the parameters `for_memory` gives."""
        return 0

    def prepare(self, ctx: TrialContext, params: P) -> None:  # noqa: B027 - optional hook
        """Untimed setup on the mounted filesystem."""

    @abstractmethod
    def run(self, ctx: TrialContext, params: P) -> list[Metric]:
        """The timed work. Raise errors.Unsupported when the filesystem cannot do it."""

    def inspect(self, ctx: TrialContext, params: P) -> list[Metric]:
        """Untimed measurements after the data is on disk and the filesystem remounted."""
        return []

    def derive(self, params: P, metrics: Mapping[str, float]) -> list[Metric]:
        """Metrics computed from the timed ones: by default the workload's `rates` (MB/s
        from bytes and the runner's `seconds`, which includes the flush)."""
        return [m for r in self.rates for m in r.of(metrics)]

    def check(self, params: P, metrics: Mapping[str, float]) -> dict[str, str]:
        """Validity flags of the workload's own (the runner checks cold reads, CPU and
        duration itself): e.g. {"fsck-problems": "..."}."""
        return {}

    def expected_read_bytes(self, params: P, metrics: Mapping[str, float]) -> float | None:
        """Bytes a cold read in the timed phase must fetch from the device (the runner
        flags `not-cold` when the device read less than validity.COLD_READ_FRACTION of
        them); None when the timed phase reads nothing it should find cold."""
        return None

    def inputs(self, params: P) -> tuple[str, ...]:
        """The files `input_params` name, as the plan gives them."""
        values = (getattr(params, name) for name in self.input_params)
        return tuple(str(v) for v in values if v is not None)

    def refuses(self, params: P) -> str | None:
        """Why these parameters cannot run on this machine although the model accepts
        them (a file they name is missing or unreadable): one line, or None. The executor's
        preflight asks before anything runs, so a bad value is refused once, not stored as
        every trial failing."""
        return None

    def threads(self, params: P) -> int:
        """Threads or processes the timed phase keeps busy at most: the runner's
        `cpu-bound` check counts that many CPUs (at most the machine's)."""
        return 1

    @classmethod
    def headline_for(cls, params: P, reported: Collection[str]) -> tuple[str, ...]:
        """The headline metrics of a trial with these parameters that reported these
        metrics (the runner records them with the trial): `headline` in its order, less
        what the trial did not report."""
        return tuple(name for name in cls.headline if name in reported)

    @classmethod
    def missing(cls) -> str | None:
        """Why this machine cannot run the workload (one line, with what to install), or
        None. Tools by default; workloads with other needs (the engine) say more."""
        return missing_tools(cls.tools)

    @classmethod
    def has_inspect(cls) -> bool:
        return cls.inspect is not Workload.inspect

    @classmethod
    def defaults(cls, scale: Scale) -> dict[str, Any]:
        return dict(cls.scale_defaults.get(scale, {}))


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
