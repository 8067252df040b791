"""What every renderer shares: a cell's mark and text, and which cells differ from the
majority of their row.

A cell differs when a strict majority of the filesystems measured in its row (✓, ✗ or –;
unavailable filesystems and probe errors do not vote) agree on something it does not:
first the whole cell (mark and value), else the mark alone. Without a strict majority
nothing is highlighted: two filesystems that disagree are simply different.
"""

from __future__ import annotations

from collections import Counter

from fsbench.execute.features.values import value_text
from fsbench.store.features import MEASURED, FeatureRow, FeatureTable, Result

MARKS = {"yes": "✓", "no": "✗", "n/a": "–", "unsupported": "–", "error": "!"}
LEGEND = (
    "✓ yes  ✗ no  – not applicable / unavailable  ! probe failed;  "
    "highlighted: differs from the majority of the filesystems measured"
)


def cell_text(row: FeatureRow, r: Result) -> str:
    """'✓ 64 KiB', '✗', '– unavailable'; a measured quantity shows its value alone."""
    if r.supported == "unsupported":
        return "– unavailable"
    if r.supported == "error":
        return "! error"
    value = value_text(r)
    if row.quantity and r.supported == "yes" and value:
        return value
    mark = MARKS[r.supported]
    return f"{mark} {value}" if value else mark


def _vote(r: Result) -> tuple[str, str]:
    return (r.supported, value_text(r))


def differs(row: FeatureRow, filesystems: list[str]) -> set[str]:
    """Filesystems whose cell differs from the row's majority (see the module doc)."""
    measured = {
        fs: row.results[fs]
        for fs in filesystems
        if fs in row.results and row.results[fs].supported in MEASURED
    }
    n = len(measured)
    if n < 2:
        return set()
    cell, count = Counter(_vote(r) for r in measured.values()).most_common(1)[0]
    if 2 * count > n:
        return {fs for fs, r in measured.items() if _vote(r) != cell}
    mark, count = Counter(r.supported for r in measured.values()).most_common(1)[0]
    if 2 * count > n:
        return {fs for fs, r in measured.items() if r.supported != mark}
    return set()


def unavailable(table: FeatureTable) -> dict[str, str]:
    """Filesystems that could not be probed at all, with the reason."""
    out: dict[str, str] = {}
    for fs in table.filesystems:
        results = [row.results.get(fs) for row in table.features]
        notes = {r.note for r in results if r is not None and r.supported == "unsupported"}
        if (
            results
            and len(notes) == 1
            and all(r is not None and r.supported == "unsupported" for r in results)
        ):
            out[fs] = notes.pop().removeprefix("unavailable: ")
    return out
