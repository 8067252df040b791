"""The document of a run's report (`fsbench report` of a grid or calibration run): the run
header, the tables of its rows with the run's verdicts, safety beside speed; its JSON
(the rows and every comparison decided) and CSV (one record per row); and, for a page, what
its charts are drawn from. Built from the store alone (reports/source.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fsbench.analysis import verdicts
from fsbench.analysis.rows import Row, report_document
from fsbench.reports import document as d
from fsbench.reports import noise_notes as calibrated
from fsbench.reports import source
from fsbench.reports import why as explained
from fsbench.reports.safety import baseline, safety_lines
from fsbench.reports.source import RunReport
from fsbench.reports.tables import Table, build_tables, run_header
from fsbench.reports.why import Why
from fsbench.store.results import Store

if TYPE_CHECKING:
    from fsbench.reports.charts import Timeline

# The CSV columns, in order: a row's identity and summary, its values, then what the
# statistics say of them (columns are only ever added at the end).
CSV_COLUMNS = (
    "run", "config", "fs", "workload", "params", "metric", "unit", "better", "status",
    "message", "n", "mean", "sd", "ci95_low", "ci95_high", "cv", "values", "warmup_values",
    "outliers", "min_detectable", "reps_for_5pct", "flags", "verdict", "ranking",
    "why",  # the lines under its verdict (reports/why.py)
)  # fmt: skip
SAFETY_TITLE = "Safety beside speed"


@dataclass(frozen=True, kw_only=True)
class RunReportDocument(d.Document):
    report: RunReport
    # The first repetition's timelines of each config (read from the store's samples),
    # when the document is built for a page that draws them.
    timelines: tuple[Timeline, ...] = field(default=())
    why: Why | None = None  # its last explain run's, under its verdicts


def header(report: RunReport) -> list[str]:
    """The run header (reports.tables), and what its calibration says of the rows."""
    note = calibrated.summary(report.rows, report.calibration_run)
    return [*run_header(report.run, report.rows), *([note] if note else [])]


def table_block(t: Table, why: Why | None = None) -> d.Table:
    """One of the run's tables: configs by columns, the best marked, each column's verdict
    and why (`why`: its last explain run's)."""
    rows = []
    for i, (label, texts) in enumerate(t.rows):
        cells = [d.Cell(label)]
        for j, text in enumerate(texts):
            tone: d.Tone = ""
            if text.startswith(("unsupported", "failed")):
                tone = "warn"
            elif (i, j) in t.best:
                tone = "best"
            cells.append(d.Cell(text, tone))
        rows.append(tuple(cells))
    summary: tuple[d.Cell, ...] = ()
    if t.verdicts:
        summary = (
            d.Cell("verdict", "muted"),
            *(
                d.Cell(v.short, "good" if v.kind == "order" else "muted") if v else d.Cell("")
                for v in t.verdicts
            ),
        )
    return d.Table(
        t.title,
        (d.Column(t.row_header), *(d.Column(c, numeric=True) for c in t.columns)),
        tuple(rows),
        caption=t.caption,
        summary=summary,
        footnotes=tuple(t.footnotes),
        legend=t.legend,
        why=explained.under(t, why),
    )


def safety_caption(rows: list[Row]) -> str:
    return (
        f"speed against {baseline(rows)}, the run's first config; crash results are counts "
        "over the N power cuts of each config"
    )


def blocks(report: RunReport, all_metrics: bool = False, why: Why | None = None) -> list[d.Block]:
    run, rows = report.run, report.rows
    lines = header(report)
    out: list[d.Block] = [
        d.Title(f"fsbench run {run.id}: {run.name}", lines[0]),
        d.facts([*lines[1:], *([why.fact] if why else [])]),
    ]
    out += [table_block(t, why) for t in build_tables(rows, all_metrics, report.decisions)]
    safety = safety_lines(rows, report.decisions)
    if safety:
        items = tuple(
            d.Verdict(s.config, (*s.speed, *s.crash), "warn" if s.damaged else "") for s in safety
        )
        out.append(d.Verdicts(items, SAFETY_TITLE, safety_caption(rows)))
    return out


def payload(report: RunReport) -> dict[str, Any]:
    """The JSON: the rows with the run's provenance, and each comparison with its verdict
    (the same decisions every other format shows)."""
    document = report_document(report.run, report.rows, report.calibration_run)
    document["comparisons"] = verdicts.documents(report.decisions)
    return document


def records(report: RunReport, why: Why | None = None) -> d.Records:
    """One record per row (`outliers`: indexes into `values`; `flags`: their names, whose
    meanings are in fsbench.analysis.validity; `why`: the lines under its verdict of the
    pairs that hold its config)."""
    out = []
    for r in report.rows:
        verdict = report.decisions.get(verdicts.key_of(r))
        out.append(
            (
                report.run.id,
                r.config,
                r.fs,
                r.workload,
                r.params,
                r.metric,
                r.unit,
                r.better,
                r.status,
                r.message,
                r.n,
                r.mean,
                r.sd,
                r.ci95[0] if r.ci95 else None,
                r.ci95[1] if r.ci95 else None,
                r.cv,
                r.values,
                r.warmup_values,
                r.outliers,
                r.min_detectable,
                r.reps_for_5pct,
                list(r.flags),
                verdict.kind if verdict else None,
                verdict.ranking if verdict else None,
                explained.for_row(why, verdict, r.config),
            )  # fmt: skip
        )
    return d.Records(CSV_COLUMNS, tuple(out))


def of(
    report: RunReport,
    all_metrics: bool = False,
    timelines: tuple[Timeline, ...] = (),
    why: Why | None = None,
) -> RunReportDocument:
    """The document of a run as the store gave it (`why`: its last explain run's)."""
    run = report.run
    said = payload(report)
    if why is not None:
        said["why"] = why.payload()
    return RunReportDocument(
        kind="report",
        title=f"fsbench run {run.id}: {run.name}",
        blocks=tuple(blocks(report, all_metrics, why)),
        payload=said,
        records=records(report, why),
        report=report,
        timelines=timelines,
        why=why,
    )


def build(store: Store, run_id: int, wants: d.Wants) -> RunReportDocument:
    """A run's report document, read from the store (with its charts' timelines when a
    page draws them)."""
    report = source.load(store, run_id)
    why = explained.of(store, report)
    if not wants.charts:
        return of(report, wants.all_metrics, why=why)
    # Imported here: matplotlib costs most of a second at every start of fsbench.
    from fsbench.reports.charts import first_rep_timelines

    timelines = tuple(first_rep_timelines(report.trials, store.get_samples))
    return of(report, wants.all_metrics, timelines, why)
