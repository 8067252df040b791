"""`fsbench compare --format json`: the comparison as a stable JSON document."""

from __future__ import annotations

import json
import math
from typing import Any

from fsbench.analysis.rows import Row
from fsbench.reports.compare.cells import Comparison
from fsbench.store.records import RunRecord


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


def render_compare_json(a: RunRecord, b: RunRecord, cmp: Comparison) -> str:
    return json.dumps(comparison_document(a, b, cmp), indent=2) + "\n"
