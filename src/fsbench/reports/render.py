"""Renderers: pure functions from a run and its rows to text. One per format."""

from __future__ import annotations

import csv
import io
import json

from rich import box
from rich.console import Console
from rich.table import Table as RichTable

from fsbench.reports.rows import Row, report_document
from fsbench.reports.tables import Table, build_tables, run_header
from fsbench.store import RunRecord

FORMATS = ("table", "md", "csv", "json")


def render_json(run: RunRecord, rows: list[Row]) -> str:
    return json.dumps(report_document(run, rows), indent=2) + "\n"


def render_csv(run: RunRecord, rows: list[Row]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        [
            "run",
            "config",
            "fs",
            "workload",
            "params",
            "metric",
            "unit",
            "better",
            "status",
            "message",
            "n",
            "mean",
            "sd",
            "ci95_low",
            "ci95_high",
            "cv",
            "values",
        ]
    )
    for r in rows:
        writer.writerow(
            [
                run.id,
                r.config,
                r.fs,
                r.workload,
                json.dumps(r.params, sort_keys=True),
                r.metric or "",
                r.unit or "",
                r.better or "",
                r.status,
                r.message,
                r.n,
                _num(r.mean),
                _num(r.sd),
                _num(r.ci95[0] if r.ci95 else None),
                _num(r.ci95[1] if r.ci95 else None),
                _num(r.cv),
                " ".join(repr(v) for v in r.values),
            ]
        )
    return out.getvalue()


def _num(x: float | None) -> str:
    return "" if x is None else repr(x)


def render_markdown(run: RunRecord, rows: list[Row], all_metrics: bool = False) -> str:
    lines = [f"## fsbench run {run.id}: {run.name}", ""]
    lines += [f"- {h}" for h in run_header(run)[1:]]
    lines.append("")
    for t in build_tables(rows, all_metrics):
        lines += [f"### {t.title}", "", f"_{t.caption}_", ""]
        lines.append("| " + " | ".join([t.row_header, *t.columns]) + " |")
        lines.append("|" + "---|" + "---:|" * len(t.columns))
        for i, (label, cells) in enumerate(t.rows):
            texts = [
                f"**{_md(c)}**" if (i, j) in t.best and c else _md(c) for j, c in enumerate(cells)
            ]
            lines.append("| " + " | ".join([_md(label), *texts]) + " |")
        if t.verdicts:
            verdicts = [f"_{_md(c)}_" if c else "" for c in t.verdict_cells]
            lines.append("| " + " | ".join(["_verdict_", *verdicts]) + " |")
        lines.append("")
        if t.legend:
            lines += [f"_{_md(t.legend)}._", ""]
        lines += [f"{i}. {_md(n)}" for i, n in enumerate(t.footnotes, 1)]
        if t.footnotes:
            lines.append("")
    return "\n".join(lines)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def print_tables(
    console: Console, run: RunRecord, rows: list[Row], all_metrics: bool = False
) -> None:
    for line in run_header(run):
        console.print(line, style="dim", highlight=False, markup=False)
    for t in build_tables(rows, all_metrics):
        console.print()
        console.print(_rich_table(t))
        for i, note in enumerate(t.footnotes, 1):
            console.print(f"  [{i}] {note}", style="dim", highlight=False, markup=False)
        if t.legend:
            console.print(f"  {t.legend}", style="dim", highlight=False, markup=False)


def _rich_table(t: Table) -> RichTable:
    table = RichTable(
        title=t.title,
        caption=t.caption,
        box=box.SIMPLE_HEAD,
        title_justify="left",
        caption_justify="left",
    )
    table.add_column(t.row_header, no_wrap=True)
    for col in t.columns:
        table.add_column(col, justify="right")
    for i, (label, cells) in enumerate(t.rows):
        styled = []
        for j, c in enumerate(_escape(c) for c in cells):
            if c.startswith(("unsupported", "failed")):
                c = f"[yellow]{c}[/]"
            elif (i, j) in t.best:
                c = f"[bold green]{c}[/]"
            styled.append(c)
        table.add_row(_escape(label), *styled, end_section=i == len(t.rows) - 1)
    if t.verdicts:
        table.add_row(
            "[dim]verdict[/]",
            *(
                f"[green]{_escape(v.short)}[/]"
                if v and v.significant
                else f"[dim]{_escape(v.short)}[/]"
                if v
                else ""
                for v in t.verdicts
            ),
        )
    return table


def _escape(text: str) -> str:
    return text.replace("[", "\\[")


def render_text(
    run: RunRecord, rows: list[Row], width: int = 160, all_metrics: bool = False
) -> str:
    console = Console(record=True, width=width, file=io.StringIO(), color_system=None)
    print_tables(console, run, rows, all_metrics)
    return console.export_text()
