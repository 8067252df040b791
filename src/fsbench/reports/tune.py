"""What `fsbench tune` shows of a race, read only from the store: the space, the race round
by round, the winner(s) with their CI, every dropped config with the round, the test and
its p, the trials spent against a full grid, and the `fsbench run` that checks the winner
against the defaults. One model (`TuneReport`: the JSON) in one document (`RaceDocument`)
for every format; `report` is the tune run kind's document builder."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from fsbench.execute.race.rule import Drop, RaceResult
from fsbench.execute.race.trials import Replay, TuneSpec, replay
from fsbench.plan import model as planning
from fsbench.plan.model import Cell, FsConfig, Plan
from fsbench.reports import document as d
from fsbench.reports import explain as explaining
from fsbench.store.records import RunRecord, TrialRecord
from fsbench.store.results import Store
from fsbench.store.runkinds import known_kind
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


class WhyDoc(BaseModel):
    """A pair's account from the race's last explain run (`fsbench tune --explain`): the
    race's verdict on it and the mechanisms named (reports/explain.py's `why`)."""

    verdict: str
    mechanisms: str  # "b against a: 2.1x the cache flushes ... (explained: ...)"
    tone: d.Tone = ""


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
    # The config next to the leader (`RaceResult.runner_up`): what `--explain` explains
    # the winner against; and the account of the race's last explain run.
    runner_up: str | None = None
    why_caption: str = ""
    why: list[WhyDoc] = []

    def why_block(self) -> d.Verdicts | None:
        """Its account under the winner, as every format shows it (None: not explained)."""
        if not self.why:
            return None
        items = tuple(d.Verdict(w.verdict, (w.mechanisms,), w.tone) for w in self.why)
        return d.Verdicts(items, "Why", self.why_caption)

    def budget(self) -> str:
        """The race's budget in words, as every format states it."""
        wall = "no time limit"
        if self.budget_s:
            wall = f"{numbers.seconds(self.budget_s)} of wall time"
        margin = numbers.percent(self.margin)
        return f"budget: up to {self.max_rounds} rounds, {wall}; margin ±{margin}"


def load(store: Store, run_id: int) -> tuple[RunRecord, Plan, list[Cell], TuneSpec, Replay]:
    """A tune run, its plan and cells, the race's settings and the race replayed."""
    run = store.get_run(run_id)
    kind = known_kind(run)
    if kind is None or not run.facts or not issubclass(kind.facts_model, TuneSpec):
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
        duplicates=spec.space.duplicates,
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
        budget_s=spec.space.budget(plan.budget),
        margin=spec.margin,
        runner_up=result.runner_up,
        **_why(store, run_id, result),
    )


def _why(store: Store, run_id: int, result: RaceResult) -> dict[str, Any]:
    """The account of the race's last explain run, each pair under the race's verdict on
    it (reports/explain.py)."""
    run = explaining.latest_of(store, run_id)
    found = explaining.explained(store, run).found if run is not None else []
    if run is None or not found:
        return {}
    said = f"race: {result.leader} won" if result.leader else ""
    said += f", {result.runner_up} next" if said and result.runner_up else ""
    items = [
        WhyDoc(
            verdict=said or explaining.summary(e),
            mechanisms=explaining.summary(e),
            tone=explaining.tone(e),
        )
        for e in found
    ]
    return {"why_caption": explaining.caption(int(run.id or 0)), "why": items}


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


# --------------------------------------------------------------------------- document


RACE_CSV = (
    "config", "spec", "outcome", "round", "reason", "test", "p", "level", "n", "mean",
    "ci95_low", "ci95_high", "ratio", "ratio_ci_low", "ratio_ci_high", "equivalent", "values",
)  # fmt: skip
NOTHING_LEFT = "no config is left: every one was dropped (below)"


@dataclass(frozen=True, kw_only=True)
class RaceDocument(d.Document):
    race: TuneReport


def _winners(doc: TuneReport) -> d.Table:
    head = {
        "one left": "winner",
        "equivalent": "equally good (within the margin)",
    }.get(doc.stop, f"still in the race when it stopped ({doc.stop or 'not finished'})")
    names = ("config", "n", f"mean {doc.metric}", "95% CI", "ratio to leader", "equiv.")
    rows = tuple(
        (
            d.Cell(w.config),
            d.Cell(str(w.n), value=w.n),
            d.Cell(numbers.number(w.mean), value=w.mean),
            d.Cell(numbers.interval(w.ci95, "-")),
            d.Cell(numbers.ratio(w.ratio, w.ratio_ci), value=w.ratio),
            d.Cell("yes" if w.equivalent else ""),
        )
        for w in doc.winners
    )
    return d.Table(f"{head} after {doc.grid_n} rounds", d.columns(names, names[1:]), rows)


def _dropped(doc: TuneReport) -> d.Table:
    names = ("config", "round", "reason", "test", "p", "level", "why")
    rows = tuple(
        (
            d.Cell(x.config),
            d.Cell(str(x.round), value=x.round),
            d.Cell(x.reason, "warn" if x.reason == "unsupported" else ""),
            d.Cell(x.test),
            d.Cell("-" if x.p is None else numbers.p_value(x.p), value=x.p),
            d.Cell("-" if x.level is None else numbers.significant(x.level, 2), value=x.level),
            d.Cell(x.detail),
        )
        for x in doc.dropped
    )
    return d.Table("dropped", d.columns(names, ("round", "p", "level")), rows)


def _safety(doc: TuneReport) -> d.Verdicts:
    safe = sum(s.safe for s in doc.safety)
    title = (
        f"safety (crash tests in a VM, run {doc.safety_run}): {safe} of {len(doc.safety)} "
        "configs lost nothing"
    )
    items = tuple(
        d.Verdict(
            f"{'safe' if s.safe else 'UNSAFE'}: {s.config}", (s.evidence,), "" if s.safe else "warn"
        )  # fmt: skip
        for s in doc.safety
    )
    return d.Verdicts(items, title)


def blocks(doc: TuneReport) -> list[d.Block]:
    """The end of a race for people: the same facts as the JSON."""
    per_type = ", ".join(f"{k} {v}" for k, v in doc.space.per_type.items())
    saved = 1 - doc.trials / doc.grid_trials if doc.grid_trials else 0.0
    out: list[d.Block] = [
        d.Title(
            f"fsbench tune: run {doc.run_id}, {doc.workload} ({doc.status})",
            f"fsbench tune run {doc.run_id} ({doc.status}): {doc.workload}, scale {doc.scale}, "
            f"{doc.metric} ({doc.better} is better)",
        ),
        d.facts([f"space: {doc.space.total} configs ({per_type})", doc.budget()]),
        _winners(doc) if doc.winners else d.facts([NOTHING_LEFT]),
    ]
    if doc.safety:
        out.append(_safety(doc))
    if doc.dropped:
        out.append(_dropped(doc))
    out.append(
        d.facts(
            [
                f"trials: {doc.trials} counted (+{doc.warmup_trials} warm-up) against "
                f"{doc.grid_trials} for a full grid at n={doc.grid_n} "
                f"({numbers.percent(saved)} saved)"
            ]
        )
    )
    why = doc.why_block()
    if why is not None:
        out.append(why)
    out.append(d.Notes((f"method: {doc.method}",)))
    if doc.rerun:
        out.append(d.Preformatted("check it against the defaults", doc.rerun))
    return out


def records(doc: TuneReport) -> d.Records:
    """One record per config: still in the race (with its mean and ratio to the leader) or
    dropped (with the round, the test and its p)."""
    rows: list[tuple[Any, ...]] = []
    for w in doc.winners:
        ci, ratio_ci = w.ci95 or (None, None), w.ratio_ci or (None, None)
        rows.append((w.config, w.spec, "in the race", None, None, None, None, None, w.n, w.mean,
                     ci[0], ci[1], w.ratio, ratio_ci[0], ratio_ci[1], w.equivalent,
                     doc.values.get(w.config)))  # fmt: skip
    for x in doc.dropped:
        rows.append((x.config, x.spec, "dropped", x.round, x.reason, x.test, x.p, x.level,
                     None, None, None, None, None, None, None, None,
                     doc.values.get(x.config)))  # fmt: skip
    return d.Records(RACE_CSV, tuple(rows))


def race_document(doc: TuneReport) -> RaceDocument:
    return RaceDocument(
        kind="race",
        title=f"fsbench tune run {doc.run_id}",
        blocks=tuple(blocks(doc)),
        payload=doc.model_dump(mode="json"),
        records=records(doc),
        race=doc,
    )


def report(store: Store, run_id: int, wants: d.Wants) -> RaceDocument:
    """The tune run kind's document (`fsbench report` of a race)."""
    return race_document(document(store, run_id))
