"""Output formats, named once: the formats fsbench ships (each an exporter,
reports/export/<name>.py; a plugin may add more), the images charts are written as, and how
a command names and checks them."""

from __future__ import annotations

from collections.abc import Sequence

from fsbench.system.errors import FsbenchError

TABLE, MARKDOWN, CSV, JSON, HTML = "table", "md", "csv", "json", "html"

REPORT = (TABLE, MARKDOWN, CSV, JSON, HTML)  # every document is written in each
IMAGES = ("png", "svg")  # charts


def listed(known: Sequence[str]) -> str:
    """'table, md or json': for help texts."""
    return f"{', '.join(known[:-1])} or {known[-1]}" if len(known) > 1 else "".join(known)


def check(fmt: str, known: Sequence[str]) -> str:
    """`fmt` if it is one of `known`, else the one-line refusal every command gives."""
    if fmt not in known:
        raise FsbenchError(f"unknown format {fmt!r} (known: {', '.join(known)})")
    return fmt
