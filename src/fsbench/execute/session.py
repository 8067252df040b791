"""A run's life in the store, the same for every kind of run (a grid, a calibration, a
race, a bisection): bound to its executor and past its preflight, created with the facts
every run keeps (its plan and schedule, this host's provenance, its target, what its
reports need of this fsbench's workloads, the feature table of its kernel, its kind's
facts) or reopened to resume, and ended `finished`, `incomplete`, `interrupted` (Ctrl-C,
SIGTERM: `--resume` goes on) or `failed`, on every path.

    run_id = session.create(store, plan, schedule, target, argv, overrides, kind="run")
    with session.lived(store, run_id, executor.describe) as life:
        ... the trials ...
    if life.interrupted: ...
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from fsbench import __version__, workloads
from fsbench.execute.executors.base import Binding, Executor
from fsbench.plan.model import Plan
from fsbench.store import runfacts
from fsbench.store.records import RunRecord
from fsbench.store.results import Store
from fsbench.store.runkinds import GRID, RunKind, kind_of
from fsbench.system import hostfacts
from fsbench.system.errors import FsbenchError

# A run that has not ended (a resume goes on with it).
UNFINISHED = ("running", "interrupted", "failed", "incomplete")


@dataclass(frozen=True)
class Part:
    """This run is one host's part of a run on many hosts: that run's uid, the host's
    inventory name and groups."""

    uid: str
    host: str
    groups: tuple[str, ...] = ()


def ready(executor: Executor, run: Binding, note: Callable[[str], None]) -> None:
    """The executor bound to its run, its preflight passed (a refusal raises, one line),
    and what crashed runs left behind released; each warning and release said by `note`."""
    executor.bind(run)
    for warning in executor.preflight():
        note(f"warning: {warning}")
    for line in executor.release_stale():
        note(f"released stale: {line}")


def create(
    store: Store,
    plan: Plan,
    schedule: Sequence[tuple[int, str]],
    target: Mapping[str, Any],
    argv: list[str],
    overrides: Mapping[str, list[str]],
    *,
    kind: str,
    name: str | None = None,
    facts: Mapping[str, Any] | None = None,
    uid: str | None = None,
    part: Part | None = None,
    tag: str = "",
) -> int:
    """The run in the store, before its first trial: its plan and schedule, this host's
    provenance, its target, what its reports need of this fsbench's workloads, the
    feature table measured on its kernel, and its kind's facts."""
    fs_types = sorted({c.type for c in plan.fs})
    steps = sorted({s for w in plan.workloads for s in w.steps})
    host = hostfacts.host(fs_types, workloads.tool_packages(steps))
    return store.create_run(
        name=name or plan.name,
        fsbench_version=__version__,
        argv=argv,
        plan=plan.model_dump(mode="json", by_alias=True),
        overrides=dict(overrides),
        schedule=list(schedule),
        host=host,
        target=dict(target),
        kind=kind,
        facts=dict(facts or {}),
        workloads=runfacts.workload_facts(steps),
        features=runfacts.features_snapshot(host.kernel or "", fs_types),
        uid=uid,
        part_of=part.uid if part else "",
        part_host=part.host if part else "",
        part_groups=list(part.groups) if part else None,
        tag=tag,
    )


def begun(
    store: Store,
    resume_run: int | None,
    plan: Plan,
    schedule: Sequence[tuple[int, str]],
    describe: Callable[[], Mapping[str, Any]],
    argv: list[str],
    overrides: Mapping[str, list[str]],
    **kind_and_facts: Any,
) -> int:
    """The run's id: `resume_run` reopened, or a new run `create`d (with the target as the
    executor describes it, and `kind_and_facts`: kind=, facts=, uid=, part=, tag=)."""
    if resume_run is not None:
        store.reopen_run(resume_run)
        return resume_run
    return create(store, plan, schedule, describe(), argv, overrides, **kind_and_facts)


@dataclass
class Life:
    """How a run's life ended: `interrupted` after Ctrl-C or SIGTERM (the context then
    returns normally); `end` is the status a normal end gets (`incomplete`: some of it
    could not run)."""

    interrupted: bool = False
    end: str = "finished"


@contextmanager
def lived(
    store: Store, run_id: int, describe: Callable[[], Mapping[str, Any]] | None = None
) -> Iterator[Life]:
    """The body of a run: on its end, the target as the executor now describes it, and
    the run's status; an interrupt ends the run `interrupted` and is swallowed (the
    caller reads `life.interrupted`); an error that says how the run ended (its
    `run_status`: a bisection refused) ends it so, anything else `failed`, and goes on up."""
    life = Life()
    try:
        yield life
    except KeyboardInterrupt:
        if describe is not None:
            store.set_target(run_id, dict(describe()))
        store.finish_run(run_id, "interrupted")
        life.interrupted = True
        return
    except BaseException as exc:
        store.finish_run(run_id, str(getattr(exc, "run_status", "failed")))
        raise
    if describe is not None:
        store.set_target(run_id, dict(describe()))
    store.finish_run(run_id, life.end)


def to_resume(store: Store, kind: RunKind, run_arg: str | None) -> RunRecord:
    """The run `kind`'s `--resume` goes on with: the id given, or the newest unfinished run
    that its command resumes. A finished run, or one another command resumes, is refused in
    one line that names that command."""
    if run_arg is None:
        found = last_unfinished(store, kind)
        if found is not None:
            return found
        what = "run" if kind.resume == GRID.resume else kind.title
        other = last_unfinished(store, None)
        if other is None:
            raise FsbenchError(f"no unfinished {what} in {store.url} to resume")
        theirs = kind_of(other)
        raise FsbenchError(
            f"no unfinished {what} in {store.url} to resume; run {other.id} is a "
            f"{theirs.title}: `{theirs.resume} {other.id}` goes on with it"
        )
    if not str(run_arg).isdigit():
        raise FsbenchError(f"--resume takes a run id, not {str(run_arg)!r}")
    record = store.get_run(int(str(run_arg)))
    theirs = kind_of(record)
    if theirs.resume != kind.resume:
        raise FsbenchError(
            f"run {record.id} is a {theirs.title}: `{theirs.resume} {record.id}` goes on with it"
        )
    if record.status not in UNFINISHED:
        raise FsbenchError(f"run {record.id} is {record.status}: nothing to resume")
    return record


def last_unfinished(
    store: Store, kind: RunKind | None, match: Callable[[RunRecord], bool] = lambda run: True
) -> RunRecord | None:
    """The newest run that has not finished (and `match`es) of the kinds `kind`'s command
    resumes (None: of any kind): what a plain `--resume` of that command goes on with."""
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
    """The command that resumes the run ("" for a kind this fsbench does not know)."""
    try:
        return kind_of(run).resume
    except FsbenchError:
        return ""
