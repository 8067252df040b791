"""Renderers: pure functions from a run and its rows to text, one per format (the HTML
page is `reports.html`); the format names are `reports.formats`."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from dataclasses import dataclass

from rich import box
from rich.console import Console
from rich.table import Table as RichTable

from fsbench.analysis import verdicts
from fsbench.analysis.rows import Row, report_document
from fsbench.reports import formats
from fsbench.reports import noise_notes as calibrated
from fsbench.reports.formats import CSV, HTML, JSON, MARKDOWN, TABLE, md_escape, rich_escape
from fsbench.reports.safety import baseline, safety_lines
from fsbench.reports.source import RunReport
from fsbench.reports.tables import Table, build_tables, run_header
from fsbench.store.records import RunRecord
from fsbench.system.plugins import Registry

# The CSV columns, in order: a row's identity and summary, its values, then what the
# statistics say of them (columns are only ever added at the end).
CSV_COLUMNS = (
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
    "warmup_values",
    "outliers",
    "min_detectable",
    "reps_for_5pct",
    "flags",
    "verdict",
    "ranking",
)


def render_json(run: RunRecord, rows: list[Row], calibration_run: int | None = None) -> str:
    document = report_document(run, rows, calibration_run)
    # Each comparison with its verdict: the same decisions every other format shows.
    document["comparisons"] = verdicts.documents(verdicts.for_run(run.plan, rows))
    return json.dumps(document, indent=2) + "\n"


def render_csv(run: RunRecord, rows: list[Row]) -> str:
    """One line per row; lists space-separated (`outliers`: indexes into `values`,
    `flags`: their names; the meanings are in fsbench.analysis.validity)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    decided = verdicts.for_run(run.plan, rows)
    for r in rows:
        verdict = decided.get(verdicts.key_of(r))
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
                " ".join(repr(v) for v in r.warmup_values),
                " ".join(str(i) for i in r.outliers),
                _num(r.min_detectable),
                "" if r.reps_for_5pct is None else r.reps_for_5pct,
                " ".join(r.flags),
                verdict.kind if verdict else "",
                verdict.ranking if verdict else "",
            ]
        )
    return out.getvalue()


def _num(x: float | None) -> str:
    return "" if x is None else repr(x)


def header(run: RunRecord, rows: list[Row], calibration_run: int | None) -> list[str]:
    """The run header (reports.tables), and what its calibration says of the rows."""
    note = calibrated.summary(rows, calibration_run)
    return [*run_header(run, rows), *([note] if note else [])]


def render_markdown(
    run: RunRecord,
    rows: list[Row],
    all_metrics: bool = False,
    calibration_run: int | None = None,
) -> str:
    lines = [f"## fsbench run {run.id}: {run.name}", ""]
    lines += [f"- {md_escape(h)}" for h in header(run, rows, calibration_run)[1:]]
    lines.append("")
    decided = verdicts.for_run(run.plan, rows)
    for t in build_tables(rows, all_metrics, decided):
        lines += [f"### {t.title}", "", f"_{t.caption}_", ""]
        lines.append("| " + " | ".join([t.row_header, *t.columns]) + " |")
        lines.append("|" + "---|" + "---:|" * len(t.columns))
        for i, (label, cells) in enumerate(t.rows):
            texts = [
                f"**{md_escape(c)}**" if (i, j) in t.best and c else md_escape(c)
                for j, c in enumerate(cells)
            ]
            lines.append("| " + " | ".join([md_escape(label), *texts]) + " |")
        if t.verdicts:
            cells_ = [f"_{md_escape(c)}_" if c else "" for c in t.verdict_cells]
            lines.append("| " + " | ".join(["_verdict_", *cells_]) + " |")
        lines.append("")
        if t.legend:
            lines += [f"_{md_escape(t.legend)}._", ""]
        lines += [f"{i}. {md_escape(n)}" for i, n in enumerate(t.footnotes, 1)]
        if t.footnotes:
            lines.append("")
    safety = safety_lines(rows, decided)
    if safety:
        lines += ["### Safety beside speed", "", f"_{md_escape(safety_caption(rows))}_", ""]
        for s in safety:
            said = "; ".join([*s.speed, *s.crash])
            lines.append(f"- **{md_escape(s.config)}**: {md_escape(said)}")
        lines.append("")
    return "\n".join(lines)


def safety_caption(rows: list[Row]) -> str:
    return (
        f"speed against {baseline(rows)}, the run's first config; crash results are counts "
        "over the N power cuts of each config"
    )


def print_tables(
    console: Console,
    run: RunRecord,
    rows: list[Row],
    all_metrics: bool = False,
    calibration_run: int | None = None,
) -> None:
    for line in header(run, rows, calibration_run):
        console.print(line, style="dim", highlight=False, markup=False)
    decided = verdicts.for_run(run.plan, rows)
    for t in build_tables(rows, all_metrics, decided):
        console.print()
        console.print(_rich_table(t))
        for i, note in enumerate(t.footnotes, 1):
            console.print(f"  [{i}] {note}", style="dim", highlight=False, markup=False)
        if t.legend:
            console.print(f"  {t.legend}", style="dim", highlight=False, markup=False)
    safety = safety_lines(rows, decided)
    if safety:
        console.print()
        console.print("Safety beside speed", style="bold", highlight=False, markup=False)
        console.print(f"  {safety_caption(rows)}", style="dim", highlight=False, markup=False)
        for s in safety:
            style = "yellow" if s.damaged else None
            console.print(f"  {s.config}", style="bold", highlight=False, markup=False)
            for text in [*s.speed, *s.crash]:
                console.print(f"    {text}", style=style, highlight=False, markup=False)


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
        for j, c in enumerate(rich_escape(c) for c in cells):
            if c.startswith(("unsupported", "failed")):
                c = f"[yellow]{c}[/]"
            elif (i, j) in t.best:
                c = f"[bold green]{c}[/]"
            styled.append(c)
        table.add_row(rich_escape(label), *styled, end_section=i == len(t.rows) - 1)
    if t.verdicts:
        table.add_row(
            "[dim]verdict[/]",
            *(
                f"[green]{rich_escape(v.short)}[/]"
                if v and v.kind == "order"
                else f"[dim]{rich_escape(v.short)}[/]"
                if v
                else ""
                for v in t.verdicts
            ),
        )
    return table


def render_text(
    run: RunRecord,
    rows: list[Row],
    width: int = 160,
    all_metrics: bool = False,
    calibration_run: int | None = None,
) -> str:
    console = Console(record=True, width=width, file=io.StringIO(), color_system=None)
    print_tables(console, run, rows, all_metrics, calibration_run)
    return console.export_text()


# `fsbench report`'s text formats (the HTML page is reports.html), each a pure function of
# what the store gave and whether every metric gets a table: a registry (system/plugins.py)
# of `Format`s, these the built-ins, plugins entry points of `fsbench.formats.v1`.
Renderer = Callable[[RunReport, bool], str]


@dataclass(frozen=True)
class Format:
    """A report format: `fsbench report --format NAME` writes `render(report, all_metrics)`."""

    name: str
    render: Renderer


TEXT = Format(
    TABLE,
    lambda r, all_metrics: render_text(
        r.run, r.rows, all_metrics=all_metrics, calibration_run=r.calibration_run
    ),
)
MARKDOWN_FORMAT = Format(
    MARKDOWN, lambda r, all_metrics: render_markdown(r.run, r.rows, all_metrics, r.calibration_run)
)
CSV_FORMAT = Format(CSV, lambda r, _: render_csv(r.run, r.rows))
JSON_FORMAT = Format(JSON, lambda r, _: render_json(r.run, r.rows, r.calibration_run))
# The format contract's version: a plugin built for another is refused.
CONTRACT = 1
FORMATS: Registry[Format] = Registry(
    "formats",
    "report format",
    CONTRACT,
    tuple(
        f"{__name__}:{name}" for name in ("TEXT", "MARKDOWN_FORMAT", "CSV_FORMAT", "JSON_FORMAT")
    ),
)


def register_format(name: str, renderer: Renderer) -> Renderer:
    """A report format more (a test's toy; a plugin is an entry point)."""
    if name in FORMATS.all() or name == HTML:
        raise ValueError(f"report format {name!r} exists already")
    FORMATS.register(Format(name, renderer))
    return renderer


def renderer(name: str) -> Renderer:
    """The text renderer of a format."""
    return FORMATS.get(name).render


def report_formats() -> tuple[str, ...]:
    """Every format `fsbench report` writes: the shipped ones first, then those
    registered."""
    return (*formats.REPORT, *(name for name in FORMATS.all() if name not in formats.REPORT))
