"""`fsbench compare`: two sides cell by cell, each answered as a run's tables answer a
pair. The computation (`cells`: rows in, comparison out; `runs`: two stored runs;
`dimensions`: the levels of one run) apart from its document (`sections`: the blocks every
exporter writes; `document`: with its JSON and CSV)."""

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
from fsbench.reports.compare.document import ComparisonDocument, comparison_document, document
from fsbench.reports.compare.runs import compare_runs, run_differences

__all__ = [
    "ALPHA",
    "BETTER",
    "NOT_COMPARED",
    "UNDECIDED",
    "WORSE",
    "CellComparison",
    "CellKey",
    "Comparison",
    "ComparisonDocument",
    "Dimension",
    "GeoMean",
    "cell_key",
    "change_text",
    "compare_rows",
    "compare_runs",
    "compare_within",
    "comparison_document",
    "dimension",
    "document",
    "geomeans",
    "knob",
    "run_differences",
]
