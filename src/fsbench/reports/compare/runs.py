"""Two stored runs side by side (kernel A vs kernel B, today vs last month): the cells
judged, and what differs between the machines and targets they ran on."""

from __future__ import annotations

from typing import Any

from fsbench.analysis.rows import Row
from fsbench.reports.compare.cells import Comparison, compare_rows
from fsbench.store.records import RunRecord

# Facts that differ between any two runs and say nothing about the results.
_INCIDENTAL = {"hostname", "image", "loop_device", "owner_pid", "diskstats_name"}


def compare_runs(
    a: RunRecord, rows_a: list[Row], b: RunRecord, rows_b: list[Row], all_metrics: bool = False
) -> Comparison:
    """compare_rows, plus what differs between the two runs' machines and targets."""
    cmp = compare_rows(rows_a, rows_b, all_metrics)
    cmp.differences = run_differences(a, b)
    return cmp


def run_differences(a: RunRecord, b: RunRecord) -> list[dict[str, Any]]:
    """What differs between the two runs' machines and targets (kernel, tools, device)."""
    diffs = []
    hosts = (a.host.stored(), b.host.stored())  # as stored: a rounded value hides a change
    for section, da, db in (("host", *hosts), ("target", a.target, b.target)):
        flat_a, flat_b = _flatten(da), _flatten(db)
        for name in dict.fromkeys([*flat_a, *flat_b]):
            if name in _INCIDENTAL:
                continue
            if flat_a.get(name) != flat_b.get(name):
                diffs.append(
                    {"what": f"{section}.{name}", "a": flat_a.get(name), "b": flat_b.get(name)}
                )
    if a.fsbench_version != b.fsbench_version:
        diffs.append({"what": "fsbench_version", "a": a.fsbench_version, "b": b.fsbench_version})
    for name in ("scale", "reps"):
        if a.plan.get(name) != b.plan.get(name):
            diffs.append({"what": f"plan.{name}", "a": a.plan.get(name), "b": b.plan.get(name)})
    return diffs


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out
