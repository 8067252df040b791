"""The document of an explain run (`fsbench explain RUN`, `fsbench report` of it): per pair
of configs, the mechanisms the tracers measured, ranked (analysis/explain.py), the account
of the gap in the threads' time, the source run's verdict it explains, the top off-CPU
stacks and kernel symbols of each config, the two configs' stacks compared (a
differential flame graph) and their block requests' sizes and queue depths side by side
(explain_views.py); and whether the instrumented trials' own metric
fell far outside the counted ones (a tracer that changed what it measured)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from fsbench.analysis import explain as mechanisms
from fsbench.analysis.decisions import Decision
from fsbench.analysis.design import design_of
from fsbench.analysis.explain import Explanation, Found
from fsbench.analysis.history import Series
from fsbench.analysis.rows import Row
from fsbench.execute.explain import ExplainFacts
from fsbench.reports import document as d
from fsbench.reports import explain_views as views
from fsbench.reports import source
from fsbench.store import runkinds
from fsbench.store.records import RunRecord, TrialRecord
from fsbench.store.results import Store
from fsbench.system import numbers
from fsbench.system.monitors.offcpu import IDLE, wait_class

# How far outside the counted trials' range an instrumented trial's metric may fall (as a
# share of it) before the report says the tracers changed what they measured.
OUTSIDE = 0.10
TOP = 5  # stacks and symbols shown per config


def headlines(rows: Sequence[Row]) -> dict[str, str]:
    """Each workload's first headline metric."""
    return {r.workload: r.metric for r in rows if r.headline == 0 and r.metric}


def _ratio(m: Found) -> str:
    if m.ratio is None:
        return "-"
    text = f"{numbers.number(m.ratio)}x"
    return f"{text} ({numbers.interval(m.ci)})" if m.ci else text


def _value(m: Found, side: int) -> str:
    value = m.means[side]
    return numbers.duration(value) if m.metric.endswith("_s") else numbers.number(value)


TONES: dict[str, d.Tone] = {"different": "marked", "equivalent": "same", "undecided": "muted"}


def table(e: Explanation, source_line: str) -> d.Table:
    rows = tuple(
        (
            d.Cell(m.label),
            d.Cell(_value(m, 0), value=m.means[0]),
            d.Cell(_value(m, 1), value=m.means[1]),
            d.Cell(_ratio(m), value=m.ratio),
            d.Cell(m.verdict, TONES.get(m.verdict, "")),
        )
        for m in e.mechanisms
    )
    chain, workload, dims = e.key
    caption = f"{account_line(e)}; {source_line}" if source_line else account_line(e)
    return d.Table(
        f"{chain or workload} {dims}: {e.b} against {e.a}, per {e.per}",
        d.columns(["mechanism", e.a, e.b, f"{e.b} / {e.a}", "verdict"], [e.a, e.b]),
        rows,
        caption=caption,
        legend=f"values per {e.per} of the headline {e.headline}, mean of {e.n[0]} and "
        f"{e.n[1]} instrumented trials; ratio with its interval",
    )


def account_line(e: Explanation) -> str:
    """'explained: 83% of 2.90 ms per file' (the decided time parts' share of the gap)."""
    if e.gap is None:
        return "explained: no thread times measured"
    gap = f"{numbers.duration(abs(e.gap))} per {e.per}"
    if e.explained is None:
        return f"explained: no gap in thread time ({gap})"
    return f"explained: {numbers.percent(e.explained)} of {gap} thread time"


def summary(e: Explanation) -> str:
    """The pair's named mechanisms, most different first: what a verdict's line says."""
    named = e.named[:3]
    if not named:
        return f"{e.b} against {e.a}: no mechanism decided different"
    said = ", ".join(f"{m.label} {numbers.number(m.ratio or 0)}x as much" for m in named)
    return f"{e.b} against {e.a}: {said} ({account_line(e)})"


def source_verdict(decisions: Mapping[Any, Decision], e: Explanation) -> str:
    """The source run's verdict on the pair's headline metric (what is explained)."""
    decision = decisions.get((*e.key, e.headline))
    if decision is None:
        return ""
    for pair in decision.pairs:
        if {pair.a, pair.b} == {e.a, e.b}:
            better = f"{pair.winner} better" if pair.winner else pair.kind
            return f"counted run: {e.headline} {better}, {pair.b} / {pair.a} {_plain(pair.ratio)}"
    return ""


def _plain(r: float | None) -> str:
    return "-" if r is None else f"{numbers.number(r)}x"


def outside(rows: Sequence[Row], counted: Sequence[Row]) -> list[str]:
    """Configs whose instrumented headline values fell far outside the counted trials'."""
    by = {(r.config, r.workload, r.metric, str(r.params)): r for r in counted if r.values}
    out = []
    for r in rows:
        if r.headline != 0 or not r.values:
            continue
        theirs = by.get((r.config, r.workload, r.metric, str(r.params)))
        if theirs is None:
            continue
        low, high = min(theirs.values), max(theirs.values)
        mean = sum(r.values) / len(r.values)
        if mean < low * (1 - OUTSIDE) or mean > high * (1 + OUTSIDE):
            out.append(
                f"{r.config} {r.workload}: instrumented {r.metric} {numbers.number(mean)} is "
                f"outside the counted {numbers.number(low)}-{numbers.number(high)} by more "
                f"than {numbers.percent(OUTSIDE)}: the tracers changed what they measure"
            )
    return out


def folded_of(
    trials: Sequence[TrialRecord], maps: Mapping[int, Sequence[Any]], config: str, name: str
) -> list[Mapping[str, float]]:
    """A config's folded stacks of one tracer (offcpu, profile), a map per trial."""
    return [
        m.values
        for t in trials
        if t.config == config and t.id is not None
        for m in maps.get(t.id, [])
        if m.name == name
    ]


def stacks(
    trials: Sequence[TrialRecord], maps: Mapping[int, Sequence[Any]], config: str
) -> dict[str, list[tuple[str, float]]]:
    """A config's top off-CPU stacks (seconds, idle waits left out) and profile symbols."""
    off = [
        {k: v for k, v in m.items() if not _idle(k)}
        for m in folded_of(trials, maps, config, "offcpu")
    ]
    return {
        "offcpu": mechanisms.top_stacks(off, TOP),
        "profile": mechanisms.top_symbols(folded_of(trials, maps, config, "profile"), TOP),
    }


def profile_line(
    e: Explanation, diff: Sequence[tuple[str, float, float]], samples: list[float]
) -> str:
    """'profile, b against a (samples in a function and below, of 410 and 388):
    btrfs_sync_file 31% vs 0%; ...': described, not decided (one profile per trial)."""
    said = "; ".join(f"{f} {numbers.percent(sb)} vs {numbers.percent(sa)}" for f, sa, sb in diff)
    of = f"of {samples[1]:.0f} and {samples[0]:.0f}"
    return f"profile, {e.b} against {e.a} (samples in a function and below, {of}): {said}"


def _idle(stack: str) -> bool:
    return wait_class(stack) == IDLE


@dataclass(frozen=True)
class Explained:
    """An explain run read back: its facts, trials and rows, and its explanations."""

    run: RunRecord
    facts: ExplainFacts
    trials: list[TrialRecord]
    rows: list[Row]
    found: list[Explanation]


def explained(store: Store, run: RunRecord) -> Explained:
    facts = ExplainFacts.model_validate(run.facts or {})
    trials = source.trials_of(store, run)
    rows = source.rows_of(run, trials)
    pair = [(facts.pair[0], facts.pair[1])] if len(facts.pair) == 2 else None
    order = source.config_order(run)
    found = mechanisms.explain(trials, headlines(rows), design_of(run.plan), pair, order)
    return Explained(run, facts, trials, rows, found)


def latest_of(store: Store, source_id: int) -> RunRecord | None:
    """The last explain run of a run that measured anything (finished or interrupted)."""
    runs = [
        r
        for r in store.list_runs()
        if r.kind == runkinds.EXPLAIN.name
        and (r.facts or {}).get("source") == source_id
        and r.status != "running"
    ]
    return runs[-1] if runs else None


def across(
    store: Store, before: int, after: int, config: str, cell: mechanisms.GroupKey
) -> Explanation | None:
    """A config's instrumented trials of one cell in the last explain runs of two runs (a
    change point's two sides) compared as a pair's are: `run <after>` against `run
    <before>`. None when either run has no explain run or no such trial."""
    first, last = latest_of(store, before), latest_of(store, after)
    if first is None or last is None:
        return None
    runs = (first, last)
    labels = (f"run {before}", f"run {after}")
    trials: list[TrialRecord] = []
    heads: dict[str, str] = {}
    for run, label in zip(runs, labels, strict=True):
        mine = [
            t
            for t in source.trials_of(store, run)
            if t.config == config and mechanisms.group_key(t) == cell
        ]
        trials += [replace(t, config=label) for t in mine]
        heads.update(headlines(source.rows_of(run, mine)))
    found = mechanisms.explain(trials, heads, design_of(runs[1].plan), [labels])
    return found[0] if found else None


def changes_why(store: Store, series: Sequence[Series]) -> None:
    """Under every change point whose two runs were explained, the mechanisms that differ
    between them (`across`; each pair of runs and cell read once)."""
    said: dict[tuple[int, int, str, mechanisms.GroupKey], str] = {}
    for s in series:
        for c in s.changes:
            key = (int(c.before_run["run"]), int(c.after_run["run"]), s.config, s.cell)
            if key not in said:
                found = across(store, *key)
                said[key] = summary(found) if found is not None else ""
            c.why = said[key]


def caption(explain_run: int) -> str:
    """What says where an account under a verdict comes from."""
    return f"fsbench explain {explain_run}: instrumented trials, never counted"


def tone(e: Explanation) -> d.Tone:
    return "good" if e.named else "muted"


def report(store: Store, run_id: int, wants: d.Wants) -> d.Document:
    """An explain run's document, which every format of `fsbench report` writes."""
    read = explained(store, store.get_run(run_id))
    run, facts, trials, rows, found = read.run, read.facts, read.trials, read.rows, read.found
    counted = source.load(store, facts.source)
    maps = store.get_folded([t.id for t in trials if t.id is not None])
    blocks: list[d.Block] = [
        d.Title(
            f"fsbench explain {run_id}: why the configs of run {facts.source} differ",
            f"instrumented pass ({run.status}) {run.created_at}, fsbench {run.fsbench_version}",
        ),
        d.facts(
            [
                f"explains run {facts.source} ({counted.run.name})",
                f"tracers: {', '.join(facts.tracers)}",
                *outside(rows, counted.rows),
            ]
        ),
    ]
    verdict_items = []
    payload = []
    for e in found:
        line = source_verdict(counted.decisions, e)
        blocks.append(table(e, line))
        drawn = views.views(e, trials, maps)
        blocks += drawn.values()
        tops = {c: stacks(trials, maps, c) for c in (e.a, e.b)}
        profiles = [folded_of(trials, maps, c, "profile") for c in (e.a, e.b)]
        diff = mechanisms.profile_diff(profiles[0], profiles[1], TOP)
        samples = [sum(sum(m.values()) for m in p) for p in profiles]
        details = [
            f"{c} {what}: " + "; ".join(f"{_short(s)} {_top_value(what, v)}" for s, v in top)
            for c, found_tops in tops.items()
            for what, top in found_tops.items()
            if top
        ] + ([profile_line(e, diff, samples)] if diff else [])
        verdict_items.append(d.Verdict(summary(e), tuple(details), tone(e)))
        payload.append(
            {
                **e.as_dict(),
                "source_verdict": line,
                "top": _top_payload(tops),
                "profile_diff": [{"function": f, "shares": [sa, sb]} for f, sa, sb in diff],
                **views.payload(drawn),
            }
        )
    if verdict_items:
        blocks.append(d.Verdicts(tuple(verdict_items), "mechanisms"))
    else:
        blocks.append(d.Notes(("explain: no pair of configs with instrumented trials",)))
    title = f"fsbench explain {run_id} (run {facts.source})"
    return d.Document(
        "explanation", title, tuple(blocks), {"run": run_id, "source": facts.source,
                                               "explanation": payload}
    )  # fmt: skip


def _short(stack: str, frames: int = 4) -> str:
    """A folded stack's leaf end, the frames that say what it waited in."""
    parts = [p for p in stack.split(";") if p not in ("schedule", "__schedule")]
    return "<-".join(reversed(parts[-frames:]))


def _top_value(what: str, value: float) -> str:
    return numbers.duration(value) if what == "offcpu" else numbers.share(value)


def _top_payload(
    tops: Mapping[str, Mapping[str, list[tuple[str, float]]]],
) -> dict[str, dict[str, list[dict[str, Any]]]]:
    return {
        config: {
            what: [{"stack": s, "value": v} for s, v in top] for what, top in found_tops.items()
        }
        for config, found_tops in tops.items()
    }
