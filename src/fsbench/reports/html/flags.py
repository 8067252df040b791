"""Validity flags: per cell and flag, which repetitions, its meaning (the one registry,
fsbench.analysis.validity) and the first detail. Trial flags come from the trials' provenance;
cell flags (outliers, not-converged, order-effect, below-calibration) from the rows."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from fsbench.analysis import validity
from fsbench.analysis.rows import Row
from fsbench.reports.html.markup import badge, e, head, table, tag, trial_label, varying, where
from fsbench.reports.tables import dims_of, label_of
from fsbench.store import trialfacts
from fsbench.store.records import TrialRecord

Key = tuple[str, ...]  # config, chain, workload, dimensions, flag


def _row_flags(rows: Sequence[Row]) -> dict[Key, tuple[str, dict[str, Any]]]:
    """A row flag once per cell, flag and detail, said of the metrics it concerns (all of
    the cell's unless some only): (..., flag) -> (detail, dimensions)."""
    metrics: dict[Key, list[str]] = {}
    every: dict[Key, list[str]] = {}
    found: dict[Key, tuple[str, str, dict[str, Any]]] = {}
    for r in rows:
        cell: Key = (label_of(r), r.chain, r.workload, json.dumps(dims_of(r), default=str))
        every.setdefault(cell, []).append(r.metric or "")
        for flag, detail in r.flags.items():
            key: Key = (*cell, flag, str(detail))
            metrics.setdefault(key, []).append(r.metric or "")
            found.setdefault(key, (flag, str(detail), dims_of(r)))
    out: dict[Key, tuple[str, dict[str, Any]]] = {}
    for key, (flag, detail, dims) in found.items():
        some = metrics[key] != every[key[:4]] and any(metrics[key])
        text = f"{', '.join(metrics[key])}: {detail}" if some else detail
        out.setdefault((*key[:4], flag), (text, dims))
    return out


def flags_html(rows: Sequence[Row], trials: Sequence[TrialRecord]) -> str:
    flagged: dict[Key, tuple[list[str], str, dict[str, Any]]] = {}
    for t in trials:
        dims = {**t.params, **t.knobs}
        for flag, detail in trialfacts.flags(t.provenance).items():
            key: Key = (trial_label(t), t.chain, t.workload, json.dumps(dims, default=str), flag)
            reps, _, _ = flagged.setdefault(key, ([], str(detail), dims))
            reps.append("warm-up" if t.warmup else str(t.rep))
    for key, (detail, dims) in _row_flags(rows).items():
        flagged.setdefault(key, (["cell"], detail, dims))
    if not flagged:
        return tag("p", "No trial was flagged.", class_="quiet")
    swept = varying(rows)
    out = []
    for (config, chain, workload, _, flag), (reps, detail, dims) in flagged.items():
        meaning = validity.meaning(flag)
        out.append(
            tag(
                "tr",
                tag("th", e(config), scope="row")
                + tag("td", e(where(chain, workload, dims, swept)))
                + tag("td", badge(flag, "st-warn"), title=meaning)
                + tag("td", e(", ".join(dict.fromkeys(reps))), class_="nowrap")
                + tag("td", e(detail) + tag("div", e(meaning), class_="quiet small")),
            )
        )
    return table(head("config", "cell", "flag", "reps", "detail (first)"), out)
