"""Output formats, named once: each command that writes results takes a subset of these,
and the escaping each text format needs."""

from __future__ import annotations

from collections.abc import Sequence

from fsbench.system.errors import FsbenchError

TABLE, MARKDOWN, CSV, JSON, HTML = "table", "md", "csv", "json", "html"

REPORT = (TABLE, MARKDOWN, CSV, JSON, HTML)  # fsbench report
COMPARE = (TABLE, MARKDOWN, JSON)  # fsbench compare
FEATURES = (TABLE, MARKDOWN, JSON, HTML)  # fsbench features
IMAGES = ("png", "svg")  # charts


def listed(known: Sequence[str]) -> str:
    """'table, md or json': for help texts."""
    return f"{', '.join(known[:-1])} or {known[-1]}" if len(known) > 1 else "".join(known)


def check(fmt: str, known: Sequence[str]) -> str:
    """`fmt` if it is one of `known`, else the one-line refusal every command gives."""
    if fmt not in known:
        raise FsbenchError(f"unknown format {fmt!r} (known: {', '.join(known)})")
    return fmt


def md_escape(text: str) -> str:
    """Text in a markdown table cell: pipes escaped, on one line."""
    return text.replace("|", "\\|").replace("\n", " ")


def rich_escape(text: str) -> str:
    """Text in a rich table: a '[' never opens markup."""
    return text.replace("[", "\\[")
