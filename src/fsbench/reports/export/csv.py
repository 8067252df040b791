"""`csv`: a document's records, one a line (its tables, one after another, when it has
none). A list is written space-separated (a missing value in it as '-'), a mapping as JSON
with sorted keys, a float as Python writes it back exactly (repr), None as nothing."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from typing import Any

from fsbench.reports import document as d
from fsbench.reports.export import Exporter, Options


def value(x: Any) -> str:
    """One field."""
    if x is None:
        return ""
    if isinstance(x, float):
        return repr(x)
    if isinstance(x, list | tuple):
        return " ".join("-" if v is None else value(v) for v in x)
    if isinstance(x, Mapping):
        return json.dumps(x, sort_keys=True)
    return str(x)


def _tables(document: d.Document) -> list[d.Records]:
    tables = [
        b.as_table() if isinstance(b, d.Histogram | d.FlameDiff) else b
        for b in document.blocks
        if isinstance(b, d.Table | d.Histogram | d.FlameDiff)
    ]
    return [
        d.Records(
            tuple(c.name for c in t.columns),
            tuple(tuple(c.text if c.value is None else c.value for c in row) for row in t.rows),
        )
        for t in tables
    ]


def serialize(document: d.Document, options: Options) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    found = [document.records] if document.records is not None else _tables(document)
    for i, records in enumerate(found):
        if i:
            out.write("\n")
        writer.writerow(records.columns)
        writer.writerows([value(x) for x in row] for row in records.rows)
    return out.getvalue()


EXPORTER = Exporter("csv", serialize)
