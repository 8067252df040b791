"""The document of a bisection, from the store alone: the first bad commit (subject,
author date), each commit's evidence (n, mean, 95% CI, verdict, build and measure seconds),
the endpoints' config differences, the `git bisect log`, the total time; and a chart of the
metric over the commits tested, in history order, with the endpoints as bands.

Pure functions of a stored run (its run kind's facts, `BisectFacts` of vm/bisect.py, and
its trials); `report` is the bisect run kind's document builder (`fsbench report`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fsbench.analysis.stats import summarize
from fsbench.reports import document as d
from fsbench.store.records import RunRecord, TrialRecord
from fsbench.store.results import Store
from fsbench.store.values import counted_values
from fsbench.system import knobs, numbers

STEP_COLUMNS = d.columns(
    ("commit", "role", "n", "mean", "95% CI", "verdict", "build s", "measure s"),
    numeric=("n", "mean", "95% CI", "build s", "measure s"),
)
CSV_COLUMNS = ("commit", "role", "n", "mean", "ci_low", "ci_high", "verdict", "unit")


@dataclass(frozen=True, kw_only=True)
class BisectionDocument(d.Document):
    data: dict[str, Any]  # its JSON: the facts and each commit's evidence


def facts(run: RunRecord) -> dict[str, Any]:
    """The bisection's facts (its run kind's, in runs.facts)."""
    return dict(run.facts or {})


def values_of(
    trials: Sequence[TrialRecord], commit: str, metric: str, seqs: Sequence[int] | None = None
) -> list[float]:
    """The counted values of `metric` measured under `commit` (its knob kernel), of the
    trials `seqs` when given (an endpoint and its recheck are the same commit)."""
    mine = [
        t
        for t in trials
        if t.knobs.get(knobs.KERNEL) == commit[:12] and (seqs is None or t.seq in seqs)
    ]
    return counted_values(mine, metric)


def as_json(run: RunRecord, trials: Sequence[TrialRecord]) -> dict[str, Any]:
    """What --json prints and the renderers show."""
    f = facts(run)
    metric = str(f.get("metric", ""))
    steps = []
    for step in f.get("steps", []):
        vals = values_of(trials, step["commit"], metric, step.get("seqs"))
        s = summarize(vals)
        steps.append(
            {
                **step,
                "n": s.n,
                "mean": s.mean,
                "ci95": list(s.ci95) if s.ci95 else None,
            }
        )
    return {
        "run": run.id,
        "status": run.status,
        "linux": f.get("linux"),
        "good": f.get("good"),
        "bad": f.get("bad"),
        "metric": metric,
        "unit": f.get("unit", ""),
        "first_bad": f.get("first_bad"),
        "stopped": f.get("stopped", ""),
        "range_left": f.get("range_left", []),
        "confounders": f.get("confounders", []),
        "accel": run.target.get("accel"),
        "steps": steps,
        "bisect_log": f.get("log", ""),
        "order": f.get("order", []),
        "seconds": f.get("seconds"),
        "max_reps": f.get("max_reps"),
    }


def headline(report: dict[str, Any]) -> str:
    """The first bad commit, or why there is none."""
    first = report.get("first_bad")
    if first:
        return f"first bad commit: {first['commit'][:12]} {first['subject']} ({first['date']})"
    return f"no first bad commit: {report.get('stopped') or 'not finished'}"


def budget(report: dict[str, Any]) -> str:
    """The bisection's budget in words, as every format states it."""
    return f"budget: up to {report.get('max_reps') or '?'} repetitions per commit"


def step_cells(step: dict[str, Any], mark: str = "") -> tuple[d.Cell, ...]:
    """One commit's row of evidence (`mark`: its footnote's, after the verdict)."""
    verdict = step.get("verdict") or "-"
    return (
        d.Cell(step["commit"][:12], value=step["commit"]),
        d.Cell(step["role"]),
        d.Cell(str(step["n"]), value=step["n"]),
        d.Cell(numbers.number(step["mean"]), value=step["mean"]),
        d.Cell(numbers.interval(step.get("ci95"), "-")),
        d.Cell(f"{verdict} {mark}" if mark else verdict, TONES.get(verdict, "")),
        d.Cell(numbers.whole(step.get("build_seconds") or 0)),
        d.Cell(numbers.whole(step.get("measure_seconds") or 0)),
    )


TONES: dict[str, d.Tone] = {"good": "good", "bad": "bad"}


def steps_table(report: dict[str, Any]) -> d.Table:
    """Every commit measured, in order; a build's error or the gate's reason a footnote."""
    notes: list[str] = []
    rows = []
    for s in report["steps"]:
        gate = s.get("gate") or {}
        said = [s["error"].splitlines()[0][:100]] if s.get("error") else []
        if gate.get("note") and s["role"] not in ("good", "bad"):
            said.append(gate["note"])
        marks = []
        for note in said:
            notes.append(f"{s['commit'][:12]}: {note}")
            marks.append(f"[{len(notes)}]")
        rows.append(step_cells(s, " ".join(marks)))
    return d.Table("Commits measured", STEP_COLUMNS, tuple(rows), footnotes=tuple(notes))


def chart(report: dict[str, Any]) -> d.Chart:
    """The metric over the commits tested, in history order (good first), each a mean with
    its 95% CI; the endpoints' CIs as bands."""
    history: Sequence[str] = report.get("order") or []
    steps = {s["commit"]: s for s in report["steps"] if s["role"] == "step" and s["n"]}
    ends = {s["role"]: s for s in report["steps"] if s["role"] in ("good", "bad") and s["n"]}
    bands = tuple(
        d.Interval(f"{role} (95% CI)", e["ci95"][0], e["ci95"][1], TONES[role])
        for role in ("good", "bad")
        if (e := ends.get(role)) and e.get("ci95")
    )
    points = []
    for i, commit in enumerate(history):
        if commit in steps:
            s = steps[commit]
            lo, hi = s["ci95"] or (s["mean"], s["mean"])
            tone = TONES.get(s["verdict"], "")
            points.append(d.Interval(commit[:7], lo, hi, tone, x=i, mean=s["mean"]))
    return d.Chart(
        "bisect",
        f"{report['metric']} over the commits tested",
        "commits tested, in history order (good -> bad)",
        f"{report['metric']} ({report['unit']})",
        tuple(points),
        bands,
    )


def blocks(report: dict[str, Any]) -> list[d.Block]:
    facts = [
        f"metric {report['metric']} ({report['unit']}), good {str(report['good'])[:12]}, "
        f"bad {str(report['bad'])[:12]}, accel {report.get('accel')}; {budget(report)}",
        *(f"config differs between the endpoints: {c}" for c in report["confounders"]),
    ]
    out: list[d.Block] = [
        d.Title(f"fsbench bisect: run {report['run']} ({report['status']})"),
        d.Verdicts((d.Verdict(headline(report)),)),
        d.facts(facts),
    ]
    if any(s["n"] for s in report["steps"]):
        out.append(chart(report))
    out.append(steps_table(report))
    if report.get("range_left"):
        out.append(d.facts([f"range left: {', '.join(c[:12] for c in report['range_left'])}"]))
    out.append(d.Preformatted("git bisect log", str(report["bisect_log"])))
    if report.get("seconds") is not None:
        out.append(d.facts([f"total {numbers.seconds(report['seconds'])}"]))
    return out


def records(report: dict[str, Any]) -> d.Records:
    """One record per commit measured."""
    rows = []
    for s in report["steps"]:
        ci = s.get("ci95") or (None, None)
        rows.append((s["commit"], s["role"], s["n"], s["mean"], ci[0], ci[1],
                     s.get("verdict") or "", report["unit"]))  # fmt: skip
    return d.Records(CSV_COLUMNS, tuple(rows))


def document(run: RunRecord, trials: Sequence[TrialRecord]) -> BisectionDocument:
    data = as_json(run, trials)
    return BisectionDocument(
        kind="bisection",
        title=f"fsbench bisect run {run.id}",
        blocks=tuple(blocks(data)),
        payload=data,
        records=records(data),
        data=data,
    )


def report(store: Store, run_id: int, wants: d.Wants) -> BisectionDocument:
    """The bisect run kind's document (`fsbench report` of a bisection)."""
    return document(store.get_run(run_id), store.get_trials(run_id))
