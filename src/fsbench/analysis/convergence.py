"""`--reps auto`: when a comparison group has enough repetitions.

A cell is judged on the first of its workload's headline metrics that its trials actually
report (fio's `seq-read` reports read bandwidth, not the write bandwidth listed first), per
step of a chain. A group goes on, all its cells together so that positions stay balanced,
while any cell's 95% CI half-width is wider than the plan's target. A cell whose trials
report no headline metric at all is never taken as converged: it is recorded with the
reason, and the report flags it `not-converged`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fsbench import workloads
from fsbench.analysis.stats import summarize
from fsbench.plan.model import Cell, Plan
from fsbench.store import trialfacts
from fsbench.store.records import TrialRecord


def judged_metric(step: str, trials: Sequence[TrialRecord]) -> str | None:
    """The metric a step is judged on: the first headline metric its ok trials report;
    `seconds` for a workload without headline metrics; None when none is reported."""
    ok = [t for t in trials if t.status == "ok"]
    reported = {m.name for t in ok for m in t.metrics}
    # The headline the runner recorded for the trial's own parameters (fio's seq-read: read
    # bandwidth); else the workload's.
    recorded = next((h for t in ok if (h := trialfacts.headline(t.provenance))), None)
    headline = recorded if recorded is not None else workloads.get(step).headline or ("seconds",)
    return next((name for name in headline if name in reported), None)


def judged_values(cell: Cell, trials: Sequence[TrialRecord]) -> dict[str, list[float] | None]:
    """Per step `workload:metric` -> the counted values (warm-ups left out); None for a
    step whose trials report no headline metric (key `workload:?`)."""
    out: dict[str, list[float] | None] = {}
    mine = [t for t in trials if t.cell_key == cell.key and not t.warmup]
    for name, _ in cell.steps:
        step_trials = [t for t in mine if t.workload == name]
        metric = judged_metric(name, step_trials)
        if metric is None:
            out[f"{name}:?"] = None
            continue
        out[f"{name}:{metric}"] = [
            m.value for t in step_trials if t.status == "ok" for m in t.metrics if m.name == metric
        ]
    return out


def half_width_pct(values: Sequence[float]) -> float | None:
    s = summarize(values)
    if s.half_width is None or not s.mean:
        return None
    return 100.0 * s.half_width / abs(s.mean)


def cell_state(plan: Plan, cell: Cell, trials: Sequence[TrialRecord]) -> dict[str, Any]:
    """Repetitions made, the CI half-width per judged metric, and whether it converged
    (with the reason when it did not)."""
    judged = judged_values(cell, trials)
    widths = {
        key: (half_width_pct(values) if values is not None else None)
        for key, values in judged.items()
    }
    reps = max((t.rep for t in trials if t.cell_key == cell.key), default=0)
    target = 100 * plan.ci_target
    reason = ""
    if any(values is None for values in judged.values()):
        reason = "no headline metric reported"
    elif any(w is None for w in widths.values()):
        reason = "too few values for a confidence interval"
    elif any(w is not None and w > target for w in widths.values()):
        reason = "CI wider than the target"
    return {
        "reps": reps,
        "converged": not reason,
        "reason": reason,
        "half_width_pct": {k: None if v is None else round(v, 2) for k, v in widths.items()},
        "target_pct": target,
    }


def group_needs_more(plan: Plan, cells: Sequence[Cell], trials: Sequence[TrialRecord]) -> bool:
    """Another round for this group: some cell has values and a CI still too wide. Cells
    that report nothing to judge (failed every time, or no headline metric) do not keep a
    group going: more repetitions would not change that."""
    refused = {t.cell_key for t in trials if t.status == "unsupported"}
    for cell in cells:
        if cell.key in refused:
            continue
        state = cell_state(plan, cell, trials)
        if state["reason"] == "CI wider than the target":
            return True
    return False


def convergence(plan: Plan, cells: Sequence[Cell], trials: Sequence[TrialRecord]) -> dict[str, Any]:
    """Per cell key that ran: its state (what the run stores and the report flags)."""
    ran = {t.cell_key for t in trials if t.status != "unsupported"}
    return {cell.key: cell_state(plan, cell, trials) for cell in cells if cell.key in ran}
