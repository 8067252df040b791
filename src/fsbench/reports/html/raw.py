"""Raw values: every trial as stored, in schedule order, one collapsed table per workload;
warm-up trials marked (run and stored, not counted)."""

from __future__ import annotations

from collections.abc import Sequence

from fsbench.reports.html.markup import details, e, status_badge, table, tag, trial_label
from fsbench.reports.html.repetitions import WARMUP
from fsbench.store.records import TrialRecord
from fsbench.system import numbers


def _fmt_raw(v: float) -> str:
    if v == int(v) and abs(v) < 1e15:
        return f"{int(v)}"
    return numbers.significant(v, 6)


def raw_html(trials: Sequence[TrialRecord]) -> str:
    out = []
    for chain, wl in dict.fromkeys((t.chain, t.workload) for t in trials):
        ts = [t for t in trials if t.chain == chain and t.workload == wl]
        metrics = list(dict.fromkeys(m.name for t in ts for m in t.metrics))
        dims = list(dict.fromkeys(k for t in ts for k in {**t.params, **t.knobs}))
        varying = [d for d in dims if len({repr({**t.params, **t.knobs}.get(d)) for t in ts}) > 1]
        units = {m.name: m.unit for t in ts for m in t.metrics}
        header = "".join(
            tag("th", e(h), scope="col") for h in ("#", "rep", "config", *varying, "status")
        ) + "".join(
            tag(
                "th",
                e(m) + tag("span", e(units.get(m, "")), class_="unit"),
                scope="col",
                class_="num",
            )
            for m in metrics
        )
        body = []
        for t in ts:
            d = {**t.params, **t.knobs}
            values = {m.name: m.value for m in t.metrics}
            status = e(t.status) if t.status == "ok" else status_badge(t.status, title=t.message)
            rep = tag("span", "warm-up", title=WARMUP) if t.warmup else e(t.rep)
            cells = (
                tag("td", e(t.seq), class_="num")
                + tag("td", rep, class_="num")
                + tag("th", e(trial_label(t)), scope="row")
                + "".join(tag("td", e(d.get(v))) for v in varying)
                + tag("td", status)
                + "".join(
                    tag("td", e(_fmt_raw(values[m])) if m in values else "", class_="num")
                    for m in metrics
                )
            )
            body.append(tag("tr", cells, class_="warmup" if t.warmup else None))
        title = f"{wl} ({chain})" if chain else wl
        out.append(
            details(
                f"{e(title)}: {len(ts)} trials × {len(metrics)} metrics",
                table(header, body, class_="plain raw"),
            )
        )
    return "".join(out)
