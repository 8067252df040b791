"""A race of `fsbench tune` in the formats of `fsbench report` (the tune run kind's report,
store/runkinds.py): the document of reports/tune.py as the terminal's text, JSON or the
race's page."""

from __future__ import annotations

import io
import sys
from pathlib import Path

from rich.console import Console

from fsbench.reports import formats
from fsbench.reports.html.race import race_report_html
from fsbench.reports.tune import as_json, document, print_report
from fsbench.store.results import Store


def report(store: Store, run_id: int, fmt: str, charts: Path | None) -> str | None:
    """A race in a format of `fsbench report` (its run kind's report): what the race
    decided, round by round; None for markdown and CSV, which give the grid's per-config
    tables all the same (those compare configs that ran different numbers of rounds)."""
    if fmt not in (formats.TABLE, formats.JSON, formats.HTML):
        return None
    doc = document(store, run_id)
    if fmt == formats.HTML:
        return race_report_html(doc, charts)
    if fmt == formats.JSON:
        return as_json(doc)
    tty = sys.stdout.isatty()
    buf = io.StringIO()
    print_report(Console(file=buf, force_terminal=tty, width=Console().width if tty else 200), doc)
    return buf.getvalue()
