"""What did not go as asked: cells that did not run (or not every time) with the tool's
or kernel's own words, and options the kernel accepted but did not apply."""

from __future__ import annotations

import json
from collections.abc import Sequence

from fsbench.analysis.rows import Row
from fsbench.reports.html.markup import (
    badge,
    details,
    e,
    head,
    pre,
    status_badge,
    table,
    tag,
    trial_label,
    varying,
    where,
)
from fsbench.reports.tables import dims_of, label_of
from fsbench.store.records import TrialRecord

CellKey = tuple[str, str, str, str]


def _key(config: str, chain: str, workload: str, dims: dict[str, object]) -> CellKey:
    return (config, chain, workload, json.dumps(dims, default=str))


def problems_html(rows: Sequence[Row], trials: Sequence[TrialRecord]) -> str:
    """Cells that did not run (or not every time), with the tool's or kernel's words."""
    cells: dict[CellKey, Row] = {}
    for r in rows:
        if r.status != "ok" or r.message:
            cells.setdefault(_key(label_of(r), r.chain, r.workload, dims_of(r)), r)
    if not cells:
        return tag("p", "Every trial of every cell ran.", class_="quiet")
    swept = varying(rows)
    tool_output: dict[CellKey, str] = {}
    for t in trials:
        if t.status != "ok" and t.detail:
            key = _key(trial_label(t), t.chain, t.workload, {**t.params, **t.knobs})
            tool_output.setdefault(key, t.detail)
    out = []
    for key, r in cells.items():
        counts = ", ".join(f"{n} {s}" for s, n in sorted(r.trials.items()))
        message = e(r.message)
        if key in tool_output:
            message += details("tool output", pre(tool_output[key]))
        out.append(
            tag(
                "tr",
                tag("th", e(label_of(r)), scope="row")
                + tag("td", e(where(r.chain, r.workload, dims_of(r), swept)))
                + tag("td", status_badge(r.status))
                + tag("td", e(counts), class_="nowrap")
                + tag("td", message),
            )
        )
    return table(head("config", "cell", "status", "trials", "message"), out)


def ignored_html(rows: Sequence[Row]) -> str:
    """Options the kernel accepted but did not apply, with the evidence."""
    notes: list[tuple[str, dict[str, str]]] = []
    for r in rows:
        for n in r.option_notes:
            if (r.config, n) not in notes:
                notes.append((r.config, n))
    if not notes:
        return tag("p", "The kernel reported every mkfs and mount option as asked.", class_="quiet")
    out = []
    for config, n in notes:
        kind = "ignored" if n.get("kind") == "ignored" else "not shown by the kernel"
        out.append(
            tag(
                "tr",
                tag("th", e(config), scope="row")
                + tag("td", e(n.get("where")))
                + tag("td", tag("code", e(n.get("option"))))
                + tag("td", badge(kind, "st-warn"))
                + tag("td", tag("code", e(n.get("evidence")))),
            )
        )
    return table(head("config", "where", "option", "outcome", "evidence"), out)
