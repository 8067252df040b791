"""From rows to the run's decisions: one per comparison, with the run's false orders
controlled over all of them (decisions.control_run). Every format (table, markdown, CSV,
JSON, HTML) reads its verdicts from here, so they always agree."""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from fsbench.analysis.decisions import Decision, Side, decide, evidence
from fsbench.analysis.design import Design, design_of
from fsbench.analysis.family import control_run
from fsbench.analysis.rows import Row
from fsbench.analysis.stats import fixed_relation

# A comparison: (chain, workload, dimensions as JSON, metric).
Key = tuple[str, str, str, str]


def label_of(row: Row) -> str:
    """A config as tables label it: after its host in a run on many machines."""
    return f"{row.host} · {row.config}" if row.host else row.config


def key_of(row: Row) -> Key:
    dims = {**row.params, **row.knobs}
    return (
        row.chain,
        row.workload,
        json.dumps(dims, sort_keys=True, default=str),
        row.metric or "",
    )


def side_of(row: Row, label: str | None = None) -> Side:
    """A row as one config's side of a comparison: the configs of one run's comparison
    on one host ran in the same rounds (one comparison group's), a rep in one round."""
    over = int(row.over["n"]) if row.over and row.unit == "count" else None
    reps = tuple(row.reps) if len(row.reps) == len(row.values) else ()
    return Side(label or label_of(row), tuple(row.values), reps, over, f"host {row.host}")


def decide_rows(
    labelled: Sequence[tuple[str, Row]],
    design: Design,
    headline: bool = True,
    key: tuple[str, ...] = (),
    explain: bool = True,
    judged: bool = True,
) -> Decision | None:
    """One comparison's decision over (label, row) pairs, before the run's control
    (`judged`: at the full level; else its evidence, for the run's control to judge)."""
    usable = [(label, r) for label, r in labelled if r.values and r.status == "ok"]
    if len(usable) < 2:
        return None
    first = usable[0][1]
    if first.better not in ("higher", "lower"):
        return None
    planned = [r.n_max for _, r in usable if r.n_max is not None]
    if design.sequential and planned:
        # The looks its group's design was given (decide.py), none it could not have.
        design = replace(design, n_max=max(design.n_min, max(planned)))
    sides = [side_of(r, label) for label, r in usable]
    if any(s.over is not None for s in sides) and not all(s.over is not None for s in sides):
        sides = [Side(s.label, s.values, s.reps, rounds=s.rounds) for s in sides]
    return (decide if judged else evidence)(
        sides,
        better=first.better,
        metric=first.metric,
        unit=first.unit,
        resolution=max(r.resolution for _, r in usable),
        design=design,
        headline=headline,
        key=key,
        explain=explain,
    )


def _has_headline(rows: Iterable[Row]) -> set[tuple[str, str]]:
    """The (chain, workload) pairs that name headline metrics at all."""
    return {(r.chain, r.workload) for r in rows if r.headline is not None}


def decide_all(rows: Sequence[Row], design: Design, explain: bool = True) -> dict[Key, Decision]:
    """Every comparison of these rows (configs measured alike, one metric), decided, the
    run's false orders controlled over them (family.control_run)."""
    return controlled(evidence_all(rows, design, explain), design.alpha)


def evidence_all(
    rows: Sequence[Row], design: Design, explain: bool = True, headline_only: bool = False
) -> list[Decision]:
    """Every comparison's evidence, before the run's control judges it. A workload with no
    headline metric has all its metrics in the headline family (they are what its table
    shows); the repetition loop needs only that family."""
    groups: dict[Key, list[tuple[str, Row]]] = {}
    for r in rows:
        if r.metric is None:
            continue
        groups.setdefault(key_of(r), []).append((label_of(r), r))
    named = _has_headline(rows)
    drafts: list[Decision] = []
    for key, labelled in groups.items():
        chain, workload, _, _ = key
        # A headline metric of these cells (alloc's seconds are not, for an allocation
        # that writes nothing), or any metric of a workload that names none.
        headline = (chain, workload) not in named or any(
            r.headline is not None for _, r in labelled
        )
        if headline_only and not headline:
            continue
        decision = decide_rows(
            labelled, design, headline=headline, key=key, explain=explain, judged=False
        )
        if decision is not None:
            drafts.append(decision)
    return _with_twins(drafts, groups)


def _with_twins(
    drafts: list[Decision], groups: Mapping[Key, Sequence[tuple[str, Row]]]
) -> list[Decision]:
    """Each tested comparison marked with the earlier metric of the same cells it is an
    exact reciprocal or multiple of (family.control_run counts the two once)."""
    out: list[Decision] = []
    for d in drafts:
        key = tuple(d.key)
        found = None
        if d.family_p is not None:
            found = next(
                (
                    e.metric
                    for e in out
                    if e.family_p is not None
                    and e.twin_of is None
                    and e.headline == d.headline
                    and tuple(e.key)[:3] == key[:3]
                    and math.isclose(e.family_p, d.family_p, rel_tol=1e-9)
                    and _twins(groups[tuple(e.key)], groups[key])  # type: ignore[index]
                ),
                None,
            )
        out.append(replace(d, twin_of=found) if found else d)
    return out


def _twins(a: Sequence[tuple[str, Row]], b: Sequence[tuple[str, Row]]) -> bool:
    """Whether one metric is, trial by trial in every config, a fixed reciprocal or
    multiple of the other: the same constant for all of them."""
    mine, theirs = dict(a), dict(b)
    if set(mine) != set(theirs):
        return False
    xs: list[float] = []
    ys: list[float] = []
    for label, row in mine.items():
        other = theirs[label]
        if len(row.values) != len(other.values) or row.reps != other.reps:
            return False
        xs += row.values
        ys += other.values
    return fixed_relation(xs, ys) is not None


def controlled(
    drafts: Sequence[Decision], alpha: float, pending: Collection[Key] = ()
) -> dict[Key, Decision]:
    """The comparisons judged under the run's control. The repetition loop counts the
    comparisons of groups still running (`pending`) as undecided, and those of them
    answered by exact counts so far as possibly tested later."""
    unknown = sum(1 for d in drafts if d.key in pending and d.headline and d.family_p is None)
    return {tuple(d.key): d for d in control_run(drafts, alpha, pending, unknown)}  # type: ignore[misc]


def for_run(plan: Mapping[str, Any], rows: Sequence[Row]) -> dict[Key, Decision]:
    """A stored run's decisions, with the design it ran under."""
    return decide_all(rows, design_of(plan))


def documents(decisions: Mapping[Key, Decision]) -> list[dict[str, Any]]:
    """The decisions as the JSON report states them: each comparison's identity, then
    its verdict (kind, ranking, pairs with their evidence)."""
    out = []
    for (chain, workload, dims, _), d in decisions.items():
        out.append(
            {
                "chain": chain,
                "workload": workload,
                "dims": json.loads(dims),
                "headline": d.headline,
                "verdict": d.as_dict(),
            }
        )
    return out


def tally(decisions: Iterable[Decision]) -> dict[str, int]:
    """Pairs per kind, over these decisions."""
    out = {"order": 0, "equivalent": 0, "undecided": 0}
    for d in decisions:
        for p in d.pairs:
            out[p.kind] += 1
    return out
