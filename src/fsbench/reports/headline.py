"""Which metrics a report shows: the workload's headline ones, as the run stored them."""

from __future__ import annotations

from collections.abc import Iterable

from fsbench.analysis.rows import Row


def headline_metrics(rows: Iterable[Row], all_metrics: bool = False) -> list[str]:
    """The metrics shown for these rows (one workload): the headline ones in the
    workload's order (`Row.headline`); then every other one, in order of appearance,
    when asked for all or when none is a headline metric."""
    rows = list(rows)
    ranks = {r.metric: r.headline for r in rows if r.metric is not None and r.headline is not None}
    shown = sorted(ranks, key=lambda m: ranks[m])
    if all_metrics or not shown:
        shown += [
            m for m in dict.fromkeys(r.metric for r in rows) if m is not None and m not in ranks
        ]
    return shown
