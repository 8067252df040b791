"""`fsbench history` in every format: the series of run means and their change points.

Pure functions of the series analysis/history.py builds. Change points are numbered once,
in the order the series are listed (`#1`, `#2`...): the number `--bisect N` takes.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from fsbench.analysis.history import ChangePoint, Series, document
from fsbench.reports.formats import md_escape, rich_escape
from fsbench.system import numbers

HARNESS_NOTE = "possibly the harness: fsbench, Python, QEMU or a tool changed at the same run"


def numbered(series: Sequence[Series]) -> list[tuple[int, Series, ChangePoint]]:
    """Every change point with its number (1, 2, ...), in listing order."""
    out: list[tuple[int, Series, ChangePoint]] = []
    for s in series:
        for c in s.changes:
            out.append((len(out) + 1, s, c))
    return out


def ratio_text(c: ChangePoint) -> str:
    """The change's ratio after/before, with its 95% CI."""
    return numbers.ratio(c.ratio, c.ratio_ci95, 0.95 if c.ratio_ci95 else None)


def run_label(named: dict[str, Any]) -> str:
    """A run as a change point names it: id, date, kernel, commit, fsbench version."""
    bits = [f"run {named['run']}", str(named["date"])[:16].replace("T", " ")]
    if named.get("kernel"):
        bits.append(str(named["kernel"]))
    if named.get("commit"):
        bits.append(str(named["commit"])[:12])
    bits.append(f"fsbench {named['fsbench_version']}")
    return ", ".join(bits)


def coincident_text(c: ChangePoint) -> str:
    if not c.coincident:
        return "nothing else recorded changed"
    changed = "; ".join(
        f"{x['what']}: {x['before'] or '-'} -> {x['after'] or '-'} (at run {x['at_run']})"
        for x in c.coincident
    )
    return f"{changed} ({HARNESS_NOTE})" if c.harness else changed


def change_lines(n: int, s: Series, c: ChangePoint) -> list[str]:
    """One change point in words (the table's and markdown's)."""
    unit = f" {s.unit}" if s.unit else ""
    return [
        f"#{n} {c.direction} at point {c.index + 1}: {numbers.number(c.before_mean)} -> "
        f"{numbers.number(c.after_mean)}{unit} "
        f"({c.before_runs} runs before, {c.after_runs} after), "
        f"ratio {ratio_text(c)}, {numbers.p(c.p)} ({c.method})",
        f"   between {run_label(c.before_run)}",
        f"       and {run_label(c.after_run)}",
        f"   also changed: {coincident_text(c)}",
    ]


def print_table(console: Console, series: Sequence[Series], notes: Sequence[str] = ()) -> None:
    numbering = {id(c): n for n, _, c in numbered(series)}
    if not series:
        console.print("no series: no stored run matches", highlight=False)
    for s in series:
        table = Table(title=rich_escape(s.title), title_justify="left", show_edge=False)
        for name in ("run", "date", "kernel", "commit", "n", "mean", "95% CI", "change"):
            table.add_column(name, justify="right" if name in ("n", "mean") else "left")
        starts = {c.index: c for c in s.changes}
        for i, p in enumerate(s.points):
            c = starts.get(i)
            mark = f"#{numbering[id(c)]} {c.direction}" if c else ""
            table.add_row(
                str(p.run), p.created_at[:16].replace("T", " "), rich_escape(p.kernel),
                p.commit[:12], str(p.n), numbers.number(p.mean), numbers.interval(p.ci95), mark,
            )  # fmt: skip
        console.print(table)
        for c in s.changes:
            for line in change_lines(numbering[id(c)], s, c):
                console.print(line, highlight=False, markup=False, soft_wrap=True)
        console.print()
    for note in notes:
        console.print(note, style="dim", highlight=False, markup=False)


def markdown(series: Sequence[Series], notes: Sequence[str] = ()) -> str:
    numbering = {id(c): n for n, _, c in numbered(series)}
    out = ["# fsbench history", ""]
    for s in series:
        out += [f"## {md_escape(s.title)}", ""]
        out += ["| run | date | kernel | commit | n | mean | 95% CI | change |",
                "|---|---|---|---|---:|---:|---|---|"]  # fmt: skip
        starts = {c.index: c for c in s.changes}
        for i, p in enumerate(s.points):
            c = starts.get(i)
            mark = f"#{numbering[id(c)]} {c.direction}" if c else ""
            out.append(
                f"| {p.run} | {p.created_at[:16].replace('T', ' ')} | {md_escape(p.kernel)} | "
                f"{p.commit[:12]} | {p.n} | {numbers.number(p.mean)} | "
                f"{numbers.interval(p.ci95)} | {mark} |"
            )
        out.append("")
        for c in s.changes:
            lines = change_lines(numbering[id(c)], s, c)
            out += [
                f"- **{md_escape(lines[0])}**",
                *(f"  {md_escape(x.strip())}" for x in lines[1:]),
            ]
        out.append("")
    out += [f"_{md_escape(n)}_" for n in notes]
    return "\n".join(out).rstrip() + "\n"


CSV_FIELDS = ("host", "config", "workload", "chain", "params", "knobs", "metric", "unit",
              "better", "headline", "point", "run", "date", "kernel", "commit",
              "fsbench_version", "tag", "n", "mean", "ci_low", "ci_high", "change",
              "change_direction", "change_ratio", "change_p", "change_harness")  # fmt: skip


def csv_text(series: Sequence[Series]) -> str:
    """One row per point; the point that starts a change point carries its number."""
    numbering = {id(c): n for n, _, c in numbered(series)}
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_FIELDS)
    for s in series:
        starts = {c.index: c for c in s.changes}
        for i, p in enumerate(s.points):
            c = starts.get(i)
            w.writerow([
                s.host, s.config, s.workload, s.chain, json.dumps(s.params, sort_keys=True),
                json.dumps(s.knobs, sort_keys=True), s.metric, s.unit, s.better, s.headline,
                i + 1, p.run, p.created_at, p.kernel, p.commit, p.fsbench_version, p.tag, p.n,
                repr(p.mean), repr(p.ci95[0]) if p.ci95 else "", repr(p.ci95[1]) if p.ci95 else "",
                numbering[id(c)] if c else "", c.direction if c else "",
                repr(c.ratio) if c else "", repr(c.p) if c else "", c.harness if c else "",
            ])  # fmt: skip
    return buf.getvalue()


def json_text(series: Sequence[Series], by: str, notes: Sequence[str] = ()) -> str:
    doc = document(series, by, notes)
    for (n, _, _), c in zip(numbered(series), _changes(doc), strict=True):
        c["number"] = n
    return json.dumps(doc, indent=1, default=str) + "\n"


def _changes(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for s in doc["series"] for c in s["changes"]]
