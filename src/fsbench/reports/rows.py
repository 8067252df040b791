"""From stored trials to report rows: one row per (config, workload, params, metric).

This is the stable interface of `fsbench report --format json`; every renderer (table,
markdown, CSV) is a pure function of these rows.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from fsbench.stats import summarize
from fsbench.store import RunRecord, TrialRecord


@dataclass
class Row:
    config: str
    fs: str
    workload: str
    chain: str  # the chain the workload ran in ("" when alone)
    knobs: dict[str, str]  # sysctls, scheduler, contention set for the trial
    params: dict[str, Any]
    metric: str | None
    unit: str | None
    better: str | None
    status: str  # ok | unsupported | failed
    message: str
    n: int
    mean: float | None
    sd: float | None
    ci95: list[float] | None
    cv: float | None
    values: list[float]
    trials: dict[str, int]  # status -> count
    option_notes: list[dict[str, str]] = field(default_factory=list)
    flags: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _cell_id(t: TrialRecord) -> tuple[str, str, str, str]:
    dims = {**t.params, **{f"knob:{k}": v for k, v in t.knobs.items()}}
    return (t.config, t.chain, t.workload, json.dumps(dims, sort_keys=True))


def _status(counts: dict[str, int]) -> str:
    if counts.get("ok"):
        return "ok"
    if counts.get("unsupported"):
        return "unsupported"
    return "failed"


def build_rows(trials: list[TrialRecord], convergence: dict[str, Any] | None = None) -> list[Row]:
    """Rows in schedule order of first appearance (configs in plan order). With the run's
    convergence record (--reps auto), cells whose CI missed the target are flagged."""
    convergence = convergence or {}
    cells: dict[tuple[str, str, str, str], list[TrialRecord]] = {}
    for t in trials:
        cells.setdefault(_cell_id(t), []).append(t)
    # Metric names and units per workload, from any successful trial.
    wl_metrics: dict[str, dict[str, tuple[str, str]]] = {}
    for t in trials:
        if t.status == "ok":
            for m in t.metrics:
                wl_metrics.setdefault(t.workload, {}).setdefault(m.name, (m.unit, m.better))
    rows: list[Row] = []
    for (config, chain, workload, _), group in cells.items():
        counts: dict[str, int] = {}
        for t in group:
            counts[t.status] = counts.get(t.status, 0) + 1
        status = _status(counts)
        bad = [t for t in group if t.status != "ok"]
        message = bad[0].message if bad else ""
        if status == "ok" and bad:
            message = f"{len(bad)} of {len(group)} trials {bad[0].status}: {bad[0].message}"
        notes: list[dict[str, str]] = []
        flags: dict[str, str] = {}
        for t in group:
            for note in t.provenance.get("option_notes", []):
                if note not in notes:
                    notes.append(note)
            flags.update(t.provenance.get("flags", {}))
        first = group[0]
        conv = convergence.get(first.cell_key)
        if conv and not conv.get("converged", True):
            widths = ", ".join(
                f"{k.split(':')[-1]} ±{v}%"
                for k, v in conv["half_width_pct"].items()
                if k.startswith(f"{workload}:") and v is not None
            )
            flags["not-converged"] = (
                f"CI {widths or 'unknown'} after {conv['reps']} reps "
                f"(target ±{conv['target_pct']:g}%)"
            )
        known = wl_metrics.get(workload, {})
        names: list[str | None] = list(known) or [None]
        for name in names:
            values = [
                m.value for t in group if t.status == "ok" for m in t.metrics if m.name == name
            ]
            s = summarize(values)
            unit, better = known.get(name, (None, None)) if name else (None, None)
            rows.append(
                Row(
                    config=config,
                    fs=first.fs,
                    workload=workload,
                    chain=chain,
                    knobs=first.knobs,
                    params=first.params,
                    metric=name,
                    unit=unit,
                    better=better,
                    status=status,
                    message=message,
                    n=s.n,
                    mean=s.mean,
                    sd=s.sd,
                    ci95=list(s.ci95) if s.ci95 else None,
                    cv=s.cv,
                    values=values,
                    trials=counts,
                    option_notes=notes,
                    flags=flags,
                )
            )
    return rows


def report_document(run: RunRecord, rows: list[Row]) -> dict[str, Any]:
    """The JSON document: `{"run": ID, "rows": [...]}` plus the run's provenance."""
    return {
        "run": run.id,
        "name": run.name,
        "status": run.status,
        "created_at": run.created_at,
        "finished_at": run.finished_at,
        "fsbench_version": run.fsbench_version,
        "host": run.host,
        "target": run.target,
        "rows": [r.as_dict() for r in rows],
    }
