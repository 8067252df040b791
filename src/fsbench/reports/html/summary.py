"""The summary: counts at a glance and every verdict of the run's tables, winners first
in the order of the tables."""

from __future__ import annotations

from collections.abc import Sequence

from fsbench.records import TrialRecord
from fsbench.reports.html.markup import badge, e, head, table, tag
from fsbench.reports.ranking import NO_CLEAR, RULE, Verdict, fmt_p
from fsbench.reports.rows import Row
from fsbench.reports.tables import Table


def _verdict_detail(v: Verdict) -> str:
    p = "n < 2" if v.p_adjusted is None else fmt_p(v.p_adjusted)
    if v.significant:
        return tag("strong", e(v.best)) + e(
            f" {v.margin} vs {v.runner_up} ({v.better} is better; Welch {p}, Holm)"
        )
    return e(f"closest: {v.best} vs {v.runner_up}, {p}")


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
    tables: Sequence[Table], rows: Sequence[Row], trials: Sequence[TrialRecord]
) -> str:
    counts: dict[str, int] = {}
    for t in trials:
        counts[t.status] = counts.get(t.status, 0) + 1
    configs = list(dict.fromkeys(t.config for t in trials))
    wls = list(dict.fromkeys(t.workload for t in trials))
    cells = len(
        {(r.host, r.config, r.chain, r.workload, repr({**r.params, **r.knobs})) for r in rows}
    )
    warmups = sum(1 for t in trials if t.warmup)
    entries: list[tuple[Table, str, Verdict]] = []
    for tb in tables:
        for col, v in zip(tb.columns, tb.verdicts, strict=False):
            if v is not None:
                entries.append((tb, col, v))
    significant = sum(1 for _, _, v in entries if v.significant)
    stats = [
        (str(len(configs)), "configs"),
        (str(len(wls)), "workloads" if len(wls) != 1 else "workload"),
        (str(cells), "cells"),
        (str(len(trials)), "trials" + (f" ({warmups} warm-up)" if warmups else "")),
        (str(counts.get("ok", 0)), "ok"),
        (str(counts.get("unsupported", 0)), "unsupported"),
        (str(counts.get("failed", 0)), "failed"),
        (f"{significant}/{len(entries)}", "clear winners"),
    ]
    parts = [_tiles(stats)]
    if entries:
        body = []
        for tb, col, v in entries:
            verdict = (
                badge("clear winner", "best")
                if v.significant
                else badge(NO_CLEAR if v.tested else "untested", "quiet")
            )
            body.append(
                tag(
                    "tr",
                    tag("td", e(tb.workload + (f" ({tb.chain})" if tb.chain else "")))
                    + tag("td", e(tb.metric if tb.metric else col))
                    + tag("td", e(col if tb.metric else ""))
                    + tag("td", verdict, class_="nowrap")
                    + tag("td", _verdict_detail(v), class_=None if v.significant else "quiet"),
                    class_="sig" if v.significant else None,
                )
            )
        header = head("workload", "metric", "condition", "verdict", "evidence")
        parts.append(table(header, body, class_="plain verdicts"))
        parts.append(tag("p", e(f"Verdict: {RULE}; otherwise {NO_CLEAR}."), class_="legend"))
    return "".join(parts)
