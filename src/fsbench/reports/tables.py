"""Rows -> tables like a mailing-list post: rows = filesystem configs; columns = the swept
parameter (one table per headline metric) or, with nothing swept, the metrics."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fsbench.analysis import validity
from fsbench.analysis import verdicts as run_verdicts
from fsbench.analysis.budget import TOLERANCE
from fsbench.analysis.decisions import Decision
from fsbench.analysis.design import Design
from fsbench.analysis.rows import Row
from fsbench.execute.schedule import williams as schedule_williams
from fsbench.store.griddesign import GridDesign
from fsbench.store.records import RunRecord
from fsbench.store.runkinds import design as design_of
from fsbench.system import numbers


@dataclass
class Table:
    title: str
    caption: str
    row_header: str
    columns: list[str]
    rows: list[tuple[str, list[str]]]
    footnotes: list[str] = field(default_factory=list)
    workload: str = ""
    chain: str = ""
    metric: str | None = None  # the one metric of a swept table; None: columns are metrics
    # (row, column) of the configs ordered better than every other, and one decision per
    # column (None where fewer than two configs have values); [] when nothing was compared.
    best: set[tuple[int, int]] = field(default_factory=set)
    verdicts: list[Decision | None] = field(default_factory=list)

    @property
    def verdict_cells(self) -> list[str]:
        return [v.short if v else "" for v in self.verdicts]

    @property
    def legend(self) -> str:
        decided = [v for v in self.verdicts if v is not None]
        if not decided:
            return ""
        # Each column's group had its own looks (the budget's plan): say each one's.
        by_looks: dict[str, list[str]] = {}
        for column, v in zip(self.columns, self.verdicts, strict=False):
            if v is not None:
                by_looks.setdefault(v.design.looks_said, []).append(column)
        looks = next(iter(by_looks))
        if len(by_looks) > 1:
            looks = "looks by column: " + " | ".join(
                f"{', '.join(columns)}: {said}" for said, columns in by_looks.items()
            )
        text = f"verdict: {decided[0].design.rule_with(looks)}"
        if any(p.test == "Fisher" for v in decided for p in v.pairs):
            text += "; counts out of N by Fisher's exact test"
        if any("{" in v.short for v in decided):
            text += "; {a, b}: not told apart yet"
        return text


def power_note(rows: list[Row]) -> str:
    """What the noise lets this table see: the smallest difference its rows can detect,
    and the repetitions per config a 5% difference would take (the noisiest row decides)."""
    usable = [r for r in rows if r.min_detectable is not None and r.status == "ok"]
    if not usable:
        return ""
    worst = max(usable, key=lambda r: r.min_detectable or 0.0)
    n = min(r.n for r in usable)
    text = (
        f"power: with n={n} per config these rows detect differences of about "
        f"±{numbers.share(worst.min_detectable or 0.0)} or more (95% confidence, 80% power); "
    )
    # A row whose dispersion is known but whose reps for 5% are not needs more than any
    # sane number (stats.reps_needed's limit): the noisiest row decides.
    if any(r.reps_for_5pct is None for r in usable):
        return text + "a 5% difference is beyond any sane number of repetitions here"
    needed = max(r.reps_for_5pct or 0 for r in usable)
    if needed <= n:
        return text + "a 5% difference is within reach"
    return text + f"a 5% difference needs n={needed} per config (--reps {needed})"


def _significance(
    table: Table,
    columns: list[list[tuple[str, Row | None]]],
    decisions: Mapping[run_verdicts.Key, Decision],
) -> None:
    """The run's decision of every column (a list of (config, row) in table row order)."""
    found: list[Decision | None] = []
    for col in columns:
        sample = next((r for _, r in col if r is not None), None)
        found.append(decisions.get(run_verdicts.key_of(sample)) if sample else None)
    if not any(found):
        return
    table.verdicts = found
    for j, (verdict, col) in enumerate(zip(found, columns, strict=True)):
        if verdict and verdict.best:
            labels = [label for label, _ in col]
            if verdict.best in labels:
                table.best.add((labels.index(verdict.best), j))


def _add_power(table: Table, columns: list[tuple[str, list[Row]]]) -> None:
    """What the noise lets each column see, one note per column (a column of zeros, or
    of milliseconds, says nothing of another column's noise)."""
    if not table.verdicts:
        return
    for name, rows in columns:
        note = power_note([r for r in rows if r.values])
        if note:
            table.footnotes.append(f"{name}: {note}" if len(columns) > 1 else note)


def fmt_value(row: Row) -> str:
    """mean ± CI half-width (n); bytes in binary units."""
    if row.mean is None:
        return "-"
    if row.over:  # a count over N events of the trials' own: the total, and N
        return f"{numbers.significant(sum(row.values), 6)} ({row.over['n']} {row.over['of']})"
    half = (row.ci95[1] - row.ci95[0]) / 2 if row.ci95 else None
    if row.unit == "B":
        text = numbers.size(row.mean)
        if half is not None:
            text += f" ± {numbers.size(half)}"
        return f"{text} ({row.n})"
    return f"{numbers.mean_ci(row.mean, half)} ({row.n})"


label_of = run_verdicts.label_of


def _dims(row: Row) -> dict[str, Any]:
    """What varies between cells of a workload: its parameters and the system knobs."""
    return {**row.params, **row.knobs}


def split_dims(rows: list[Row]) -> tuple[list[str], list[str]]:
    """The parameter/knob names that vary between these rows, and those that do not."""
    names = list(dict.fromkeys(k for r in rows for k in _dims(r)))
    varying = [p for p in names if len({repr(_dims(r).get(p)) for r in rows}) > 1]
    # A constant left at None ("the tool's own default") or empty says nothing in a caption.
    constant = [
        p for p in names if p not in varying and _dims(rows[0]).get(p) not in (None, {}, [])
    ]
    return varying, constant


def dims_of(row: Row) -> dict[str, Any]:
    return _dims(row)


def params_label(params: dict[str, Any], names: list[str]) -> str:
    return _params_label(params, names)


def _params_label(params: dict[str, Any], names: list[str]) -> str:
    if len(names) == 1:
        return numbers.setting(params.get(names[0]))
    return " ".join(f"{n}={numbers.setting(params.get(n))}" for n in names)


def _unit_text(row: Row | None) -> str:
    if row is None or row.metric is None:
        return ""
    unit = {"s": "seconds", "B": "bytes", "count": "count"}.get(row.unit or "", row.unit or "")
    better = f", {row.better} is better" if row.better else ""
    return f"{row.metric} ({unit}{better})" if unit != row.metric else f"{row.metric}{better}"


class _Notes:
    """Footnotes numbered in order of first use."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def mark(self, text: str) -> str:
        if text not in self.items:
            self.items.append(text)
        return f"[{self.items.index(text) + 1}]"


def _config_label(config: str, rows: list[Row], notes: _Notes) -> str:
    label = config
    seen: list[dict[str, str]] = []
    for r in rows:
        for n in r.option_notes:
            if n not in seen:
                seen.append(n)
    for n in seen:
        what = "ignored" if n["kind"] == "ignored" else "not shown by the kernel"
        label += " " + notes.mark(
            f"{config}: {n['where']} option {n['option']} {what}: {n['evidence']}"
        )
    return label


def _cell_text(row: Row | None, cell_name: str, notes: _Notes) -> str:
    if row is None:
        return ""
    if row.status != "ok":
        # One note per config and message: the same refusal in every column is one note.
        return f"{row.status} " + notes.mark(f"{label_of(row)}: {row.message}")
    text = fmt_value(row)
    if row.message:  # some trials of the cell failed
        text += " " + notes.mark(f"{cell_name}: {row.message}")
    for flag, detail in row.flags.items():
        if validity.applies(flag, row.unit):
            text += " " + notes.mark(validity.footnote(flag, detail))
    return text


def build_tables(
    rows: list[Row],
    all_metrics: bool = False,
    decisions: Mapping[run_verdicts.Key, Decision] | None = None,
) -> list[Table]:
    """The tables of these rows, with the run's decisions (decided here under a fixed
    design when not given)."""
    if decisions is None:
        decisions = run_verdicts.decide_all(rows, Design())
    tables: list[Table] = []
    for chain, wname in dict.fromkeys((r.chain, r.workload) for r in rows):
        wrows = [r for r in rows if r.workload == wname and r.chain == chain]
        metric_names = [m for m in dict.fromkeys(r.metric for r in wrows) if m is not None]
        # Headline metrics first, in the workload's order; then the rest if asked for.
        ranks = {r.metric: r.headline for r in wrows if r.headline is not None}
        shown: list[str | None] = sorted(ranks, key=lambda m: ranks[m])
        if all_metrics or not shown:
            shown += [m for m in metric_names if m not in shown]
        varying, constant = split_dims(wrows)
        caption_params = " ".join(
            f"{p}={numbers.setting(_dims(wrows[0]).get(p))}" for p in constant
        )
        caption = "mean ± 95% CI (n)" + (f" · {caption_params}" if caption_params else "")
        if chain:
            caption += f" · step of {chain.replace('+', ' → ')} on one mkfs"
        configs = list(dict.fromkeys(label_of(r) for r in wrows))
        row_header = "host · config" if any(r.host for r in wrows) else "config"
        if varying:
            combos = list(dict.fromkeys(_params_label(_dims(r), varying) for r in wrows))
            for metric in shown or [None]:
                notes = _Notes()
                mrows = [r for r in wrows if r.metric == metric or r.metric is None]
                sample = next((r for r in mrows if r.metric == metric), None)
                # Columns where this metric was measured (or refused): a step that never
                # reports it (the aging workload's second read) is no column of its table.
                here = [
                    c
                    for c in combos
                    if any(
                        _params_label(_dims(r), varying) == c
                        and (r.metric is None or r.values or r.status != "ok")
                        for r in mrows
                    )
                ] or combos
                body = []
                ranked: list[list[tuple[str, Row | None]]] = [[] for _ in here]
                for config in configs:
                    crows = [r for r in mrows if label_of(r) == config]
                    cells = []
                    for j, combo in enumerate(here):
                        match = next(
                            (r for r in crows if _params_label(_dims(r), varying) == combo), None
                        )
                        cells.append(_cell_text(match, f"{config} · {combo}", notes))
                        ok = match if match is not None and match.metric == metric else None
                        ranked[j].append((config, ok))
                    body.append((_config_label(config, crows, notes), cells))
                title = f"{wname}: {_unit_text(sample)}" if sample else wname
                header = varying[0] if len(varying) == 1 else "parameters"
                table = Table(
                    title,
                    caption,
                    f"{row_header} \\ {header}",
                    here,
                    body,
                    notes.items,
                    workload=wname,
                    chain=chain,
                    metric=metric,
                )
                _significance(table, ranked, decisions)
                per_column = [
                    (combo, [r for _, r in col if r is not None])
                    for combo, col in zip(here, ranked, strict=True)
                ]
                _add_power(table, per_column)
                tables.append(table)
        else:
            notes = _Notes()
            body = []
            ranked = [[] for _ in shown or [None]]
            for config in configs:
                crows = [r for r in wrows if label_of(r) == config]
                cells = []
                for j, metric in enumerate(shown or [None]):
                    match = next((r for r in crows if r.metric == metric), crows[0])
                    cells.append(_cell_text(match, config, notes))
                    ranked[j].append((config, match if match.metric == metric else None))
                body.append((_config_label(config, crows, notes), cells))
            columns = []
            for metric in shown:
                sample = next(r for r in wrows if r.metric == metric)
                columns.append(_unit_text(sample))
            table = Table(
                wname,
                caption,
                row_header,
                columns or ["result"],
                body,
                notes.items,
                workload=wname,
                chain=chain,
            )
            if shown:
                _significance(table, ranked, decisions)
                _add_power(table, [(str(m), [r for r in wrows if r.metric == m]) for m in shown])
            tables.append(table)
    return tables


def run_hosts(run: RunRecord) -> list[str] | None:
    """The hosts of a run on many machines, as its target describes them (its trials ran
    there, not on the machine whose facts the run's `host` holds); None for a run on one
    machine."""
    hosts = run.target.get("hosts")
    return list(hosts) if isinstance(hosts, dict) and hosts else None


def machine_line(run: RunRecord) -> str:
    """Where the trials ran, in one line."""
    names = run_hosts(run)
    if names is not None:
        shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
        return (
            f"hosts: {len(names)} host{'s' if len(names) != 1 else ''} ({shown}), "
            "each its own machine (compare --by host says what differs)"
        )
    h = run.host
    line = (
        f"host: Linux {h.shown('kernel')}, {h.shown('cpus')} x {h.shown('cpu')}, "
        f"{h.shown('memory_bytes') or '?'} RAM"
    )
    if h.free_page_reporting:
        # hostfacts.free_page_reporting: a buffered trial's speed can be the hypervisor's.
        line += "; free memory reported to the hypervisor (buffered I/O pays to fault it back)"
    if h.cpu_latency_us == 0:
        # hostkeys.cpu_latency_us: held as the run began (its cpu_idle, or another program)
        line += "; CPUs held out of deep idle (wake-up latency 0)"
    if h.flagged:
        line += f"; stored facts unreadable here: {'; '.join(h.flagged.values())}"
    return line


def run_header(run: RunRecord, rows: list[Row] | None = None) -> list[str]:
    """Who/what/where lines above every human-readable report."""
    t = run.target
    lines = [
        f"fsbench run {run.id} ({run.name}, {run.status}) {run.created_at[:19].replace('T', ' ')}"
        f" UTC, fsbench {run.fsbench_version}",
        machine_line(run),
    ]
    lines.append(f"target: {t.get('summary') or t.get('kind', '?')}")
    lines += [f"note: {note}" for note in t.get("notes") or []]
    plan = run.plan
    order = "interleaved"
    if plan.get("seed") is not None:
        warm = plan.get("warmup") or 0
        ran = design_of(run).warmups_run
        if ran is not None:  # a decided run that counted its warm-ups
            warmed = f"+ {ran} warm-up trial{'s' if ran != 1 else ''} (not counted), "
        elif design_of(run).warmup == "trial":
            warmed = "+ a warm-up trial per group (not counted), "
        elif warm:
            warmed = f"+ {warm} warm-up round{'s' if warm > 1 else ''} (not counted), "
        else:
            warmed = ""
        order = warmed + f"order shuffled and balanced (seed {plan['seed']})"
    reps = plan.get("reps")
    if reps == "decide":
        budget = f", budget {numbers.seconds(plan['budget'])}" if plan.get("budget") else ""
        margin = plan.get("margin") or 0.05
        upto = f"margin ±{numbers.percent(margin)}{budget}"
        reps = f"2 to {plan.get('max_reps')} (until decided, {upto})"
    lines.append(f"scale {plan.get('scale')}, {reps} reps {order}, fresh mkfs every trial")
    spent = budget_line(design_of(run))
    if spent:
        lines.append(spent)
    if rows is not None:
        design = order_design_line(rows)
        if design:
            lines.append(design)
    return lines


def budget_line(design: GridDesign) -> str:
    """What a decided run spent of its budget, and by how much and why it went over."""
    spent, budget = design.spent_s, design.budget_s
    if spent is None:
        return ""
    looks = design.looks()
    upto = f"{looks[0]}-{looks[-1]}" if len(looks) > 1 else (str(looks[0]) if looks else "")
    planned = f"; looks planned up to n = {upto} a group" if looks else ""
    if budget is None:
        return f"time: {numbers.seconds(spent)} (no budget){planned}"
    over = design.over_s or 0.0
    of = f"{numbers.seconds(spent)} of a {numbers.seconds(budget)} budget"
    if design.reserved_s:
        of += f" ({numbers.seconds(design.reserved_s)} of it reserved for the instrumented pass)"
    counted = design.counted_budget_s or budget
    if over > TOLERANCE * counted:
        why = design.over_why or "rounds took longer than projected"
        share = numbers.percent(over / counted)
        return f"time: {of}, {numbers.seconds(over)} ({share}) over: {why}{planned}"
    return f"time: {of}{planned}"


def order_design_line(rows: list[Row]) -> str:
    """Whether the balanced order was complete at the repetitions run: a Williams design
    of k cells balances places after k rounds and carry-over after k (even k) or 2k (odd
    k) rounds; with fewer, places are as even as the count allows."""
    groups: dict[tuple[str, str, str, str], dict[tuple[str, str], int]] = {}
    for r in rows:
        if r.metric is None or not r.values:
            continue
        key = (r.host, r.chain, r.workload, json.dumps(r.params, sort_keys=True, default=str))
        cell = (r.config, json.dumps(r.knobs, sort_keys=True))
        cells = groups.setdefault(key, {})
        cells[cell] = max(cells.get(cell, 0), r.n)
    judged = [(len(c), min(c.values())) for c in groups.values() if len(c) >= 2]
    if not judged:
        return ""
    short = [(k, n) for k, n in judged if n % len(schedule_williams(k))]
    if not short:
        return "order design: complete in every group (places and carry-over balanced)"
    k, n = short[0]
    return (
        f"order design: incomplete in {len(short)} of {len(judged)} groups (e.g. {k} cells "
        f"balance carry-over every {len(schedule_williams(k))} rounds; {n} ran): places "
        "as even as the count allows"
    )
