"""The document of `fsbench features`: the table of what this kernel and these tools do,
a cell per filesystem and feature (the differing ones marked), the filesystems it could not
probe, each feature's question with the notes of its cells (and, asked for, their
evidence); its JSON (the FeatureTable itself) and one CSV record per cell. The table as an
HTML fragment is the run page's too (html/features.py)."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from importlib import resources
from pathlib import Path

from fsbench.execute.features.tables import LEGEND, MARKS, cell_text, differs, unavailable
from fsbench.reports import document as d
from fsbench.store.features import FeatureRow, FeatureTable, Result
from fsbench.system import numbers

# How a cell stands out, by what the probe found (a differing cell is marked instead).
TONES: dict[str, d.Tone] = {
    "yes": "good",
    "no": "bad",
    "n/a": "muted",
    "unsupported": "muted",
    "error": "warn",
}
QUESTIONS = "Questions and notes"
CSV_COLUMNS = ("feature", "question", "filesystem", "supported", "value", "unit", "note")


@dataclass(frozen=True, kw_only=True)
class FeaturesDocument(d.Document):
    table: FeatureTable


def _header(table: FeatureTable) -> str:
    took = f" in {numbers.seconds(table.seconds)}" if table.seconds is not None else ""
    return f"Filesystem features measured on Linux {table.kernel}{took}"


def _table(table: FeatureTable) -> d.Table:
    rows = []
    for row in table.features:
        odd = differs(row, table.filesystems)
        results = [(fs, row.results[fs]) for fs in table.filesystems]
        cells = [
            d.Cell(cell_text(row, r), "marked" if fs in odd else TONES[r.supported])
            for fs, r in results
        ]
        rows.append((d.Cell(row.name), *cells))
    names = d.columns(["feature", *table.filesystems])
    return d.Table(_header(table), names, tuple(rows), legend=LEGEND)


def _notes(row: FeatureRow, filesystems: list[str]) -> d.Verdict:
    """The feature's question, and the notes of its cells."""
    shown = [(fs, row.results[fs]) for fs in filesystems]
    notes = (f"{fs}: {r.note}" for fs, r in shown if r.note and r.supported != "unsupported")
    return d.Verdict(f"{row.name}: {row.question}", tuple(notes))


def blocks(table: FeatureTable, evidence: bool = False) -> list[d.Block]:
    out: list[d.Block] = [_table(table)]
    gone = unavailable(table)
    if gone:
        out.append(d.facts([f"{fs}: unavailable: {reason}" for fs, reason in gone.items()]))
    out.append(
        d.Verdicts(tuple(_notes(row, table.filesystems) for row in table.features), QUESTIONS)
    )
    if evidence:
        for row in table.features:
            for fs in table.filesystems:
                r = row.results[fs]
                if r.evidence and r.supported != "unsupported":
                    out.append(d.Preformatted(f"{row.name} on {fs}", "\n".join(r.evidence)))
    return out


def records(table: FeatureTable) -> d.Records:
    """One record per feature and filesystem."""
    rows = tuple(
        (row.name, row.question, fs, r.supported, r.value, r.unit, r.note)
        for row in table.features
        for fs, r in ((fs, row.results[fs]) for fs in table.filesystems)
    )
    return d.Records(CSV_COLUMNS, rows)


def document(table: FeatureTable, evidence: bool = False) -> FeaturesDocument:
    """The table's document; every cell's evidence too when asked."""
    return FeaturesDocument(
        kind="features",
        title=_header(table),
        blocks=tuple(blocks(table, evidence)),
        payload=table.model_dump(mode="json"),
        records=records(table),
        table=table,
    )


# --- html ---------------------------------------------------------------------------------

# The feature table's stylesheet, a package resource beside this module.
FEATURES_CSS = (
    resources.files("fsbench.reports").joinpath("html", "features.css").read_text(encoding="utf-8")
)

_CLASS = {
    "yes": "feat-yes",
    "no": "feat-no",
    "n/a": "feat-na",
    "unsupported": "feat-unsupported",
    "error": "feat-error",
}


def e(value: object) -> str:
    return escape("" if value is None else str(value), quote=True)


def _html_cell(row: FeatureRow, r: Result, diff: bool) -> str:
    text = cell_text(row, r)
    mark = MARKS[r.supported]
    if text.startswith(mark):
        summary = f'<span class="mark">{e(mark)}</span>{e(text[len(mark) :])}'
    else:
        summary = e(text)
    classes = _CLASS[r.supported] + (" feat-diff" if diff else "")
    inner = summary
    if r.note or r.evidence:
        body = f'<p class="feat-note">{e(r.note)}</p>' if r.note else ""
        if r.evidence:
            body += f"<pre>{e(chr(10).join(r.evidence))}</pre>"
        inner = f"<details><summary>{summary}</summary>{body}</details>"
    return f'<td class="{classes}">{inner}</td>'


def features_table_html(table: FeatureTable) -> str:
    """The table as an HTML fragment (every string escaped), for the run report: style it
    with FEATURES_CSS. Cells open to show the note and the evidence."""
    head = '<th scope="col">feature</th>' + "".join(
        f'<th scope="col">{e(fs)}</th>' for fs in table.filesystems
    )
    rows = []
    for row in table.features:
        odd = differs(row, table.filesystems)
        cells = "".join(_html_cell(row, row.results[fs], fs in odd) for fs in table.filesystems)
        rows.append(f'<tr><th scope="row" title="{e(row.question)}">{e(row.name)}</th>{cells}</tr>')
    caption = f"<caption>{e(_header(table))}</caption>"
    foot = "".join(
        f"<li>{e(fs)}: unavailable: {e(reason)}</li>" for fs, reason in unavailable(table).items()
    )
    legend = f'<p class="fsb-features-legend">{e(LEGEND)}</p>'
    if foot:
        legend += f'<ul class="fsb-features-unavailable">{foot}</ul>'
    return (
        f'<table class="fsb-features">{caption}<thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>{legend}"
    )


def html_page(table: FeatureTable) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{e(_header(table))}</title><style>{FEATURES_CSS}</style></head>"
        f"<body>{features_table_html(table)}</body></html>\n"
    )


def features_page(document: FeaturesDocument, chart_dir: Path | None = None) -> str:
    """The features document as its page (the HTML exporter's way to write one)."""
    return html_page(document.table)
