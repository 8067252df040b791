"""`json`: a document's payload, exactly what `--format json` and `--json` have always
printed of it, indented two spaces."""

from __future__ import annotations

import json

from fsbench.reports.document import Document
from fsbench.reports.export import Exporter, Options


def serialize(document: Document, options: Options) -> str:
    return json.dumps(document.payload, indent=2, default=str) + "\n"


EXPORTER = Exporter("json", serialize)
