"""The comparison laid out for people, once for every format: its header facts, a table
per workload (a row per cell, the verdict marked), the geometric means, the unmatched
cells, and for hosts compared what differs between them (blocks of reports/document.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from fsbench.analysis.decisions import EQUIVALENT
from fsbench.analysis.rows import Row
from fsbench.reports import document as d
from fsbench.reports import hosts
from fsbench.reports.compare.cells import (
    BETTER,
    NOT_COMPARED,
    WORSE,
    CellComparison,
    CellKey,
    Comparison,
)
from fsbench.reports.tables import fmt_value, run_hosts
from fsbench.store.records import RunRecord
from fsbench.system import numbers

NUMERIC = ("A", "B", "B/A", "p")  # right-aligned columns
GEOMEAN_TITLE = "geometric mean of B/A per workload and metric"
GEOMEAN_HEADER = ("workload", "metric", "cells", "geomean B/A", "verdicts")
GEOMEAN_NUMERIC = ("cells", "geomean B/A")
DIFFERENCES_TITLE = "what differs between these hosts"
SAME_HOSTS = "(nothing: same kernel, CPU, memory, device and tools)"
# How a cell's verdict stands out.
TONES: dict[str, d.Tone] = {
    BETTER: "best",
    WORSE: "worst",
    NOT_COMPARED: "warn",
    EQUIVALENT: "same",
}


def _dims_text(dims: dict[str, Any], names: list[str]) -> str:
    return " ".join(f"{n}={numbers.setting(dims.get(n))}" for n in names)


def ratio_text(c: CellComparison) -> str:
    level = c.ratio_ci_level
    return numbers.ratio(c.ratio, c.ratio_ci if level is not None else None, level)


def p_text(c: CellComparison) -> str:
    """The p of an order; none beside an answer it does not support."""
    if c.verdict not in (BETTER, WORSE) or c.p_adjusted is None:
        return "-"
    return numbers.p_value(c.p_adjusted)


def _side_text(row: Row) -> str:
    return fmt_value(row) if row.values else row.status


def sections(cmp: Comparison) -> list[d.Table]:
    out = []
    for chain, workload in dict.fromkeys((c.key.chain, c.key.workload) for c in cmp.cells):
        group = [c for c in cmp.cells if c.key.workload == workload and c.key.chain == chain]
        names = list(dict.fromkeys(n for c in group for n in c.key.dims()))
        varying = [n for n in names if len({repr(c.key.dims().get(n)) for c in group}) > 1]
        # An empty table or list (a command's env) says nothing in a caption.
        constant = [
            n for n in names if n not in varying and group[0].key.dims().get(n) not in ({}, [])
        ]
        caption = "mean ± 95% CI (n); B/A [the CI its verdict used]"
        if constant:
            caption += " · " + _dims_text(group[0].key.dims(), constant)
        if chain:
            caption += f" · step of {chain.replace('+', ' → ')}"
        first = "host · config" if any(c.key.host for c in group) else "config"
        header = [first, *(["parameters"] if varying else []), "metric", "A", "B", "B/A"]
        header += ["p", "verdict"]
        rows = []
        for c in group:
            metric = c.key.metric or "-"
            if c.unit and c.better:
                metric += f" ({c.unit}, {c.better})"
            row = [c.key.label]
            if varying:
                row.append(_dims_text(c.key.dims(), varying))
            row += [metric, _side_text(c.a), _side_text(c.b), ratio_text(c), p_text(c)]
            rows.append((*d.cells(row), d.Cell(c.text, TONES.get(c.verdict, ""))))
        title = f"{workload}{f' ({chain})' if chain else ''}"
        out.append(d.Table(title, d.columns(header, NUMERIC), tuple(rows), caption=caption))
    return out


def header_lines(a: RunRecord, b: RunRecord, cmp: Comparison) -> list[str]:
    lines = [
        f"{side}: run {r.id} ({r.name}, {r.status}) {r.created_at[:19].replace('T', ' ')} UTC, "
        f"{_where(r)}, fsbench {r.fsbench_version}"
        for side, r in (("A", a), ("B", b))
    ]
    for diff in cmp.differences:
        lines.append(f"differs: {diff['what']}: {diff['a']} → {diff['b']}")
    lines.append(
        f"verdict: B better or worse than A by Welch's t-test on the log scale "
        f"(Benjamini-Bogomolov over the {cmp.compared} cells compared, {cmp.alpha:g}) or by "
        "counts that do not vary; "
        f"equivalent when the ratio's 90% CI is within ±{numbers.percent(cmp.margin)}; "
        "otherwise undecided"
        + ("" if cmp.all_metrics else " (headline metrics; --all-metrics for every one)")
    )
    return lines


def geomeans(cmp: Comparison) -> d.Table:
    rows = []
    for g in cmp.geomeans:
        counts = ", ".join(f"{n} {v}" for v, n in g.counts.items())
        rows.append(
            d.cells(
                [
                    f"{g.workload}{f' ({g.chain})' if g.chain else ''}",
                    f"{g.metric} ({g.unit}, {g.better})" if g.unit else g.metric,
                    str(g.cells),
                    g.text,
                    counts,
                ]
            )
        )
    return d.Table(GEOMEAN_TITLE, d.columns(GEOMEAN_HEADER, GEOMEAN_NUMERIC), tuple(rows))


def unmatched_lines(keys: list[CellKey]) -> list[str]:
    """One line per cell (metrics folded together)."""
    cells: dict[tuple[str, str, str, str, str], list[str]] = {}
    for k in keys:
        cells.setdefault((k.label, k.chain, k.workload, k.params, k.knobs), []).append(k.metric)
    lines = []
    for (label, chain, workload, params, knobs), metrics in cells.items():
        dims = {**json.loads(params), **json.loads(knobs)}
        what = " ".join(f"{n}={numbers.setting(v)}" for n, v in dims.items() if v not in ({}, []))
        wl = f"{workload} ({chain})" if chain else workload
        shown = ", ".join(m for m in metrics if m) or "no metrics"
        lines.append(f"{label} · {wl} · {what} · {shown}")
    return lines


def unmatched(cmp: Comparison) -> list[d.Facts]:
    """The cells of each side that the other lacks."""
    return [
        d.facts(unmatched_lines(keys), f"only in {side} (not compared)")
        for side, keys in (("A", cmp.only_a), ("B", cmp.only_b))
        if keys
    ]


def differences(machines: Sequence[hosts.HostFacts]) -> d.Table:
    """What differs between the hosts compared (--by host or --by group)."""
    names = [f"{h.name} ({', '.join(h.groups)})" if h.groups else h.name for h in machines]
    found = hosts.differences(list(machines))
    rows = [d.cells([fact, *(values[h.name] for h in machines)]) for fact, values in found]
    if not found:
        rows = [d.cells([SAME_HOSTS, *("" for _ in machines)])]
    return d.Table(DIFFERENCES_TITLE, d.columns(["fact", *names]), tuple(rows))


def blocks(
    a: RunRecord, b: RunRecord, cmp: Comparison, machines: Sequence[hosts.HostFacts] = ()
) -> list[d.Block]:
    """The comparison for people, in order."""
    out: list[d.Block] = [
        d.Title(f"fsbench compare: run {a.id} (A) vs run {b.id} (B)"),
        d.facts(header_lines(a, b, cmp)),
        *sections(cmp),
    ]
    if cmp.geomeans:
        out.append(geomeans(cmp))
    out += unmatched(cmp)
    if machines:
        out.append(differences(machines))
    return out


def _where(run: RunRecord) -> str:
    names = run_hosts(run)
    if names is not None:
        return f"{len(names)} hosts"
    return f"host Linux {run.host.shown('kernel')}"
