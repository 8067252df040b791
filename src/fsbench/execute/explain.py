"""The instrumented pass of `fsbench explain`: a few extra trials of the cells of a stored
run (or of a pair of its configs) with the tracers attached, stored as a run of their own
(kind `explain`), never mixed into the source run's counted values.

Its plan is the source run's, with the tracers beside the sampler (`instrumented`: each
step in a cgroup of its own), a fixed number of repetitions, no warm-up and a fresh order
seed; the repetition loop runs it (loop.GridDriver), so that it is shown, interrupted and
resumed as every run is. Its facts name the source run and the pair.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from fsbench.analysis.budget import Instrumented
from fsbench.execute import session
from fsbench.execute.loop import GridDriver, stored_plan
from fsbench.plan import model as planning
from fsbench.plan.model import Plan
from fsbench.store import runkinds
from fsbench.store.records import RunRecord
from fsbench.store.results import Store
from fsbench.system import monitors
from fsbench.system.errors import FsbenchError

# The tracers of an instrumented trial, beside the default monitors.
TRACERS: tuple[str, ...] = ("block-trace", "offcpu", "profile")
# Instrumented trials per config: the fewest that let a mechanism's difference be decided
# (Welch at n = 3, as every comparison of fsbench).
REPS = 3
# Seconds an instrumented trial costs beyond its counted twin: bpftrace compiles and attaches
# the tracers' scripts before the timed phase. fs_mark at tiny scale here, 2026-12-06: 5.0-6.1 s
# a trial instrumented against 0.4-1.8 s counted on a quiet machine, about 8 s against 0.7 s
# beside other work. What `run --explain` reserves a trial for them.
TRACER_START_S = 7.0


class ExplainFacts(BaseModel):
    """What an explain run keeps beyond its plan: the run it explains, and the pair."""

    source: int
    pair: list[str] = []  # the two configs' labels, or every pair of the source's
    tracers: list[str] = list(TRACERS)


class ExplainDriver(GridDriver):
    """The repetition loop over the instrumented plan; its run is of kind `explain`."""

    kind = runkinds.EXPLAIN
    facts: ExplainFacts | None = None

    def start(self) -> session.NewRun:
        new = super().start()
        new.facts = self.facts
        return new


def reservation(reps: int = REPS) -> Instrumented:
    """The pass `fsbench run --explain` keeps from the counted run's budget: `reps`
    instrumented trials of every cell."""
    return Instrumented(reps, TRACER_START_S)


def configs_of(plan: Plan) -> list[str]:
    return [fs.display for fs in plan.fs]


def instrumented_plan(
    source: RunRecord, pair: Sequence[str] = (), reps: int = REPS, tracers: Sequence[str] = TRACERS
) -> Plan:
    """The source run's plan for an instrumented pass over its configs (or the pair's)."""
    plan = stored_plan(source)
    labels = configs_of(plan)
    if pair:
        unknown = [p for p in pair if p not in labels]
        if unknown or len(set(pair)) != 2:
            raise FsbenchError(
                f"--pair {','.join(pair)}: two configs of run {source.id} ({', '.join(labels)})"
            )
    elif len(labels) < 2:
        raise FsbenchError(f"run {source.id} has one config: nothing to explain")
    fs = [c for c in plan.fs if not pair or c.display in pair]
    names = [*plan.monitors, *(t for t in tracers if t not in plan.monitors)]
    return plan.model_copy(
        update={
            "name": f"explain-{source.id}",
            "fs": fs,
            "reps": reps,
            "budget": None,
            "warmup": 0,
            "seed": None,
            "monitors": list(monitors.check(names, instrumented=True)),
            "instrumented": True,
        }
    )


def driver(
    store: Store, source: RunRecord, pair: Sequence[str] = (), reps: int = REPS
) -> GridDriver:
    """The driver of a new explain run of `source`."""
    kind = runkinds.kind_of(source)
    if not kind.explainable:
        takes = [k.command for k in runkinds.KINDS.all().values() if k.explainable]
        raise FsbenchError(
            f"run {source.id} is a {kind.title}: explain takes a run whose cells it can "
            f"repeat (of {', '.join(takes)})"
        )
    plan = instrumented_plan(source, pair, reps)
    made = ExplainDriver(
        store, plan, planning.expand(plan, source.overrides), overrides=source.overrides
    )
    made.facts = ExplainFacts(source=int(source.id or 0), pair=list(pair))
    return made
