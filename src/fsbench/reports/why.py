"""Why, under a run's verdicts: for each headline verdict, one line per pair of its configs
that the run's last explain run explained (the pair's named mechanisms, most different
first, their ratios and the share of the gap they explain; or that none was decided
different). A pair not explained has no line. The explain run's own report has the full
account (every mechanism, the stacks, the block requests)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fsbench.analysis.decisions import Decision
from fsbench.analysis.explain import Explanation
from fsbench.reports import explain as explaining
from fsbench.reports.source import RunReport
from fsbench.reports.tables import Table
from fsbench.store.results import Store


@dataclass(frozen=True)
class Why:
    """The explanations of a run's last explain run, by the verdict each explains."""

    explain_run: int
    by_verdict: Mapping[tuple[str, ...], tuple[Explanation, ...]]  # a decision's key

    def lines(self, decision: Decision | None) -> tuple[str, ...]:
        """The lines under a verdict: one per explained pair of its configs."""
        if decision is None:
            return ()
        return tuple(line(e) for e in self.by_verdict.get(decision.key, ()))

    @property
    def source(self) -> str:
        return explaining.caption(self.explain_run)

    @property
    def fact(self) -> str:
        pairs = sum(len(found) for found in self.by_verdict.values())
        return (
            f"why: fsbench explain {self.explain_run} (instrumented trials, never counted) "
            f"explained {pairs} pair{'s' if pairs != 1 else ''}, a line under its verdict; "
            f"`fsbench report {self.explain_run}` has the full account"
        )

    def payload(self) -> list[dict[str, Any]]:
        """Per explained pair: its verdict's key, the line, and the mechanisms named."""
        return [
            {
                "explain_run": self.explain_run,
                "key": list(key),
                "configs": [e.a, e.b],
                "line": line(e),
                "named": [
                    {"mechanism": m.metric, "label": m.label, "ratio": m.ratio} for m in e.named
                ],
                "explained": e.explained,
            }
            for key, found in self.by_verdict.items()
            for e in found
        ]


def line(e: Explanation) -> str:
    """'why sync against a: 3.1x the cache flushes..., 2.2x the ... (explained: 83% of ...)'."""
    return f"why {explaining.summary(e)}"


def of(store: Store, report: RunReport) -> Why | None:
    """The run's last explain run's explanations, each under the verdict it explains (the
    source run's decision on the pair's headline metric); None when it has none."""
    run = explaining.latest_of(store, int(report.run.id or 0))
    if run is None:
        return None
    by_verdict: dict[tuple[str, ...], list[Explanation]] = {}
    for e in explaining.explained(store, run).found:
        decision = report.decisions.get((*e.key, e.headline))
        if decision is not None and {e.a, e.b} <= set(decision.labels):
            by_verdict.setdefault(decision.key, []).append(e)
    if not by_verdict:
        return None
    return Why(int(run.id or 0), {k: tuple(v) for k, v in by_verdict.items()})


def under(table: Table, why: Why | None) -> tuple[str, ...]:
    """The lines under a table's verdict row, each naming its column when more than one
    column has lines."""
    if why is None:
        return ()
    found = [(c, why.lines(v)) for c, v in zip(table.columns, table.verdicts, strict=False)]
    found = [(c, lines) for c, lines in found if lines]
    if len(found) == 1:
        return found[0][1]
    return tuple(f"{c}: {text}" for c, lines in found for text in lines)


def for_row(why: Why | None, decision: Decision | None, config: str) -> str:
    """A CSV record's lines: those of its verdict's pairs that hold its config."""
    if why is None or decision is None:
        return ""
    return " | ".join(line(e) for e in why.by_verdict.get(decision.key, ()) if config in (e.a, e.b))
