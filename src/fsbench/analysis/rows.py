"""From stored trials to report rows: one row per (config, workload, params, metric).

This is the stable interface of `fsbench report --format json`; every renderer (table,
markdown, CSV, HTML) is a pure function of these rows. Warm-up repetitions (rep 0) are
stored and shown apart (`warmup_values`), never counted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from fsbench.analysis.stats import (
    OUTLIER_MIN_N,
    OrderEffect,
    bimodal,
    holm,
    min_detectable,
    order_effect,
    outliers,
    outliers_checked,
    reps_needed,
    summarize,
)
from fsbench.store import trialfacts
from fsbench.store.records import RunRecord, TrialRecord

# The relative difference `reps_for_5pct` is about: what a user usually wants to resolve.
TARGET_DIFFERENCE = 0.05
# An order effect is called at this Holm-corrected p (over the metrics of one group) and
# only when it moves results by at least ORDER_MIN_CHANGE.
ORDER_ALPHA = 0.05
ORDER_MIN_CHANGE = 0.02


@dataclass
class Row:
    config: str
    fs: str
    workload: str
    chain: str  # the chain the workload ran in ("" when alone)
    knobs: dict[str, str]  # sysctls, scheduler, contention set for the trial
    params: dict[str, Any]
    metric: str | None
    unit: str | None
    better: str | None
    status: str  # ok | unsupported | failed
    message: str
    n: int
    mean: float | None
    sd: float | None
    ci95: list[float] | None
    cv: float | None
    values: list[float]
    trials: dict[str, int]  # status -> count (warm-ups included)
    option_notes: list[dict[str, str]] = field(default_factory=list)
    flags: dict[str, str] = field(default_factory=dict)
    # The warm-up repetitions' values: run and stored like the others, never counted.
    warmup_values: list[float] = field(default_factory=list)
    # Indexes into `values` of outliers by modified z-score: shown, never dropped.
    outliers: list[int] = field(default_factory=list)
    # The smallest relative difference from another config measured alike (same n and
    # sd) that this row could detect (Welch, 95% confidence, 80% power); None below n = 2.
    min_detectable: float | None = None
    # Repetitions per config that would detect a 5% difference at this row's CV.
    reps_for_5pct: int | None = None
    # The metric's resolution: the tool's smallest step (0: finer than anything that
    # matters); differences below it are no difference.
    resolution: float = 0.0
    # Where each value's trial ran in its round (1 = first; 0 = not recorded).
    positions: list[int] = field(default_factory=list)
    # Its place among the workload's headline metrics (0 = first), None when not one:
    # tables, charts and comparisons show the headline metrics unless asked for all.
    headline: int | None = None
    # The host it ran on in a run on many machines (inventory name) and that host's
    # inventory groups; "" and [] for a run on one machine.
    host: str = ""
    groups: list[str] = field(default_factory=list)
    # A workload whose every trial counts over N events of its own (the crash workload:
    # N power cuts) records {"n": N, "of": "crashes"}; here N summed over the counted
    # trials, so a count reads "2 (5 crashes)". None for every other workload.
    over: dict[str, Any] | None = None
    # The repetition each value came from (1, 2, ...): a sequential design's looks.
    reps: list[int] = field(default_factory=list)
    # How `outliers` was found: "modified z-score", or "not checked (n < 4)".
    outlier_check: str = ""
    # --reps decide: the last look its group's design planned (None: the plan's max_reps).
    n_max: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Cell:
    trials: list[TrialRecord] = field(default_factory=list)

    @property
    def counted(self) -> list[TrialRecord]:
        return [t for t in self.trials if not t.warmup]

    @property
    def warmups(self) -> list[TrialRecord]:
        return [t for t in self.trials if t.warmup]


CellId = tuple[str, str, str, str, str]  # host, config, chain, workload, dimensions


def _cell_id(t: TrialRecord) -> CellId:
    dims = {**t.params, **{f"knob:{k}": v for k, v in t.knobs.items()}}
    return (t.host, t.config, t.chain, t.workload, json.dumps(dims, sort_keys=True))


def _group_id(t: TrialRecord) -> tuple[str, str, str, str, str]:
    """The trials compared with each other (schedule.group_key): one workload step and
    its parameters, under one kernel, on one host; every config and other knob value."""
    kernel = t.knobs.get("kernel", "")
    return (t.host, kernel, t.chain, t.workload, json.dumps(t.params, sort_keys=True))


def convergence_key(host: str, cell_key: str) -> str:
    """Where a run's convergence record keeps a cell: its key, after the host's name in a
    run on many machines (each host converges on its own)."""
    return f"{host}|{cell_key}" if host else cell_key


def _status(counts: dict[str, int]) -> str:
    if counts.get("ok"):
        return "ok"
    if counts.get("unsupported"):
        return "unsupported"
    return "failed"


def _values(trials: Sequence[TrialRecord], name: str | None) -> list[tuple[float, TrialRecord]]:
    return [(m.value, t) for t in trials if t.status == "ok" for m in t.metrics if m.name == name]


def build_rows(
    trials: list[TrialRecord],
    convergence: dict[str, Any] | None = None,
    config_order: Sequence[str] = (),
    workloads: Mapping[str, Mapping[str, Any]] | None = None,
    n_max: Mapping[str, int] | None = None,
) -> list[Row]:
    """Rows grouped by workload in schedule order, configs in `config_order` (the plan's)
    then first appearance. With the run's convergence record (--reps auto), cells whose CI
    missed the target are flagged; rows of a comparison group whose results depend on the
    order trials ran in are flagged `order-effect`. `workloads` is the run's stored facts
    (runfacts.py): which metrics are headline ones; `n_max` the run's design record's last
    look per cell key (--reps decide)."""
    convergence = convergence or {}
    n_max = n_max or {}
    workloads = workloads or {}
    cells: dict[CellId, _Cell] = {}
    for t in trials:
        cells.setdefault(_cell_id(t), _Cell()).trials.append(t)
    rank = {c: i for i, c in enumerate(config_order)}
    hosts = {h: i for i, h in enumerate(dict.fromkeys(t.host for t in trials))}
    firsts = {key: min(t.seq for t in cell.trials) for key, cell in cells.items()}
    workload_first: dict[tuple[str, str, str], int] = {}
    for key in cells:
        wkey = (key[2], key[3], key[4])
        workload_first[wkey] = min(workload_first.get(wkey, firsts[key]), firsts[key])
    ordered = sorted(
        cells,
        key=lambda k: (
            workload_first[(k[2], k[3], k[4])],
            hosts[k[0]],
            rank.get(k[1], len(rank)),
            firsts[k],
        ),
    )
    # Metric names, units and directions per workload, from any ok trial, and the coarsest
    # resolution any trial reported (a histogram's bucket grows with the value).
    wl_metrics: dict[str, dict[str, tuple[str, str, float]]] = {}
    for t in trials:
        if t.status == "ok":
            for m in t.metrics:
                known = wl_metrics.setdefault(t.workload, {})
                unit, better, step = known.get(m.name, (m.unit, m.better, 0.0))
                known[m.name] = (unit, better, max(step, m.resolution))
    rows: list[Row] = []
    for key in ordered:
        cell_rows = _cell_rows(key, cells[key], wl_metrics, convergence)
        headline = _headline(cells[key], workloads)
        planned = n_max.get(convergence_key(key[0], cells[key].trials[0].cell_key))
        for row in cell_rows:
            row.n_max = planned
            if row.metric in headline:
                row.headline = headline.index(row.metric)
        rows += cell_rows
    _flag_order_effects(rows, cells)
    return rows


def _headline(cell: _Cell, workloads: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The cell's headline metrics: as its trials recorded them (a workload whose headline
    depends on its parameters), else as the run stored them for the workload."""
    for t in cell.trials:
        recorded = trialfacts.headline(t.provenance)
        if recorded:
            return list(recorded)
    return list(workloads.get(cell.trials[0].workload, {}).get("headline") or [])


def _cell_rows(
    key: CellId,
    cell: _Cell,
    wl_metrics: dict[str, dict[str, tuple[str, str, float]]],
    convergence: dict[str, Any],
) -> list[Row]:
    host, config, chain, workload, _ = key
    counts: dict[str, int] = {}
    for t in cell.trials:
        counts[t.status] = counts.get(t.status, 0) + 1
    status = _status(counts)
    bad = [t for t in cell.trials if t.status != "ok"]
    message = bad[0].message if bad else ""
    if status == "ok" and bad:
        message = f"{len(bad)} of {len(cell.trials)} trials {bad[0].status}: {bad[0].message}"
    notes: list[dict[str, str]] = []
    flags: dict[str, str] = {}
    for t in cell.trials:
        for note in trialfacts.option_notes(t.provenance):
            if note not in notes:
                notes.append(note)
    for t in cell.counted:
        flags.update(trialfacts.flags(t.provenance))
    first = cell.trials[0]
    conv = convergence.get(convergence_key(host, first.cell_key))
    if conv and not conv.get("converged", True):
        widths = ", ".join(
            f"{k.split(':')[-1]} ±{v}%"
            for k, v in conv["half_width_pct"].items()
            if k.startswith(f"{workload}:") and v is not None
        )
        reason = conv.get("reason") or "CI wider than the target"
        flags["not-converged"] = (
            f"{reason}: CI {widths or 'unknown'} after {conv['reps']} reps "
            f"(target ±{conv['target_pct']:g}%)"
        )
    known = wl_metrics.get(workload, {})
    names: list[str | None] = list(known) or [None]
    rows = []
    for name in names:
        counted = _values(cell.counted, name)
        values = [v for v, _ in counted]
        s = summarize(values)
        unit, better, resolution = known[name] if name else (None, None, 0.0)
        row_flags = dict(flags)
        found = outliers(values, resolution=resolution)
        if found:
            which = ", ".join(f"{i + 1} ({values[i]:.4g})" for i in found)
            row_flags["outliers"] = f"{config} {name}: repetition {which} of {len(values)}"
        modes = bimodal(values)
        if modes is not None:
            row_flags["bimodal"] = (
                f"{config} {name}: {modes.low} of {len(values)} near {modes.low_mean:.4g}, "
                f"{modes.high} near {modes.high_mean:.4g} ({modes.factor:.2f}x apart)"
            )
        rows.append(
            Row(
                config=config,
                fs=first.fs,
                workload=workload,
                chain=chain,
                knobs=first.knobs,
                params=first.params,
                metric=name,
                unit=unit,
                better=better,
                status=status,
                message=message,
                **s.row_fields(),
                values=values,
                trials=counts,
                option_notes=notes,
                flags=row_flags,
                warmup_values=[v for v, _ in _values(cell.warmups, name)],
                outliers=found,
                min_detectable=min_detectable(s.sd, s.mean, s.n),
                reps_for_5pct=reps_needed(
                    abs(s.cv) if s.cv is not None else None, TARGET_DIFFERENCE
                ),
                resolution=resolution,
                positions=[t.position for _, t in counted],
                host=host,
                over=_over([t for _, t in counted]),
                reps=[t.rep for _, t in counted],
                outlier_check=(
                    "modified z-score"
                    if outliers_checked(values)
                    else f"not checked (n < {OUTLIER_MIN_N})"
                ),
            )
        )
    return rows


def _over(trials: list[TrialRecord]) -> dict[str, Any] | None:
    """What the trials' counts are over (provenance "over"), summed; None if nothing."""
    overs = [trialfacts.over(t.provenance) for t in trials]
    if not overs or not all(overs):
        return None
    return {"n": sum(o["n"] for o in overs if o), "of": overs[0]["of"] if overs[0] else ""}


def _flag_order_effects(rows: list[Row], cells: dict[CellId, _Cell]) -> None:
    """Per comparison group, test every metric's residuals for a position or carry-over
    effect (stats.order_effect), Holm-corrected over the group's metrics; flag the rows of
    a metric where one is found."""
    by_group: dict[tuple[str, str, str, str, str], list[CellId]] = {}
    for key, cell in cells.items():
        if cell.counted:
            by_group.setdefault(_group_id(cell.trials[0]), []).append(key)
    for keys in by_group.values():
        if len(keys) < 2:
            continue
        trials = [t for k in keys for t in cells[k].counted if t.status == "ok"]
        if any(t.position == 0 for t in trials):
            continue  # an older store: positions were not recorded
        metrics = sorted({m.name for t in trials for m in t.metrics})
        tests = []
        for metric in metrics:
            residuals, positions, previous, rounds = [], [], [], []
            configs = 0
            for k in keys:
                pairs = _values(cells[k].counted, metric)
                if len(pairs) < 2:
                    continue
                mean = sum(v for v, _ in pairs) / len(pairs)
                if mean == 0:
                    continue
                configs += 1
                for v, t in pairs:
                    residuals.append(v / mean - 1)
                    positions.append(t.position)
                    previous.append(t.previous_cell)
                    rounds.append(t.rep)
            effect = order_effect(residuals, positions, previous, configs, rounds)
            tests.append((metric, effect))
        adjusted = holm([effect.p for _, effect in tests])
        for (metric, effect), p in zip(tests, adjusted, strict=True):
            if p is None or p >= ORDER_ALPHA or effect.size < ORDER_MIN_CHANGE:
                continue
            detail = _order_detail(effect)
            text = f"{detail} (Holm p = {p:.2g}, {effect.n} trials)"
            for row in rows:
                if row.metric == metric and _cell_id_of(row) in keys:
                    row.flags["order-effect"] = text


def _order_detail(effect: OrderEffect) -> str:
    """What moved the results: a round (and whether it moved every config of it), the
    place in the round, or the trial run just before."""
    if effect.by_round and effect.round_moved:
        return (
            f"round {effect.round_moved} moved every config ({effect.round_shift:+.0%}): "
            "a shock of the round's, the round-paired t discounts it"
        )
    if effect.by_round:
        return f"{effect.round_spread:.0%} apart by round"
    if abs(effect.position_change) >= abs(effect.carryover_spread):
        return f"{effect.position_change:+.0%} from first to last place in the round"
    return f"{effect.carryover_spread:.0%} apart by the trial run just before"


def _cell_id_of(row: Row) -> CellId:
    dims = {**row.params, **{f"knob:{k}": v for k, v in row.knobs.items()}}
    return (row.host, row.config, row.chain, row.workload, json.dumps(dims, sort_keys=True))


def report_document(
    run: RunRecord, rows: list[Row], calibration_run: int | None = None
) -> dict[str, Any]:
    """The JSON document: `{"run": ID, "rows": [...]}` plus the run's provenance and the
    calibration run its rows were checked against (None: this host was never calibrated)."""
    return {
        "run": run.id,
        "name": run.name,
        "kind": run.kind,
        "status": run.status,
        "created_at": run.created_at,
        "finished_at": run.finished_at,
        "fsbench_version": run.fsbench_version,
        "seed": run.plan.get("seed"),
        "host": run.host.stored(),
        "target": run.target,
        "calibration_run": calibration_run,
        "rows": [r.as_dict() for r in rows],
    }
