"""The page: one self-contained HTML file per run, assembled from its sections.

No network: the CSS (page.css, a package resource) is inline and the charts are embedded
as base64 SVG images. Everything on it is read from the store (source.load): a run's report document
(run_report.py) holds it."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path

from fsbench import __version__
from fsbench.analysis import aa_check as calibration
from fsbench.reports import document as d
from fsbench.reports import run_report
from fsbench.reports.charts import Chart, all_charts, trial_series
from fsbench.reports.document import Wants
from fsbench.reports.formats import IMAGES
from fsbench.reports.html.features import SECTION_ID as FEATURES_ID
from fsbench.reports.html.features import features_section
from fsbench.reports.html.flags import flags_html
from fsbench.reports.html.markup import e, tag
from fsbench.reports.html.noise import calibration_html, warning_html
from fsbench.reports.html.problems import ignored_html, problems_html
from fsbench.reports.html.provenance import provenance_html
from fsbench.reports.html.raw import raw_html
from fsbench.reports.html.results import section_id, workload_section
from fsbench.reports.html.safety import SECTION_ID as SAFETY_ID
from fsbench.reports.html.safety import TITLE as SAFETY_TITLE
from fsbench.reports.html.safety import safety_section
from fsbench.reports.html.summary import summary_html
from fsbench.reports.run_report import RunReportDocument
from fsbench.reports.source import RunReport
from fsbench.reports.tables import build_tables
from fsbench.reports.why import Why
from fsbench.store.results import Store
from fsbench.store.runkinds import kind_of

REPORT_NAME = "report.html"


@cache
def css() -> str:
    return resources.files(__package__).joinpath("page.css").read_text(encoding="utf-8")


def _section(sid: str, title: str, inner: str, about: str = "") -> str:
    about_html = tag("p", e(about), class_="about") if about else ""
    return tag("section", tag("h2", e(title), id=sid) + about_html + inner)


def why_html(why: d.Verdicts) -> str:
    """Per explained pair: the counted verdict, then the mechanisms named (a race's page)."""
    return "".join(
        tag("p", tag("strong", e(v.text)) + e(": " + "; ".join(v.details))) for v in why.items
    )


def render_html(report: RunReport, charts: Sequence[Chart], why: Why | None = None) -> str:
    """The whole page as a string (charts are read from their files and embedded); `why`:
    the run's last explain run's mechanisms, under the verdicts of its tables."""
    run, trials, rows = report.run, report.trials, report.rows
    decisions = report.decisions
    tables = build_tables(rows, decisions=decisions)
    toc = [("summary", "Summary")]
    sections = [_section("summary", "Summary", summary_html(tables, rows, trials, decisions))]
    if kind_of(run).calibration:
        noise = calibration.analyze(run, trials)
        toc.append(("calibration", "What this machine resolves"))
        sections.append(
            _section(
                "calibration",
                "What this machine resolves",
                calibration_html(noise),
                "An A/A calibration (fsbench calibrate): identical configs must get no "
                "winner, and their spread is this machine's noise.",
            )
        )
    safety = safety_section(rows, trials, decisions)
    if safety:
        toc.append((SAFETY_ID, SAFETY_TITLE))
        sections.append(_section(SAFETY_ID, SAFETY_TITLE, safety))
    toc.append(("provenance", "Machine, target and plan"))
    sections.append(
        _section("provenance", "Machine, target and plan", provenance_html(run, trials, rows))
    )
    for n, (chain, wl) in enumerate(dict.fromkeys((r.chain, r.workload) for r in rows)):
        sid = section_id(n, wl)
        title = f"{wl} (step of {chain.replace('+', ' → ')})" if chain else wl
        toc.append((sid, title))
        sections.append(
            workload_section(
                run,
                sid,
                title,
                [t for t in tables if t.workload == wl and t.chain == chain],
                [r for r in rows if r.workload == wl and r.chain == chain],
                [c for c in charts if c.workload == wl and c.chain == chain],
                why,
            )
        )
    features = features_section(run, trials)
    if features:
        toc.append((FEATURES_ID, "Filesystem features"))
        sections.append(features)
    toc += [
        ("problems", "Unsupported and failed cells"),
        ("options", "Ignored options"),
        ("flags", "Validity flags"),
        ("raw", "Raw values"),
    ]
    sections += [
        _section("problems", "Unsupported and failed cells", problems_html(rows, trials)),
        _section(
            "options",
            "Ignored options",
            ignored_html(rows),
            "Options the kernel accepted but did not apply, from comparing what was asked "
            "with /proc/self/mountinfo, the filesystem's geometry and dmesg.",
        ),
        _section("flags", "Validity flags", flags_html(rows, trials)),
        _section(
            "raw",
            "Raw values",
            raw_html(trials),
            "Every trial as stored, in schedule order; warm-up trials run and are stored, "
            "but are not counted.",
        ),
    ]
    nav = tag(
        "nav",
        tag("ol", "".join(tag("li", tag("a", e(label), href=f"#{sid}")) for sid, label in toc)),
        class_="toc",
        aria_label="Contents",
    )
    body = "".join(
        [
            _header(report),
            warning_html(rows, report.calibration_run),
            nav,
            *sections,
            tag(
                "footer",
                e(
                    f"fsbench {__version__} · run {run.id} made by fsbench "
                    f"{run.fsbench_version} · every number is mean ± 95% CI (n) unless "
                    "said otherwise"
                ),
            ),
        ]
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="fsbench {e(__version__)}">\n'
        f"<title>{e(f'fsbench run {run.id}: {run.name}')}</title>\n"
        f"<style>{css()}</style>\n</head>\n<body>\n"
        f'<div class="wrap">{body}</div>\n</body>\n</html>\n'
    )


def _header(report: RunReport) -> str:
    run, rows = report.run, report.rows
    when = (run.finished_at or run.created_at or "")[:16].replace("T", " ")
    lede = " · ".join(
        x
        for x in (
            ", ".join(dict.fromkeys(r.config for r in rows)),
            ", ".join(dict.fromkeys(r.workload for r in rows)),
            f"scale {run.plan.get('scale')}" if run.plan.get("scale") else "",
            f"{run.status} {when} UTC" if when else run.status,
        )
        if x
    )
    kicker = "fsbench calibration" if kind_of(run).calibration else "fsbench report"
    return tag(
        "header",
        tag("p", e(kicker), class_="kicker")
        + tag("h1", e(f"Run {run.id}: {run.name}"))
        + tag("p", e(lede), class_="lede"),
        class_="page",
    )


def page_charts(
    document: RunReportDocument, out_dir: Path, formats: Sequence[str] = IMAGES
) -> list[Chart]:
    """Every chart of the run's page, written in out_dir."""
    report = document.report
    return all_charts(
        report.rows,
        document.timelines,
        out_dir,
        formats=formats,
        series=trial_series(report.trials),
        decisions=report.decisions,
    )


def run_page(document: RunReportDocument, chart_dir: Path | None = None) -> str:
    """A run's report document as its page (the HTML exporter's way to write one); the
    charts also kept in chart_dir (PNG and SVG) when given, else drawn in a temporary
    directory (SVG only) that is removed."""
    if chart_dir is not None:
        return render_html(document.report, page_charts(document, chart_dir), document.why)
    with tempfile.TemporaryDirectory(prefix="fsbench-charts-") as tmp:
        charts = page_charts(document, Path(tmp), ("svg",))
        return render_html(document.report, charts, document.why)


def html_report(store: Store, run_id: int, chart_dir: Path | None = None) -> str:
    """The page of `fsbench report --format html` of a stored run."""
    return run_page(run_report.build(store, run_id, Wants(charts=True)), chart_dir)


def write_run_report(store: Store, run_id: int, out_dir: Path) -> list[Path]:
    """report.html plus every chart as PNG and SVG in out_dir; the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    document = run_report.build(store, run_id, Wants(charts=True))
    charts = page_charts(document, out_dir)
    page = out_dir / REPORT_NAME
    page.write_text(render_html(document.report, charts, document.why), encoding="utf-8")
    return [page, *(p for c in charts for p in c.paths)]
