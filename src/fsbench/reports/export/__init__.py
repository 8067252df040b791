"""Exporters: one file per format, each writing any document (reports/document.py) behind
one narrow interface, `serialize(document, options) -> str` (hyperfine's `src/export/`:
`trait Exporter { fn serialize }`).

The formats are a registry (system/plugins.py) of `Exporter`s: the shipped ones are
`table`, `md`, `csv`, `json` and `html` (one module each, named for its format); a plugin
adds one as an entry point of `fsbench.formats.v2`, a test's toy with `EXPORTERS.register`.
Every command that shows results (report, compare, tune, bisect, history, features) writes
its document through them, so a new format reaches all six and a new document every format.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fsbench.reports import formats
from fsbench.reports.document import Document
from fsbench.system.plugins import Registry


@dataclass(frozen=True)
class Options:
    """What an exporter is told besides the document."""

    width: int = 160  # columns of a terminal's lines and tables
    color: bool = False  # styles for a terminal that shows them
    charts: Path | None = None  # where a page also keeps its charts (PNG and SVG)


@dataclass(frozen=True)
class Exporter:
    """A format: `--format NAME` writes `serialize(document, options)`."""

    name: str
    serialize: Callable[[Document, Options], str]
    # It draws charts: a document built for it carries what they are drawn from.
    draws: bool = False


# The format contract's version: a plugin built for another is refused. v2: an exporter
# writes any document (v1 rendered a grid run's rows).
CONTRACT = 2
EXPORTERS: Registry[Exporter] = Registry(
    "formats",
    "report format",
    CONTRACT,
    tuple(f"{__name__}.{name}:EXPORTER" for name in formats.REPORT),
)


def exporter(name: str) -> Exporter:
    """The exporter of a format; an unknown one is refused in one line naming those known."""
    if name not in EXPORTERS.stale():  # one built for another contract says so itself
        formats.check(name, tuple(EXPORTERS.all()))
    return EXPORTERS.get(name)


def write(document: Document, fmt: str, options: Options | None = None) -> str:
    """The document in a format."""
    return exporter(fmt).serialize(document, options or Options())
