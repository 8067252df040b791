"""A run's life, the same for every kind of run (store/runkinds.py): a grid, a calibration,
a race, a bisection, a run on many hosts, a plugin's. A kind names its driver (`Driver`:
what its runs are and do); `run` lives the rest, once for every kind:

- set-up: the driver's executor, where it has one, bound to the run, past its preflight
  (a refusal raises, one line), what crashed runs left behind released, and opened;
- the run created in the store with what every run keeps (its plan and schedule, this
  host's provenance, its target, what its reports need of this fsbench's workloads, the
  feature table of its kernel, its kind's facts), or, resumed, reopened;
- the body, its view live until the end; SIGINT, SIGTERM and SIGHUP are interrupts (a
  second one while the first is cleaned up waits until the run has released its mounts
  and devices); the store waits out an outage as the plan's `store_wait` says (its
  trials measure on, and wait in the run's spool file until written: store/waiting.py);
- the end, on every path: `finished`, `incomplete` (some of it could not run, one line
  each), `interrupted` (by a signal, by an outage past its limit, by a full store disk:
  a resume writes what waits in the spool first), `failed`, or the status of the kind
  its body ended it with (a bisection `refused`); after an interrupt one line names
  `fsbench resume N`, and a command exits 130.

Nothing else creates, reopens or ends a run in the store.

    life = session.run(GridDriver(store, plan, cells, overrides=overrides))
    life = session.run(session.driver_for(store, session.to_resume(store, None, "7")))
"""

from __future__ import annotations

import signal
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, ClassVar

from pydantic import BaseModel
from rich.console import Console
from sqlalchemy.exc import SQLAlchemyError

from fsbench import __version__, workloads
from fsbench.execute.executors.base import Binding, Executor
from fsbench.execute.hooks import View
from fsbench.plan.model import DEFAULT_STORE_WAIT, Plan
from fsbench.plan.targets import DEFAULT_WORKDIR
from fsbench.store import runfacts
from fsbench.store.outage import StoreStopped
from fsbench.store.records import RunRecord
from fsbench.store.results import Store
from fsbench.store.runkinds import GRID, RunKind, kind_of
from fsbench.store.schema import new_uid
from fsbench.store.spool import Spool, spool_path
from fsbench.system import cpu_latency, hostfacts
from fsbench.system.errors import FsbenchError
from fsbench.system.plugins import load

EXIT_INTERRUPTED = 130
# A run that has not ended (a resume goes on with it).
UNFINISHED = ("running", "interrupted", "failed", "incomplete")


@dataclass(frozen=True)
class Part:
    """This run is one host's part of a run on many hosts: that run's uid, the host's
    inventory name and groups."""

    uid: str
    host: str
    groups: tuple[str, ...] = ()


@dataclass
class NewRun:
    """A new run as its driver describes it (`Driver.start`), before anything is stored;
    the session adds what every run keeps of this host and this fsbench."""

    name: str
    facts: BaseModel | None = None  # its kind's facts
    plan: Plan | None = None  # None: a kind that runs no plan (the store keeps {})
    schedule: Sequence[tuple[int, str]] = ()
    overrides: Mapping[str, list[str]] = field(default_factory=dict)
    target: Mapping[str, Any] | None = None  # None: as its executor describes it
    argv: list[str] | None = None  # None: this process's
    uid: str | None = None  # None: a fresh one
    part: Part | None = None
    tag: str = ""


@dataclass
class Life:
    """A run as its body lives it: the store and the run's id (its trials and facts go
    there as they come), whether it was resumed, what could not run (one line each: the
    run then ends `incomplete`); after the end, whether it was interrupted, and by what
    when not by a signal (the store: one line)."""

    store: Store
    run_id: int
    resumed: bool = False
    unfinished: list[str] = field(default_factory=list)
    interrupted: bool = False
    stopped_by: str = ""

    @property
    def end(self) -> str:
        """The status a normal end gets."""
        return "incomplete" if self.unfinished else "finished"


class Ended(FsbenchError):
    """A body ends its run with a status of its kind (a bisection `refused`): the run is
    stored so, and its command says the message in one line and exits with `exit_code`."""

    run_status: ClassVar[str] = "failed"
    exit_code: ClassVar[int] = 1


class Driver(ABC):
    """A run kind's driver (`RunKind.driver`): what its runs are and do; their life is
    `run`'s, the same for every kind. A kind's command makes its driver from its arguments
    (and the store); `resume` makes one from a stored run alone.

    - `start()`: the new run's description, before anything is stored;
    - `resume(store, record)` (class method): the driver that goes on with `record`;
    - `body(life)`: the run's work, its trials and facts stored as they come;
    - `exit_code(store, record)` (class method): what its command exits with after a
      normal end (0 unless the kind says otherwise).

    `executor`, where it has one: where its trials run (the session binds, checks, opens
    and describes it). `view`: its live display (the session says notes to it and ends
    it; its body tells it the rest)."""

    kind: RunKind
    store: Store
    record: RunRecord | None = None  # the run it goes on with (None: a new run)
    executor: Executor | None = None
    view: View = View()

    @abstractmethod
    def start(self) -> NewRun:
        """The new run, as the store is to keep it."""

    @classmethod
    @abstractmethod
    def resume(cls, store: Store, record: RunRecord) -> Driver:
        """The driver that goes on with `record`, an unfinished run of its kind, from what
        the store keeps alone."""

    @abstractmethod
    def body(self, life: Life) -> None:
        """The run's work."""

    @classmethod
    def exit_code(cls, store: Store, record: RunRecord) -> int:
        """What the command exits with after the run ended normally."""
        return 0


def run(
    driver: Driver, *, command: bool = True, on_interrupt: Callable[[int], None] | None = None
) -> Life:
    """The driver's run, lived (the module's doc). A command's run (`command`) takes
    SIGTERM and SIGHUP as interrupts too, says what could not run one line each, and after an
    interrupt says `on_interrupt` (given the run id) and one line naming how to go on, and
    exits 130; an end of its kind (`Ended`) is said in one line, and exits with its code.
    A library's caller (a test, a simulation) reads the life instead."""
    try:
        life = _watched(driver, command)
    except Ended as exc:
        if not command:
            raise
        sys.stderr.write(f"{exc}\n")  # one line, never wrapped
        raise SystemExit(exc.exit_code) from None
    if not command:
        return life
    for line in life.unfinished:  # a host that failed: one line each, for grep
        _say(line, "red")
    if life.interrupted:
        if on_interrupt is not None:
            on_interrupt(life.run_id)
        _say(_interrupted(life), "yellow")
        raise SystemExit(EXIT_INTERRUPTED)
    return life


def _interrupted(life: Life) -> str:
    """The one line an interrupted run ends with: by what (a signal, or the store's
    words), what it keeps, what waits in its spool file, and how to go on."""
    why = (
        f"{life.stopped_by}; run {life.run_id} is interrupted and"
        if life.stopped_by
        else (f"interrupted; run {life.run_id}")
    )
    waiter = life.store.waiter
    kept = "what it did"
    if waiter.cells and waiter.spool is not None and not waiter.spool.error:
        kept += f" and {len(waiter.cells)} cells waiting in {waiter.spool.path}"
    elif waiter.cells:
        kept += f", but not the {len(waiter.cells)} cells the store could not take"
    return f"fsbench: {why} keeps {kept} (`fsbench resume {life.run_id}` goes on with it)"


def _say(text: str, style: str | None) -> None:
    Console(stderr=True).print(text, style=style, markup=False, highlight=False, soft_wrap=True)


def _watched(driver: Driver, command: bool) -> Life:
    """The run, its view ended on every path with how it ended."""
    state = "failed"
    try:
        with _Interrupts() if command else nullcontext():
            life = _lived(driver, command)
        state = "interrupted" if life.interrupted else "finished"
    finally:
        driver.view.ended(state)
    return life


def _lived(driver: Driver, command: bool) -> Life:
    store, record, executor, view = driver.store, driver.record, driver.executor, driver.view
    new: NewRun | None = None
    if record is not None:
        plan: Mapping[str, Any] = record.plan
        _waits(store, plan, record.uid, view)
        spooled = store.write_spooled()  # what it measured but could not store, first
        stored = len({(t.host, t.seq) for t in store.run_trials(record)})
        said = f"fsbench: resuming {driver.kind.noun} {record.id} ({stored} trials stored"
        said += f", {spooled} cells of them from its spool)" if spooled else ")"
        if command:
            _say(said, None)
        else:
            view.note(said)
        uid = record.uid
    else:
        new = driver.start()
        uid = new.uid or new_uid()  # known before the run is stored: executors name by it
        plan = new.plan.model_dump(mode="json") if new.plan is not None else {}
        _waits(store, plan, uid, view)
    if executor is not None:
        executor.bind(Binding(store, uid, view))
        for warning in executor.preflight():
            view.note(f"warning: {warning}")
        for line in executor.release_stale():
            view.note(f"released stale: {line}")
    # Opened before the run is stored: a real device's safety checks happen in open().
    # The CPUs held before the host's facts are taken, which then say so.
    with executor if executor is not None else nullcontext(), _idle_held(plan, view):
        if new is None:
            assert record is not None
            store.reopen_run(record.id)
            life = Life(store, record.id, resumed=True)
        else:
            life = Life(store, _create(store, driver.kind, new, uid, executor))
        with _ended(life, executor):
            driver.body(life)
    return life


@contextmanager
def _idle_held(plan: Mapping[str, Any], view: View) -> Iterator[None]:
    """The plan's `cpu_idle = "shallow"`: the CPUs held out of deep idle for the run's
    life (system/cpu_latency.py). Where the request cannot be made, a warning, and the
    run goes on (the host's facts say what the CPUs were held to)."""
    if plan.get("cpu_idle", "any") != "shallow":
        yield
        return
    with cpu_latency.shallow_idle() as not_held:
        if not_held is not None:
            view.note(f"warning: cpu_idle = shallow not held: {not_held}")
        yield


def _waits(store: Store, plan: Mapping[str, Any], uid: str, view: View) -> None:
    """The run's store waits out outages as its plan says, tells its view, and keeps the
    cells that wait in a spool file of its workdir, named by the run's uid."""
    workdir = (plan.get("target") or {}).get("workdir") or DEFAULT_WORKDIR
    store.waiter.limit = float(plan.get("store_wait", DEFAULT_STORE_WAIT))
    store.waiter.say = view.note
    store.waiter.spool = Spool(spool_path(Path(workdir), uid))


def _create(store: Store, kind: RunKind, new: NewRun, uid: str, executor: Executor | None) -> int:
    """The run in the store, before its first trial (see NewRun)."""
    plan = new.plan
    fs_types = sorted({c.type for c in plan.fs}) if plan else []
    steps = sorted({s for w in plan.workloads for s in w.steps}) if plan else []
    host = hostfacts.host(fs_types, workloads.tool_packages(steps))
    target = new.target if new.target is not None else _described(executor)
    part = new.part
    return store.create_run(
        name=new.name,
        fsbench_version=__version__,
        argv=new.argv if new.argv is not None else list(sys.argv),
        plan=plan.model_dump(mode="json", by_alias=True) if plan else {},
        overrides=dict(new.overrides),
        schedule=list(new.schedule),
        host=host,
        target=dict(target),
        kind=kind.name,
        facts=new.facts.model_dump(mode="json") if new.facts is not None else {},
        workloads=runfacts.workload_facts(steps),
        features=runfacts.features_snapshot(host.kernel or "", fs_types),
        uid=uid,
        part_of=part.uid if part else "",
        part_host=part.host if part else "",
        part_groups=list(part.groups) if part else None,
        tag=new.tag,
    )


def _described(executor: Executor | None) -> dict[str, Any]:
    return dict(executor.describe()) if executor is not None else {}


@contextmanager
def _ended(life: Life, executor: Executor | None) -> Iterator[None]:
    """The body: on its end, the target as the executor now describes it, and the run's
    status (after what waits for the store is written); an interrupt, or a store that
    cannot take the run's writes (unreachable past its limit, its disk full), ends the run
    `interrupted` and is swallowed (`life.interrupted` says it); an error that names how
    the run ended (its `run_status`: a bisection refused) ends it so, anything else
    `failed`, and goes on up. Ending, the store is not waited for: a run it cannot mark
    stays `running`, which a resume goes on with all the same."""
    store, run_id = life.store, life.run_id
    try:
        yield
        if executor is not None:
            store.set_target(run_id, _described(executor))
        store.finish_run(run_id, life.end)
    except (KeyboardInterrupt, StoreStopped) as exc:
        _mark(store, run_id, "interrupted", executor)
        life.interrupted = True
        life.stopped_by = str(exc) if isinstance(exc, StoreStopped) else ""
    except BaseException as exc:
        _mark(store, run_id, str(getattr(exc, "run_status", "failed")), None)
        raise


def _mark(store: Store, run_id: int, status: str, executor: Executor | None) -> None:
    """The run's end in the store if it takes it now; else it stays as it is."""
    with store.waiter.not_waiting():
        try:
            if executor is not None:
                store.set_target(run_id, _described(executor))
            store.finish_run(run_id, status)
        except (FsbenchError, SQLAlchemyError):
            pass


# The signals that end a run like Ctrl-C: a terminal or an SSH session closing under a
# nightly job sends SIGHUP, a supervisor SIGTERM.
INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _Interrupts:
    """SIGINT, SIGTERM and SIGHUP end a run like Ctrl-C: the first raises
    KeyboardInterrupt, and the run cleans up on its way out (unmounts, detaches its loop
    devices, stops its guests, ends its run in the store); one that comes while it does
    is held, not raised into that cleanup (where it would leave a mount behind), and one
    after it, while the command says how to go on, is ignored. A signal this process was
    started ignoring (nohup) stays ignored, but SIGTERM."""

    def __init__(self) -> None:
        self.first: int | None = None
        self.held: list[int] = []
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> _Interrupts:
        for sig in INTERRUPTS:
            if sig != signal.SIGTERM and signal.getsignal(sig) == signal.SIG_IGN:
                continue
            self.previous[sig] = signal.signal(sig, self._caught)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.previous.items():
            # Interrupted: the process is on its way out (130), and one more signal while
            # it says how to go on must not kill it with its default action.
            signal.signal(sig, handler if self.first is None else signal.SIG_IGN)

    def _caught(self, signum: int, frame: FrameType | None) -> None:
        if self.first is None:
            self.first = signum
            raise KeyboardInterrupt
        self.held.append(signum)  # the run is on its way out already


def driver_class(record: RunRecord) -> type[Driver]:
    """The driver of the run's kind. A kind this fsbench does not provide, or one that
    names no driver, is refused in one line."""
    kind = kind_of(record)
    if not kind.driver:
        raise FsbenchError(f"run {record.id} is a {kind.title}, whose kind names no driver")
    found: type[Driver] = load(kind.driver)
    return found


def driver_for(store: Store, record: RunRecord) -> Driver:
    """The driver that goes on with `record`: its kind's."""
    return driver_class(record).resume(store, record)


def to_resume(store: Store, kind: RunKind | None, run_arg: str | None) -> RunRecord:
    """The run a resume goes on with: the id given, or the newest unfinished run of the
    kinds `kind`'s `--resume` takes (None: of any kind, as `fsbench resume` does). A
    finished run is refused in one line; so is one of a kind `kind`'s command does not
    resume, naming `fsbench resume N`."""
    if run_arg is None:
        found = last_unfinished(store, kind)
        if found is not None:
            return found
        what = "run" if kind is None or kind.resume == GRID.resume else kind.title
        other = last_unfinished(store, None) if kind is not None else None
        if other is None:
            raise FsbenchError(f"no unfinished {what} in {store.url} to resume")
        raise FsbenchError(
            f"no unfinished {what} in {store.url} to resume; run {other.id} is a "
            f"{_title(other)}: `fsbench resume {other.id}` goes on with it"
        )
    if not str(run_arg).isdigit():
        raise FsbenchError(f"--resume takes a run id, not {str(run_arg)!r}")
    record = store.get_run(int(str(run_arg)))
    theirs = kind_of(record)
    if kind is not None and theirs.resume != kind.resume:
        raise FsbenchError(
            f"run {record.id} is a {theirs.title}: `fsbench resume {record.id}` goes on with it"
        )
    if record.status not in UNFINISHED:
        raise FsbenchError(f"run {record.id} is {record.status}: nothing to resume")
    return record


def last_unfinished(
    store: Store, kind: RunKind | None, match: Callable[[RunRecord], bool] = lambda run: True
) -> RunRecord | None:
    """The newest run that has not finished (and `match`es), not a host's part, of the
    kinds `kind`'s `--resume` takes (None: of any kind)."""
    found = [
        r
        for r in store.list_runs()
        if r.status in UNFINISHED
        and not r.part_of
        and (kind is None or _resume_of(r) == kind.resume)
        and match(r)
    ]
    return found[-1] if found else None


def _resume_of(run: RunRecord) -> str:
    """The `--resume` that takes the run ("" for a kind this fsbench does not know)."""
    try:
        return kind_of(run).resume
    except FsbenchError:
        return ""


def _title(run: RunRecord) -> str:
    try:
        return kind_of(run).title
    except FsbenchError:
        return f"run of kind {run.kind!r}"
