"""The summary: counts at a glance and every verdict of the run's tables, winners first
in the order of the tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fsbench.analysis.decisions import EQUIVALENT, ORDER, Decision
from fsbench.analysis.rows import Row
from fsbench.analysis.verdicts import Key, tally
from fsbench.reports.html.markup import badge, e, head, table, tag
from fsbench.reports.tables import Table
from fsbench.store.records import TrialRecord

# The badge of each kind of answer, and its style.
BADGES = {
    ORDER: ("order", "best"),
    EQUIVALENT: ("equivalent", "equal"),
    "undecided": ("undecided", "quiet"),
}


def _evidence(v: Decision) -> str:
    """Every pair's answer with its evidence, one per line; the ranking first."""
    lines = [tag("strong", e(v.ranking))] if v.kind == ORDER else []
    lines += [e(v.pair_text(p)) for p in v.pairs]
    return "<br>".join(lines)


def _tiles(stats: Sequence[tuple[str, str]]) -> str:
    return tag(
        "div",
        "".join(
            tag(
                "div",
                tag("div", e(n), class_="n") + tag("div", e(label), class_="l"),
                class_="tile",
            )
            for n, label in stats
        ),
        class_="tiles",
    )


def summary_html(
    tables: Sequence[Table],
    rows: Sequence[Row],
    trials: Sequence[TrialRecord],
    decisions: Mapping[Key, Decision],
) -> str:
    # Counted as the run's banner counts them: a cell is one point of the plan's matrix
    # (a chain's steps are one cell) and a trial is one slot of the schedule (a chain's
    # steps are one trial, on one mkfs), so that the two never disagree.
    slots: dict[tuple[str, int], list[TrialRecord]] = {}
    for t in trials:
        slots.setdefault((t.host, t.seq), []).append(t)
    counts: dict[str, int] = {}
    for steps in slots.values():
        # A chain's slot is as bad as its worst step.
        status = next(
            (s for s in ("failed", "unsupported") if any(t.status == s for t in steps)), "ok"
        )
        counts[status] = counts.get(status, 0) + 1
    configs = list(dict.fromkeys(t.config for t in trials))
    wls = list(dict.fromkeys(t.chain or t.workload for t in trials))
    cells = len({(t.host, t.cell_key) for t in trials})
    warmups = sum(1 for steps in slots.values() if steps[0].warmup)
    entries: list[tuple[Table, str, Decision]] = []
    for tb in tables:
        for col, v in zip(tb.columns, tb.verdicts, strict=False):
            # The headline comparisons (alloc's seconds of an allocation that writes
            # nothing are shown in its table, but are no headline of theirs).
            if v is not None and v.headline:
                entries.append((tb, col, v))
    shown = [v for _, _, v in entries]
    pairs = tally(shown)
    total = sum(pairs.values())
    stats = [
        (str(len(configs)), "configs"),
        (str(len(wls)), "workloads" if len(wls) != 1 else "workload"),
        (str(cells), "cells"),
        (str(len(slots)), "trials" + (f" ({warmups} warm-up)" if warmups else "")),
        (str(counts.get("ok", 0)), "ok"),
        (str(counts.get("unsupported", 0)), "unsupported"),
        (str(counts.get("failed", 0)), "failed"),
        (f"{pairs['order'] + pairs['equivalent']}/{total}", "pairs decided"),
        (str(pairs["order"]), "ordered"),
        (str(pairs["equivalent"]), "equivalent"),
    ]
    parts = [_tiles(stats)]
    if entries:
        body = []
        for tb, col, v in entries:
            name, style = BADGES[v.kind]
            body.append(
                tag(
                    "tr",
                    tag("td", e(tb.workload + (f" ({tb.chain})" if tb.chain else "")))
                    + tag("td", e(tb.metric if tb.metric else col))
                    + tag("td", e(col if tb.metric else ""))
                    + tag("td", badge(name, style), class_="nowrap")
                    + tag("td", _evidence(v), class_=None if v.kind == ORDER else "quiet"),
                    class_="sig" if v.kind == ORDER else None,
                )
            )
        header = head("workload", "metric", "condition", "answer", "ranking and evidence")
        parts.append(table(header, body, class_="plain verdicts"))
        legend = next((tb.legend for tb, _, _ in entries if tb.legend), "")
        parts.append(tag("p", e(legend[:1].upper() + legend[1:] + "."), class_="legend"))
    return "".join(parts)
