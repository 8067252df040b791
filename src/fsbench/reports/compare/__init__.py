"""`fsbench compare`: two sides cell by cell, each answered as a run's tables answer a
pair. The computation (`cells`: rows in, comparison out; `runs`: two stored runs;
`dimensions`: the levels of one run) apart from the renderers (`text`, `markdown`,
`document` for JSON)."""

from __future__ import annotations

from fsbench.reports.compare.cells import (
    ALPHA,
    BETTER,
    NOT_COMPARED,
    UNDECIDED,
    WORSE,
    CellComparison,
    CellKey,
    Comparison,
    GeoMean,
    cell_key,
    change_text,
    compare_rows,
    geomeans,
)
from fsbench.reports.compare.dimensions import Dimension, compare_within, dimension, knob
from fsbench.reports.compare.document import comparison_document, render_compare_json
from fsbench.reports.compare.markdown import render_compare_markdown
from fsbench.reports.compare.runs import compare_runs, run_differences
from fsbench.reports.compare.text import print_comparison, render_compare_text

__all__ = [
    "ALPHA",
    "BETTER",
    "NOT_COMPARED",
    "UNDECIDED",
    "WORSE",
    "CellComparison",
    "CellKey",
    "Comparison",
    "Dimension",
    "GeoMean",
    "cell_key",
    "change_text",
    "compare_rows",
    "compare_runs",
    "compare_within",
    "comparison_document",
    "dimension",
    "geomeans",
    "knob",
    "print_comparison",
    "render_compare_json",
    "render_compare_markdown",
    "render_compare_text",
    "run_differences",
]
