"""What `fsbench tune` shows of a race, read only from the store: the space, the race round
by round, the winner(s) with their CI, every dropped config with the round, the test and
its p, the trials spent against a full grid, and the `fsbench run` that checks the winner
against the defaults. One document (`TuneReport`) for the terminal and `--json` alike."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.table import Table

from fsbench.execute.race.rule import Drop, RaceResult
from fsbench.execute.race.trials import KIND, Replay, TuneSpec, replay
from fsbench.plan import model as planning
from fsbench.plan.model import Cell, FsConfig, Plan
from fsbench.store.records import RunRecord, TrialRecord
from fsbench.store.results import Store
from fsbench.store.values import value_of
from fsbench.system import numbers
from fsbench.system.errors import FsbenchError


class SpaceDoc(BaseModel):
    per_type: dict[str, int]
    total: int
    duplicates: int
    specs: list[str]


class RoundDoc(BaseModel):
    round: int  # 0: the warm-up round (uncounted)
    alive: int  # configs at its start
    dropped: list[str]


class WinnerDoc(BaseModel):
    config: str
    spec: str  # its --fs value
    n: int
    mean: float | None
    ci95: tuple[float, float] | None
    ratio: float | None  # to the leader
    ratio_ci: tuple[float, float] | None
    equivalent: bool


class DropDoc(BaseModel):
    config: str
    spec: str
    round: int
    reason: str
    test: str
    p: float | None
    level: float | None
    versus: str
    detail: str


class SafetyDoc(BaseModel):
    """A config's crash tests (`--require safe`), in the run `TuneReport.safety_run`."""

    config: str
    safe: bool
    evidence: str


class TuneReport(BaseModel):
    run_id: int
    status: str
    workload: str
    scale: str
    metric: str
    better: str  # higher | lower
    space: SpaceDoc
    rounds: list[RoundDoc]
    stop: str
    decided: bool
    winners: list[WinnerDoc]
    dropped: list[DropDoc]
    trials: int  # counted trials (the race's)
    warmup_trials: int  # stored, never counted
    grid_trials: int  # a full grid of the same configs at the race's final n
    grid_n: int
    method: str
    rerun: str  # the `fsbench run` that checks the winner(s) against the defaults
    # Each config's value of the metric per counted round (None: not run, dropped).
    values: dict[str, list[float | None]]
    safety_run: int | None = None  # the crash tests' run (`--require safe`)
    safety: list[SafetyDoc] = []
    # What the race was given: rounds at most, wall time (None: no limit), the margin.
    max_rounds: int = 0
    budget_s: float | None = None
    margin: float = 0.0

    def budget(self) -> str:
        """The race's budget in words, as every format states it."""
        wall = f"{self.budget_s:.0f} s of wall time" if self.budget_s else "no time limit"
        return f"budget: up to {self.max_rounds} rounds, {wall}; margin ±{self.margin:.0%}"


def as_json(doc: TuneReport) -> str:
    """The document as `--json` and `fsbench report --format json` print it."""
    return json.dumps(doc.model_dump(mode="json"), indent=2) + "\n"


def load(store: Store, run_id: int) -> tuple[RunRecord, Plan, list[Cell], TuneSpec, Replay]:
    """A tune run, its plan and cells, the race's settings and the race replayed."""
    run = store.get_run(run_id)
    if run.kind != KIND or not run.facts:
        raise FsbenchError(f"run {run_id} is a {run.kind} run, not a race of fsbench tune")
    try:
        plan = Plan.model_validate(run.plan)
        spec = TuneSpec.model_validate(run.facts)
    except ValidationError as exc:
        raise FsbenchError(f"run {run_id}: {planning.one_line(exc)}") from None
    cells = planning.expand(plan, run.overrides)
    names = {c.key: c.config.display for c in cells}
    configs = list(dict.fromkeys(names.values()))
    state = replay(configs, spec, store.get_trials(run_id), names, len(run.schedule))
    return run, plan, cells, spec, state


def document(store: Store, run_id: int) -> TuneReport:
    run, plan, cells, spec, state = load(store, run_id)
    race = state.finish()
    result = race.result()
    trials = store.get_trials(run_id)
    by_name = {c.display: c for c in plan.fs}
    space = SpaceDoc(
        per_type=_per_type(plan.fs),
        total=len(plan.fs),
        duplicates=spec.duplicates,
        specs=[c.spec for c in plan.fs],
    )
    return TuneReport(
        run_id=run_id,
        status=run.status,
        workload=cells[0].workload,
        scale=str(plan.scale),
        metric=spec.metric,
        better="higher" if race.settings.higher_is_better else "lower",
        space=space,
        rounds=[RoundDoc.model_validate(r) for r in state.rounds],
        stop=result.stop,
        decided=result.decided,
        winners=[
            WinnerDoc(spec=by_name[s.config].spec, ci95=s.ci, **_fields(s, WinnerDoc))
            for s in result.winners
        ],
        dropped=[_drop(d, by_name) for d in result.dropped],
        trials=result.trials,
        warmup_trials=len({t.seq for t in trials if t.rep == 0}),
        grid_trials=result.grid_trials(),
        grid_n=result.rounds,
        method=result.method,
        rerun=rerun_command(plan, cells[0], run.overrides, result),
        values=_values(trials, {c.key: c.config.display for c in cells}, spec, result.rounds),
        safety_run=spec.safety_run,
        safety=[SafetyDoc(config=c, **v.model_dump()) for c, v in spec.safety.items()],
        max_rounds=spec.max_rounds,
        budget_s=spec.budget,
        margin=spec.margin,
    )


def _values(
    trials: Sequence[TrialRecord], names: dict[str, str], spec: TuneSpec, rounds: int
) -> dict[str, list[float | None]]:
    by: dict[tuple[str, int], list[TrialRecord]] = {}
    for t in trials:
        if 1 <= t.rep <= rounds and t.cell_key in names:
            by.setdefault((names[t.cell_key], t.rep), []).append(t)
    return {
        name: [value_of(by.get((name, r), []), spec.metric) for r in range(1, rounds + 1)]
        for name in dict.fromkeys(names.values())
    }


def _drop(d: Drop, by_name: dict[str, FsConfig]) -> DropDoc:
    spec = by_name[d.config].spec if d.config in by_name else d.config
    return DropDoc(spec=spec, **_fields(d, DropDoc))


def _fields(record: object, doc: type[BaseModel]) -> dict[str, Any]:
    """What the record says of the document's fields that have its names."""
    return {name: getattr(record, name) for name in doc.model_fields if hasattr(record, name)}


def _per_type(configs: Sequence[FsConfig]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for c in configs:
        counts[c.type] = counts.get(c.type, 0) + 1
    return counts


def rerun_command(
    plan: Plan, cell: Cell, overrides: dict[str, list[str]], result: RaceResult
) -> str:
    """`fsbench run` of the winner(s) (a decided race: the winner or its equally good
    group; otherwise every config still in the race) against every filesystem of the
    space with its defaults."""
    by_name = {c.display: c for c in plan.fs}
    kept = [s for s in result.winners if s.equivalent or not result.decided]
    if not kept:
        return ""
    configs = [by_name[s.config].spec for s in kept]
    for fs_type in dict.fromkeys(c.type for c in plan.fs):
        if fs_type not in configs:
            configs.append(fs_type)
    argv = ["fsbench", "run"]
    for spec in configs:
        argv += ["--fs", spec]
    argv += ["--workload", cell.workload, "--scale", str(plan.scale)]
    for name, values in overrides.items():
        argv += ["--set", f"{name}={','.join(values)}"]
    return shlex.join(argv)


# --------------------------------------------------------------------------- terminal


def print_report(console: Console, doc: TuneReport) -> None:
    """The end of a race for people: the same facts as the JSON."""
    console.print(
        f"[bold]fsbench tune[/bold] run {doc.run_id} ({doc.status}): {doc.workload}, "
        f"scale {doc.scale}, {doc.metric} ({doc.better} is better)",
        highlight=False,
    )
    console.print(
        f"space: {doc.space.total} configs ("
        + ", ".join(f"{k} {v}" for k, v in doc.space.per_type.items())
        + ")",
        highlight=False,
    )
    console.print(doc.budget(), highlight=False)
    head = {
        "one left": "winner",
        "equivalent": "equally good (within the margin)",
    }.get(doc.stop, f"still in the race when it stopped ({doc.stop or 'not finished'})")
    table = Table(title=f"{head} after {doc.grid_n} rounds", title_justify="left")
    for col in ("config", "n", f"mean {doc.metric}", "95% CI", "ratio to leader", "equiv."):
        table.add_column(col, justify="left" if col == "config" else "right")
    for w in doc.winners:
        ci = numbers.interval(w.ci95, "-")
        ratio = numbers.ratio(w.ratio, w.ratio_ci)
        table.add_row(
            w.config, str(w.n), numbers.number(w.mean), ci, ratio, "yes" if w.equivalent else ""
        )
    if doc.winners:
        console.print(table)
    else:
        console.print("no config is left: every one was dropped (below)", highlight=False)
    if doc.safety:
        console.print(
            f"safety (crash tests in a VM, run {doc.safety_run}): "
            f"{sum(s.safe for s in doc.safety)} of {len(doc.safety)} configs lost nothing",
            highlight=False,
        )
        for s in doc.safety:
            word = "safe" if s.safe else "UNSAFE"
            console.print(f"  {word}: {s.config}: {s.evidence}", highlight=False, markup=False)
    if doc.dropped:
        dropped = Table(title="dropped", title_justify="left")
        for col in ("config", "round", "reason", "test", "p", "why"):
            dropped.add_column(col)
        for d in doc.dropped:
            p = "-" if d.p is None else f"{d.p:.2g} < {d.level:.2g}" if d.level else f"{d.p:.2g}"
            dropped.add_row(d.config, str(d.round), d.reason, d.test, p, d.detail)
        console.print(dropped)
    saved = 1 - doc.trials / doc.grid_trials if doc.grid_trials else 0.0
    console.print(
        f"trials: {doc.trials} counted (+{doc.warmup_trials} warm-up) against {doc.grid_trials} "
        f"for a full grid at n={doc.grid_n} ({saved:.0%} saved)",
        highlight=False,
    )
    console.print(f"method: {doc.method}", style="dim", highlight=False)
    if doc.rerun:
        console.print(f"check it against the defaults: {doc.rerun}", highlight=False, markup=False)


def trial_line(records: Sequence[TrialRecord], metric: str, value: float | None) -> str:
    first = records[0]
    shown = f"{value:.4g}" if value is not None else first.status
    return f"{first.config}: {metric} {shown}"
