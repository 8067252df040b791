"""Two runs side by side (kernel A vs kernel B, today vs last month): pure functions.

Cells are matched by (config label, chain, workload, params, knobs, metric). For every
matched cell: both means with n, the ratio B/A with its 95% CI (delta method), and a
verdict that is called only when Welch's t-test gives p < 0.05 after Holm's correction
over every cell compared; otherwise "no clear difference". Per workload and metric, the
geometric mean of the ratios. Cells found in one run only are listed, not guessed at.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table as RichTable

from fsbench import workloads
from fsbench.reports.ranking import NO_CLEAR, p_value
from fsbench.reports.rows import Row
from fsbench.reports.tables import fmt_value
from fsbench.stats import holm, ratio_ci, welch
from fsbench.store import RunRecord

ALPHA = 0.05
FORMATS = ("table", "md", "json")
BETTER, WORSE, NOT_COMPARED = "better", "worse", "not compared"
_NUMERIC = {"A", "B", "B/A", "p (Holm)"}


@dataclass(frozen=True, order=True)
class CellKey:
    config: str
    chain: str
    workload: str
    params: str  # JSON, keys sorted
    knobs: str  # JSON, keys sorted
    metric: str  # "" when the cell has no metric at all (every trial failed)

    def dims(self) -> dict[str, Any]:
        return {**json.loads(self.params), **json.loads(self.knobs)}

    def as_dict(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "chain": self.chain,
            "workload": self.workload,
            "params": json.loads(self.params),
            "knobs": json.loads(self.knobs),
            "metric": self.metric or None,
        }


def cell_key(row: Row) -> CellKey:
    return CellKey(
        row.config,
        row.chain,
        row.workload,
        json.dumps(row.params, sort_keys=True, default=str),
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
    ratio: float | None  # mean B / mean A
    ratio_ci: tuple[float, float] | None
    p: float | None  # Welch, raw
    p_adjusted: float | None  # Holm over every cell compared
    verdict: str  # better | worse | no clear difference | not compared
    text: str  # "faster by 23%", "no clear difference", "not compared: A unsupported"

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
        if self.ratio is None:
            return "n/a"
        return f"{self.ratio:.3f}"


@dataclass
class Comparison:
    cells: list[CellComparison]
    only_a: list[CellKey]
    only_b: list[CellKey]
    geomeans: list[GeoMean]
    all_metrics: bool = False
    alpha: float = ALPHA
    compared: int = 0  # cells that went into the Holm correction
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
    pct = abs(change) * 100
    amount = f"{pct:.1f}%" if pct < 10 else f"{pct:.0f}%"
    return f"{word} by {amount}"


def _headline(workload: str, names: Iterable[str]) -> set[str]:
    names = list(names)
    try:
        wanted = [m for m in workloads.get(workload).headline if m in names]
    except KeyError:
        wanted = []
    return set(wanted or names)


def compare_rows(
    rows_a: list[Row], rows_b: list[Row], all_metrics: bool = False, alpha: float = ALPHA
) -> Comparison:
    """Match the cells of two runs and judge every matched pair."""
    if not all_metrics:
        rows_a, rows_b = _headline_rows(rows_a), _headline_rows(rows_b)
    by_a = {cell_key(r): r for r in rows_a}
    by_b = {cell_key(r): r for r in rows_b}
    matched = [k for k in by_a if k in by_b]
    only_a = [k for k in by_a if k not in by_b]
    only_b = [k for k in by_b if k not in by_a]

    tests = []
    for k in matched:
        a, b = by_a[k], by_b[k]
        w = welch(a.values, b.values) if a.values and b.values else None
        tests.append(w.p if w is not None else None)
    adjusted = holm(tests)

    cells: list[CellComparison] = []
    for k, p, p_adj in zip(matched, tests, adjusted, strict=True):
        a, b = by_a[k], by_b[k]
        better = a.better or b.better
        unit = a.unit or b.unit
        ratio: float | None = None
        ci: tuple[float, float] | None = None
        if a.values and b.values:
            r, ci = ratio_ci(a.values, b.values)
            ratio = r if math.isfinite(r) else None
        if not (a.values and b.values):
            missing = [
                f"{side} {row.status}" for side, row in (("A", a), ("B", b)) if not row.values
            ]
            verdict, text = NOT_COMPARED, f"{NOT_COMPARED}: {', '.join(missing)}"
        elif p_adj is None:
            verdict, text = NO_CLEAR, f"{NO_CLEAR} (n < 2)"
        elif p_adj < alpha and ratio is not None and ratio != 1 and better:
            improved = ratio > 1 if better == "higher" else ratio < 1
            verdict = BETTER if improved else WORSE
            text = change_text(ratio, better, unit, k.metric)
        else:
            verdict, text = NO_CLEAR, NO_CLEAR
        cells.append(CellComparison(k, unit, better, a, b, ratio, ci, p, p_adj, verdict, text))

    return Comparison(
        cells=cells,
        only_a=only_a,
        only_b=only_b,
        geomeans=geomeans(cells),
        all_metrics=all_metrics,
        alpha=alpha,
        compared=sum(1 for p in tests if p is not None),
    )


def compare_runs(
    a: RunRecord, rows_a: list[Row], b: RunRecord, rows_b: list[Row], all_metrics: bool = False
) -> Comparison:
    """compare_rows, plus what differs between the two runs' machines and targets."""
    cmp = compare_rows(rows_a, rows_b, all_metrics)
    cmp.differences = run_differences(a, b)
    return cmp


def knob_levels(rows: list[Row], knob: str) -> list[str]:
    """The values a knob takes in a run's rows, in the order they first appear."""
    return list(dict.fromkeys(r.knobs[knob] for r in rows if knob in r.knobs))


def split_by_knob(rows: list[Row], knob: str, level: str) -> list[Row]:
    """The rows of one level of a knob, the knob itself left out of their cells, so that
    the cells of two levels match (ext4 under kernel=6.1 against ext4 under kernel=6.12)."""
    return [
        replace(r, knobs={k: v for k, v in r.knobs.items() if k != knob})
        for r in rows
        if r.knobs.get(knob) == level
    ]


def _headline_rows(rows: list[Row]) -> list[Row]:
    names: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        if r.metric is not None:
            names.setdefault((r.chain, r.workload), [])
            if r.metric not in names[(r.chain, r.workload)]:
                names[(r.chain, r.workload)].append(r.metric)
    keep = {key: _headline(key[1], ms) for key, ms in names.items()}
    return [r for r in rows if r.metric is None or r.metric in keep[(r.chain, r.workload)]]


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


def run_differences(a: RunRecord, b: RunRecord) -> list[dict[str, Any]]:
    """What differs between the two runs' machines and targets (kernel, tools, device)."""
    diffs = []
    for section, da, db in (("host", a.host, b.host), ("target", a.target, b.target)):
        flat_a, flat_b = _flatten(da), _flatten(db)
        for name in dict.fromkeys([*flat_a, *flat_b]):
            if name in {"hostname", "image", "loop_device", "owner_pid", "diskstats_name"}:
                continue
            if flat_a.get(name) != flat_b.get(name):
                diffs.append(
                    {"what": f"{section}.{name}", "a": flat_a.get(name), "b": flat_b.get(name)}
                )
    if a.fsbench_version != b.fsbench_version:
        diffs.append({"what": "fsbench_version", "a": a.fsbench_version, "b": b.fsbench_version})
    for name in ("scale", "reps"):
        if a.plan.get(name) != b.plan.get(name):
            diffs.append({"what": f"plan.{name}", "a": a.plan.get(name), "b": b.plan.get(name)})
    return diffs


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


# --- output -------------------------------------------------------------------------------


def _num(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def _side(row: Row) -> dict[str, Any]:
    return {
        "status": row.status,
        "message": row.message,
        "n": row.n,
        "mean": _num(row.mean),
        "sd": _num(row.sd),
        "ci95": [_num(x) for x in row.ci95] if row.ci95 else None,
        "values": row.values,
    }


def _run_summary(run: RunRecord) -> dict[str, Any]:
    return {
        "id": run.id,
        "name": run.name,
        "status": run.status,
        "created_at": run.created_at,
        "fsbench_version": run.fsbench_version,
        "kernel": run.host.get("kernel"),
    }


def comparison_document(a: RunRecord, b: RunRecord, cmp: Comparison) -> dict[str, Any]:
    """The stable JSON structure of `fsbench compare --format json`."""
    return {
        "a": _run_summary(a),
        "b": _run_summary(b),
        "ratio": "mean B / mean A",
        "test": {"name": "welch", "alpha": cmp.alpha, "correction": "holm", "cells": cmp.compared},
        "metrics": "all" if cmp.all_metrics else "headline",
        "differences": cmp.differences,
        "cells": [
            {
                **c.key.as_dict(),
                "unit": c.unit,
                "better": c.better,
                "a": _side(c.a),
                "b": _side(c.b),
                "ratio": _num(c.ratio),
                "ratio_ci95": [_num(x) for x in c.ratio_ci] if c.ratio_ci else None,
                "p": _num(c.p),
                "p_adjusted": _num(c.p_adjusted),
                "verdict": c.verdict,
                "text": c.text,
            }
            for c in cmp.cells
        ],
        "geomeans": [
            {
                "chain": g.chain,
                "workload": g.workload,
                "metric": g.metric,
                "unit": g.unit,
                "better": g.better,
                "cells": g.cells,
                "ratio": _num(g.ratio),
                "verdicts": g.counts,
            }
            for g in cmp.geomeans
        ],
        "only_a": [k.as_dict() for k in cmp.only_a],
        "only_b": [k.as_dict() for k in cmp.only_b],
    }


def render_compare_json(a: RunRecord, b: RunRecord, cmp: Comparison) -> str:
    return json.dumps(comparison_document(a, b, cmp), indent=2) + "\n"


@dataclass
class _Section:
    title: str
    caption: str
    header: list[str]
    rows: list[list[str]]
    verdicts: list[str]  # per row: better | worse | ...


def _dims_text(dims: dict[str, Any], names: list[str]) -> str:
    return " ".join(f"{n}={dims.get(n)}" for n in names)


def _ratio_text(c: CellComparison) -> str:
    if c.ratio is None:
        return "-"
    text = f"{c.ratio:.3f}"
    if c.ratio_ci is not None:
        text += f" [{c.ratio_ci[0]:.3f}, {c.ratio_ci[1]:.3f}]"
    return text


def _sections(cmp: Comparison) -> list[_Section]:
    out = []
    for chain, workload in dict.fromkeys((c.key.chain, c.key.workload) for c in cmp.cells):
        group = [c for c in cmp.cells if c.key.workload == workload and c.key.chain == chain]
        names = list(dict.fromkeys(n for c in group for n in c.key.dims()))
        varying = [n for n in names if len({repr(c.key.dims().get(n)) for c in group}) > 1]
        constant = [n for n in names if n not in varying]
        caption = "mean ± 95% CI (n); B/A [95% CI]"
        if constant:
            caption += " · " + _dims_text(group[0].key.dims(), constant)
        if chain:
            caption += f" · step of {chain.replace('+', ' → ')}"
        header = ["config", *(["parameters"] if varying else []), "metric", "A", "B", "B/A"]
        header += ["p (Holm)", "verdict"]
        rows = []
        for c in group:
            metric = c.key.metric or "-"
            if c.unit and c.better:
                metric += f" ({c.unit}, {c.better})"
            row = [c.key.config]
            if varying:
                row.append(_dims_text(c.key.dims(), varying))
            row += [metric, _side_text(c.a), _side_text(c.b), _ratio_text(c), p_text(c), c.text]
            rows.append(row)
        out.append(
            _Section(
                f"{workload}{f' ({chain})' if chain else ''}",
                caption,
                header,
                rows,
                [c.verdict for c in group],
            )
        )
    return out


def _side_text(row: Row) -> str:
    return fmt_value(row) if row.values else row.status


def _header_lines(a: RunRecord, b: RunRecord, cmp: Comparison) -> list[str]:
    lines = [
        f"A: run {a.id} ({a.name}, {a.status}) {a.created_at[:19].replace('T', ' ')} UTC, "
        f"host Linux {a.host.get('kernel')}, fsbench {a.fsbench_version}",
        f"B: run {b.id} ({b.name}, {b.status}) {b.created_at[:19].replace('T', ' ')} UTC, "
        f"host Linux {b.host.get('kernel')}, fsbench {b.fsbench_version}",
    ]
    for d in cmp.differences:
        lines.append(f"differs: {d['what']}: {d['a']} → {d['b']}")
    lines.append(
        f"verdict: Welch's t-test p < {cmp.alpha:g}, Holm-corrected over {cmp.compared} cells "
        f"compared; otherwise {NO_CLEAR}"
        + ("" if cmp.all_metrics else " (headline metrics; --all-metrics for every one)")
    )
    return lines


def _geomean_rows(cmp: Comparison) -> list[list[str]]:
    rows = []
    for g in cmp.geomeans:
        counts = ", ".join(f"{n} {v}" for v, n in g.counts.items())
        rows.append(
            [
                f"{g.workload}{f' ({g.chain})' if g.chain else ''}",
                f"{g.metric} ({g.unit}, {g.better})" if g.unit else g.metric,
                str(g.cells),
                g.text,
                counts,
            ]
        )
    return rows


def _unmatched_lines(keys: list[CellKey]) -> list[str]:
    """One line per cell (metrics folded together)."""
    cells: dict[tuple[str, str, str, str, str], list[str]] = {}
    for k in keys:
        cells.setdefault((k.config, k.chain, k.workload, k.params, k.knobs), []).append(k.metric)
    lines = []
    for (config, chain, workload, params, knobs), metrics in cells.items():
        dims = {**json.loads(params), **json.loads(knobs)}
        what = " ".join(f"{n}={v}" for n, v in dims.items())
        wl = f"{workload} ({chain})" if chain else workload
        shown = ", ".join(m for m in metrics if m) or "no metrics"
        lines.append(f"{config} · {wl} · {what} · {shown}")
    return lines


def print_comparison(console: Console, a: RunRecord, b: RunRecord, cmp: Comparison) -> None:
    for line in _header_lines(a, b, cmp):
        console.print(line, style="dim", highlight=False, markup=False)
    styles = {BETTER: "bold green", WORSE: "bold red", NOT_COMPARED: "yellow"}
    for s in _sections(cmp):
        table = RichTable(
            title=s.title,
            caption=s.caption,
            box=box.SIMPLE_HEAD,
            title_justify="left",
            caption_justify="left",
        )
        for i, h in enumerate(s.header):
            table.add_column(h, justify="right" if h in _NUMERIC else "left")
            if i == 0:
                table.columns[0].no_wrap = True
        for row, verdict in zip(s.rows, s.verdicts, strict=True):
            cells = [_escape(x) for x in row]
            style = styles.get(verdict)
            if style:
                cells[-1] = f"[{style}]{cells[-1]}[/]"
            table.add_row(*cells)
        console.print()
        console.print(table)
    if cmp.geomeans:
        table = RichTable(
            title="geometric mean of B/A per workload and metric",
            box=box.SIMPLE_HEAD,
            title_justify="left",
        )
        for h in ("workload", "metric", "cells", "geomean B/A", "verdicts"):
            table.add_column(h, justify="right" if h in {"cells", "geomean B/A"} else "left")
        for row in _geomean_rows(cmp):
            table.add_row(*(_escape(x) for x in row))
        console.print()
        console.print(table)
    for side, keys in (("A", cmp.only_a), ("B", cmp.only_b)):
        if keys:
            console.print()
            console.print(f"only in {side} (not compared):", highlight=False, markup=False)
            for line in _unmatched_lines(keys):
                console.print(f"  {line}", style="dim", highlight=False, markup=False)


def _escape(text: str) -> str:
    return text.replace("[", "\\[")


def render_compare_text(a: RunRecord, b: RunRecord, cmp: Comparison, width: int = 200) -> str:
    console = Console(record=True, width=width, file=io.StringIO(), color_system=None)
    print_comparison(console, a, b, cmp)
    return console.export_text()


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_compare_markdown(a: RunRecord, b: RunRecord, cmp: Comparison) -> str:
    lines = [f"## fsbench compare: run {a.id} (A) vs run {b.id} (B)", ""]
    lines += [f"- {_md(x)}" for x in _header_lines(a, b, cmp)]
    lines.append("")
    for s in _sections(cmp):
        lines += [f"### {_md(s.title)}", "", f"_{_md(s.caption)}_", ""]
        lines.append("| " + " | ".join(s.header) + " |")
        lines.append("|" + "".join("---:|" if h in _NUMERIC else "---|" for h in s.header))
        for row, verdict in zip(s.rows, s.verdicts, strict=True):
            cells = [_md(x) for x in row]
            if verdict in (BETTER, WORSE):
                cells[-1] = f"**{cells[-1]}**"
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    if cmp.geomeans:
        lines += ["### geometric mean of B/A", ""]
        lines.append("| workload | metric | cells | geomean B/A | verdicts |")
        lines.append("|---|---|---:|---:|---|")
        for row in _geomean_rows(cmp):
            lines.append("| " + " | ".join(_md(x) for x in row) + " |")
        lines.append("")
    for side, keys in (("A", cmp.only_a), ("B", cmp.only_b)):
        if keys:
            lines += [f"### only in {side} (not compared)", ""]
            lines += [f"- {_md(x)}" for x in _unmatched_lines(keys)]
            lines.append("")
    return "\n".join(lines)


def p_text(c: CellComparison) -> str:
    return "-" if c.p_adjusted is None else p_value(c.p_adjusted)
