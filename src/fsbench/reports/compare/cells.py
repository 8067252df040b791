"""The comparison itself, pure: the rows of two sides in, every matched cell judged out.

Cells are matched by (host, config label, chain, workload, params, knobs, metric); a
parameter left at None (unset: the tool's own default) matches one a run made before it
existed, as the cell was the same. For every matched cell: both means with n, the ratio
B/A with the interval its verdict used, and one of the three answers of a run's tables,
by the same tests (decisions.py): B better or worse than A (Welch on the log scale, or the
counts themselves where they do not vary; false orders controlled over every cell compared
by Benjamini-Bogomolov, as a run controls its comparisons), equivalent (the ratio's 90% CI
within ± the margin), or undecided with the repetitions that would decide it. Per workload
and metric, the geometric mean of the ratios. Cells found on one side only are listed, not
guessed at.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from fsbench.analysis.decisions import EQUIVALENT, ORDER, Decision, Side, decide
from fsbench.analysis.design import Design
from fsbench.analysis.family import control_run
from fsbench.analysis.rows import Row
from fsbench.analysis.stats import ratio_ci
from fsbench.analysis.verdicts import side_of
from fsbench.reports.headline import headline_metrics
from fsbench.system import numbers

ALPHA = 0.05
BETTER, WORSE, NOT_COMPARED = "better", "worse", "not compared"
UNDECIDED = "undecided"


@dataclass(frozen=True, order=True)
class CellKey:
    host: str  # the host of a run on many machines ("" for a run on one machine)
    config: str
    chain: str
    workload: str
    params: str  # JSON, keys sorted
    knobs: str  # JSON, keys sorted
    metric: str  # "" when the cell has no metric at all (every trial failed)

    def dims(self) -> dict[str, Any]:
        return {**json.loads(self.params), **json.loads(self.knobs)}

    @property
    def label(self) -> str:
        """The config, after its host in a run on many machines (as the tables label rows)."""
        return f"{self.host} · {self.config}" if self.host else self.config

    def as_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "params": json.loads(self.params),
            "knobs": json.loads(self.knobs),
            "metric": self.metric or None,
        }


def cell_key(row: Row) -> CellKey:
    return CellKey(
        row.host,
        row.config,
        row.chain,
        row.workload,
        json.dumps(
            {k: v for k, v in row.params.items() if v is not None}, sort_keys=True, default=str
        ),
        json.dumps(row.knobs, sort_keys=True, default=str),
        row.metric or "",
    )


@dataclass
class CellComparison:
    key: CellKey
    unit: str | None
    better: str | None
    a: Row
    b: Row
    ratio: float | None  # B / A (of the geometric means where the test is on the log scale)
    ratio_ci: tuple[float, float] | None  # at `ratio_ci_level`, the level its verdict used
    p: float | None  # the order's p before the control over the cells compared
    p_adjusted: float | None  # the same, as decided (None: an exact answer, no test)
    verdict: str  # better | worse | equivalent | undecided | not compared
    text: str  # "faster by 23%", "equivalent within ±5% (...)", "not compared: A unsupported"
    decision: Decision | None = None  # A against B, as a run's table decides a pair

    @property
    def ratio_ci_level(self) -> float | None:
        pair = self.decision.pairs[0] if self.decision is not None else None
        return pair.ci_level if pair is not None and pair.ci is not None else None

    @property
    def change(self) -> float | None:
        """(B - A) / A."""
        return None if self.ratio is None else self.ratio - 1


@dataclass
class GeoMean:
    chain: str
    workload: str
    metric: str
    unit: str | None
    better: str | None
    cells: int  # cells with a finite positive ratio
    ratio: float | None  # geometric mean of B/A over those cells
    counts: dict[str, int]  # verdict -> cells

    @property
    def text(self) -> str:
        return numbers.ratio(self.ratio, missing="n/a")


@dataclass
class Comparison:
    cells: list[CellComparison]
    only_a: list[CellKey]
    only_b: list[CellKey]
    geomeans: list[GeoMean]
    all_metrics: bool = False
    alpha: float = ALPHA
    compared: int = 0  # cells with a test, over which false orders are controlled
    margin: float = Design().margin
    differences: list[dict[str, Any]] = field(default_factory=list)  # runs' provenance


def _is_speed(unit: str | None, metric: str) -> bool:
    """Time and rate metrics read as faster/slower; counts and sizes as better/worse."""
    unit = unit or ""
    return (
        unit in {"s", "ms", "us", "ns", "IOPS"}
        or unit.endswith("/s")
        or metric.endswith(("_per_s", "seconds", "_ms", "_us"))
    )


def change_text(ratio: float, better: str | None, unit: str | None, metric: str) -> str:
    """B relative to A: 'faster by 23%', 'worse by 4.1%'."""
    change = ratio - 1
    improved = change > 0 if better == "higher" else change < 0
    if _is_speed(unit, metric):
        word = "faster" if improved else "slower"
    else:
        word = "better" if improved else "worse"
    amount = numbers.percent(abs(change), 1 if abs(change) < 0.1 else 0)
    return f"{word} by {amount}"


def headline_rows(rows: list[Row]) -> list[Row]:
    """The rows of each workload's headline metrics (Row.headline), and the rows of cells
    that have no metric at all (to say why)."""
    shown: dict[tuple[str, str], set[str]] = {}
    for key in dict.fromkeys((r.chain, r.workload) for r in rows):
        group = [r for r in rows if (r.chain, r.workload) == key]
        shown[key] = set(headline_metrics(group))
    return [r for r in rows if r.metric is None or r.metric in shown[(r.chain, r.workload)]]


def _draft(key: CellKey, a: Row, b: Row, design: Design) -> Decision | None:
    """A against B for one matched cell, before the control over every cell compared."""
    if not (a.values and b.values) or (a.better or b.better) not in ("higher", "lower"):
        return None
    # Two runs, or two groups of one: no rounds in common to pair trials by.
    sides = [replace(side_of(a, "A"), rounds=""), replace(side_of(b, "B"), rounds="")]
    if (sides[0].over is None) != (sides[1].over is None):
        sides = [Side(s.label, s.values, s.reps) for s in sides]
    return decide(
        sides,
        better=str(a.better or b.better),
        metric=key.metric,
        unit=a.unit or b.unit,
        resolution=max(a.resolution, b.resolution),
        design=design,
        key=(str(id(key)),),
    )


def _judge(key: CellKey, a: Row, b: Row, decision: Decision | None) -> CellComparison:
    better = a.better or b.better
    unit = a.unit or b.unit
    ratio: float | None = None
    ci: tuple[float, float] | None = None
    pair = decision.pairs[0] if decision is not None else None
    if pair is not None:
        # The pair's own evidence: its ratio and the interval its verdict used.
        ratio, ci = pair.ratio, pair.ci
    elif a.values and b.values:
        r, _ = ratio_ci(a.values, b.values)
        ratio = r if math.isfinite(r) else None
    p = pair.p if pair is not None else None
    # One pair a cell: its p controlled over the cells is the cell's BH-adjusted p.
    p_adjusted = decision.family_q if decision is not None and p is not None else None
    if not (a.values and b.values):
        missing = [f"{side} {row.status}" for side, row in (("A", a), ("B", b)) if not row.values]
        verdict, text = NOT_COMPARED, f"{NOT_COMPARED}: {', '.join(missing)}"
    elif decision is None or pair is None:
        verdict, text = UNDECIDED, f"{UNDECIDED} (no direction to compare)"
    elif pair.kind == ORDER and ratio is not None:
        verdict = BETTER if pair.winner == "B" else WORSE
        text = change_text(ratio, better, unit, key.metric)
    elif pair.kind == EQUIVALENT:
        verdict, text = EQUIVALENT, decision.pair_text(pair).replace("A = B", "A = B:")
    else:
        verdict = UNDECIDED
        text = decision.pair_text(pair).replace("A vs B: ", "")
    return CellComparison(
        key, unit, better, a, b, ratio, ci, p, p_adjusted, verdict, text, decision
    )


def compare_rows(
    rows_a: list[Row],
    rows_b: list[Row],
    all_metrics: bool = False,
    alpha: float = ALPHA,
    margin: float = Design().margin,
) -> Comparison:
    """Match the cells of two sides and judge every matched pair, the false orders
    controlled over all of them."""
    if not all_metrics:
        rows_a, rows_b = headline_rows(rows_a), headline_rows(rows_b)
    by_a = {cell_key(r): r for r in rows_a}
    by_b = {cell_key(r): r for r in rows_b}
    matched = [k for k in by_a if k in by_b]
    design = Design(margin=margin, alpha=alpha)
    drafts = {k: _draft(k, by_a[k], by_b[k], design) for k in matched}
    found = [d for d in drafts.values() if d is not None]
    controlled = dict(zip((d.key for d in found), control_run(found, alpha), strict=True))
    cells = [
        _judge(k, by_a[k], by_b[k], controlled[d.key] if (d := drafts[k]) else None)
        for k in matched
    ]
    return Comparison(
        cells=cells,
        only_a=[k for k in by_a if k not in by_b],
        only_b=[k for k in by_b if k not in by_a],
        geomeans=geomeans(cells),
        all_metrics=all_metrics,
        alpha=alpha,
        compared=sum(1 for d in found if d.family_p is not None),
        margin=margin,
    )


def geomeans(cells: list[CellComparison]) -> list[GeoMean]:
    """Geometric mean of B/A per (chain, workload, metric), over cells with a ratio."""
    groups: dict[tuple[str, str, str], list[CellComparison]] = {}
    for c in cells:
        if c.key.metric:
            groups.setdefault((c.key.chain, c.key.workload, c.key.metric), []).append(c)
    out = []
    for (chain, workload, metric), group in groups.items():
        ratios = [c.ratio for c in group if c.ratio is not None and c.ratio > 0]
        gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else None
        counts: dict[str, int] = {}
        for c in group:
            counts[c.verdict] = counts.get(c.verdict, 0) + 1
        out.append(
            GeoMean(
                chain, workload, metric, group[0].unit, group[0].better, len(ratios), gm, counts
            )
        )
    return out
