"""The document of `fsbench compare`: its blocks (sections.py), its stable JSON (every cell
with both sides, the ratio, its interval and p, the verdict; the hosts compared when they
were) and one CSV record per cell."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fsbench.analysis.design import CONTROLLED
from fsbench.analysis.rows import Row
from fsbench.reports import document as d
from fsbench.reports import hosts
from fsbench.reports.compare.cells import Comparison
from fsbench.reports.compare.sections import blocks
from fsbench.store.records import RunRecord

CSV_COLUMNS = (
    "host", "config", "chain", "workload", "params", "knobs", "metric", "unit", "better",
    "a_status", "a_n", "a_mean", "a_ci95_low", "a_ci95_high", "b_status", "b_n", "b_mean",
    "b_ci95_low", "b_ci95_high", "ratio", "ratio_ci_low", "ratio_ci_high", "ratio_ci_level",
    "p", "p_adjusted", "verdict", "text",
)  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class ComparisonDocument(d.Document):
    a: RunRecord
    b: RunRecord
    comparison: Comparison


def _num(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def _side(row: Row) -> dict[str, Any]:
    return {
        "status": row.status,
        "message": row.message,
        "n": row.n,
        "mean": _num(row.mean),
        "sd": _num(row.sd),
        "ci95": [_num(x) for x in row.ci95] if row.ci95 else None,
        "values": row.values,
        "outliers": row.outliers,
        "min_detectable": _num(row.min_detectable),
        "flags": row.flags,
    }


def _run_summary(run: RunRecord) -> dict[str, Any]:
    return {
        "id": run.id,
        "name": run.name,
        "status": run.status,
        "created_at": run.created_at,
        "fsbench_version": run.fsbench_version,
        "kernel": run.host.kernel,
    }


def comparison_document(a: RunRecord, b: RunRecord, cmp: Comparison) -> dict[str, Any]:
    """The stable JSON structure of `fsbench compare --format json`."""
    return {
        "a": _run_summary(a),
        "b": _run_summary(b),
        "ratio": "mean B / mean A",
        "test": {
            "name": "welch",
            "scale": "log",
            "alpha": cmp.alpha,
            "correction": "benjamini-bogomolov",
            "controls": CONTROLLED,
            "cells": cmp.compared,
        },
        "metrics": "all" if cmp.all_metrics else "headline",
        "differences": cmp.differences,
        "cells": [
            {
                **c.key.as_dict(),
                "unit": c.unit,
                "better": c.better,
                "a": _side(c.a),
                "b": _side(c.b),
                "ratio": _num(c.ratio),
                "ratio_ci": [_num(x) for x in c.ratio_ci] if c.ratio_ci else None,
                "ratio_ci_level": _num(c.ratio_ci_level),
                "p": _num(c.p),
                "p_adjusted": _num(c.p_adjusted),
                "verdict": c.verdict,
                "text": c.text,
            }
            for c in cmp.cells
        ],
        "geomeans": [
            {
                "chain": g.chain,
                "workload": g.workload,
                "metric": g.metric,
                "unit": g.unit,
                "better": g.better,
                "cells": g.cells,
                "ratio": _num(g.ratio),
                "verdicts": g.counts,
            }
            for g in cmp.geomeans
        ],
        "only_a": [k.as_dict() for k in cmp.only_a],
        "only_b": [k.as_dict() for k in cmp.only_b],
    }


def _side_record(row: Row) -> tuple[Any, ...]:
    ci = row.ci95 or (None, None)
    return (row.status, row.n, _num(row.mean), _num(ci[0]), _num(ci[1]))


def records(cmp: Comparison) -> d.Records:
    out = []
    for c in cmp.cells:
        key = c.key.as_dict()
        ci = c.ratio_ci or (None, None)
        out.append(
            (
                *(key[name] for name in CSV_COLUMNS[:7]),
                c.unit,
                c.better,
                *_side_record(c.a),
                *_side_record(c.b),
                _num(c.ratio),
                _num(ci[0]),
                _num(ci[1]),
                _num(c.ratio_ci_level),
                _num(c.p),
                _num(c.p_adjusted),
                c.verdict,
                c.text,
            )  # fmt: skip
        )
    return d.Records(CSV_COLUMNS, tuple(out))


def document(
    a: RunRecord, b: RunRecord, cmp: Comparison, machines: Sequence[hosts.HostFacts] = ()
) -> ComparisonDocument:
    """B against A, for every format; with the hosts compared (--by host or --by group)
    and what differs between them when given."""
    payload = comparison_document(a, b, cmp)
    if machines:
        payload.update(hosts.document(list(machines)))
    return ComparisonDocument(
        kind="comparison",
        title=f"fsbench compare: run {a.id} (A) vs run {b.id} (B)",
        blocks=tuple(blocks(a, b, cmp, machines)),
        payload=payload,
        records=records(cmp),
        a=a,
        b=b,
        comparison=cmp,
    )
