"""The HTML report: one self-contained page per run. `markup` builds elements around
escaped text; one module per section (summary, provenance, a workload's results and its
repetitions, calibration, features, problems, flags, raw values); `page` assembles them
with the stylesheet `page.css`."""

from __future__ import annotations

from fsbench.reports.html.page import REPORT_NAME, html_report, render_html, write_run_report

__all__ = ["REPORT_NAME", "html_report", "render_html", "write_run_report"]
