"""Every figure the README and its guides (docs/*.md) quote from a bench of fsbench itself
(bench/*.py) is in a committed result file of that bench, bench/results/<bench>*.json,
which says on which machine and when it was measured.

How a document marks a bench-sourced figure, so that the rule can be checked:

- A passage that quotes a bench's results sits between the lines `<!-- bench: NAME -->`
  and `<!-- /bench -->` (HTML comments: nothing shows on the rendered page), NAME being the
  script's stem (`fleet_scale` for bench/fleet_scale.py); several stems are separated by
  commas. Every number in the passage, outside code spans, is a figure of those benches:
  some number in one of their result files, shown to the digits it is shown with (0.995
  matches 0.9951; 12% matches 12 or 0.12; a range 170-390 is two figures).
- Outside such passages, a paragraph (or list item, or table row) that names a bench
  script (`bench/NAME.py`, or `NAME.py` where bench/NAME.py exists) quotes no number
  outside code spans: a bench's figures are quoted inside its marked passage or not at all.
  Numbers in code spans are commands and options (`--attempts 20`), not figures.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


# docs/engine.md came under this rule with the rest of docs/ and does not mark its
# passages yet (its tables of engine_vs_filebench and fio_fidelity figures): until it
# does, it is the one guide left out. Remove it from here when it is marked.
NOT_MARKED_YET = {"docs/engine.md"}


def documents() -> list[Path]:
    """The README and every guide under docs/ but those not marked yet."""
    docs = sorted((ROOT / "docs").glob("*.md"))
    return [README, *(p for p in docs if str(p.relative_to(ROOT)) not in NOT_MARKED_YET)]


BENCH = ROOT / "bench"
RESULTS = BENCH / "results"

# A mark is a line of its own (a mark quoted in a code span is not one).
_OPEN = re.compile(r"^\s*<!--\s*bench:\s*([\w ,-]+?)\s*-->\s*$")
_CLOSE = re.compile(r"^\s*<!--\s*/bench\s*-->\s*$")
_CODE = re.compile(r"`[^`]*`")
# A number, and its percent sign, or the one of the range it opens (29-31%).
_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(%|(?=[-–]\d+(?:\.\d+)?%))?")


def _figures(text: str) -> Iterator[tuple[str, float, int, bool]]:
    """(as shown, value, decimals shown, percent) of each number outside code spans."""
    for m in _NUMBER.finditer(_CODE.sub(" ", text)):
        whole, frac, pct = m.group(1), m.group(2) or "", m.group(3) is not None
        yield m.group(0), float(whole.replace(",", "") + frac), max(len(frac) - 1, 0), pct


def _numbers(doc: Any) -> Iterator[float]:
    """Every number a result file holds, numeric strings included (a plan's "2")."""
    if isinstance(doc, bool):
        return
    if isinstance(doc, (int, float)):
        if math.isfinite(doc):
            yield float(doc)
    elif isinstance(doc, str):
        try:
            value = float(doc)
        except ValueError:
            return
        if math.isfinite(value):
            yield value
    elif isinstance(doc, dict):
        for value in doc.values():
            yield from _numbers(value)
    elif isinstance(doc, list):
        for value in doc:
            yield from _numbers(value)


def _shown_as(value: float, decimals: int, number: float) -> bool:
    return math.isclose(round(number, decimals), value, abs_tol=10 ** -(decimals + 3))


def _result_files(stem: str) -> list[Path]:
    return sorted(p for p in RESULTS.glob("*.json") if re.match(rf"{stem}(\W|_|$)", p.stem))


def _passages(text: str) -> Iterator[tuple[list[str], str, int]]:
    """(bench stems, text, first line) of each marked passage."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opened = _OPEN.search(lines[i])
        if opened is None:
            i += 1
            continue
        stems = [s.strip() for s in opened.group(1).split(",") if s.strip()]
        j = i + 1
        while j < len(lines) and not _CLOSE.search(lines[j]):
            assert not _OPEN.search(lines[j]), f"line {j + 1}: a passage in a passage"
            j += 1
        assert j < len(lines), f"line {i + 1}: <!-- bench: --> never closed"
        yield stems, "\n".join(lines[i + 1 : j]), i + 2
        i = j + 1


def _outside_passages(text: str) -> str:
    kept, inside = [], False
    for line in text.splitlines():
        if _OPEN.search(line):
            inside = True
        kept.append("" if inside else line)
        if _CLOSE.search(line):
            inside = False
    return "\n".join(kept)


def _blocks(text: str) -> Iterator[tuple[int, str]]:
    """Paragraphs, list items and table rows, with their first line number."""
    block: list[str] = []
    start = 0
    for n, line in enumerate([*text.splitlines(), ""], 1):
        item = re.match(r"\s*([-*]|\d+\.)\s|\s*\|", line)
        if not line.strip() or item:
            if block:
                yield start, " ".join(block)
            block, start = [], n
        if line.strip():
            if not block:
                start = n
            block.append(line.strip())
            if line.lstrip().startswith("|"):
                yield start, " ".join(block)
                block = []


def _bench_names(text: str) -> set[str]:
    scripts = {p.stem for p in BENCH.glob("*.py")}
    named = set(re.findall(r"bench/(\w+)\.py", text))
    named |= {s for s in re.findall(r"(?<![\w/])(\w+)\.py\b", text) if s in scripts}
    return named


def check(text: str, name: str = "README") -> list[str]:
    """What a document quotes from a bench that no result file holds, one line each."""
    problems = []
    for stems, passage, line in _passages(text):
        files = [f for s in stems for f in _result_files(s)]
        if not files:
            problems.append(f"{name} line {line}: no bench/results/ file of {', '.join(stems)}")
            continue
        held: list[float] = []
        for path in files:
            doc = json.loads(path.read_text())
            for key in ("machine", "date"):
                if not doc.get(key):
                    problems.append(f"{path.relative_to(ROOT)}: no {key!r}")
            held += _numbers(doc)
        for shown, value, decimals, pct in _figures(passage):
            candidates = held + ([h * 100 for h in held] if pct else [])
            if not any(_shown_as(value, decimals, h) for h in candidates):
                problems.append(
                    f"{name} line {line}+: {shown} is in no result file of {', '.join(stems)}"
                )
    for line, block in _blocks(_outside_passages(text)):
        named = _bench_names(block)
        quoted = [shown for shown, *_ in _figures(block)]
        if named and quoted:
            problems.append(
                f"{name} line {line}: names bench {', '.join(sorted(named))} and quotes "
                f"{', '.join(quoted)} outside a <!-- bench: --> passage"
            )
    return problems


def test_the_readme_quotes_from_benches_only_what_their_result_files_hold() -> None:
    problems = []
    quoted: set[str] = set()
    for path in documents():
        text = path.read_text()
        problems += check(text, str(path.relative_to(ROOT)))
        quoted |= {stem for stems, _, _ in _passages(text) for stem in stems}
    assert problems == []
    # The passages the guides hold: the check has something to check.
    assert {"engine_vs_filebench", "monitor_overhead", "fleet_scale"} <= quoted


def test_the_rule_catches_a_figure_no_result_file_holds(tmp_path: Path) -> None:
    """The check itself: a made-up figure in a marked passage, a figure beside a bench's
    name outside one, and a passage of a bench without results are each caught; what a
    result file holds, shown to fewer digits, passes."""
    files = _result_files("monitor_overhead")
    assert files, "bench/results/monitor_overhead.json is committed"
    doc = json.loads(files[0].read_text())
    ratio = doc["results"]["ratio_with_without"]
    good = f"<!-- bench: monitor_overhead -->\nratio {ratio:.2f}\n<!-- /bench -->\n"
    assert check(good) == []
    made_up = f"<!-- bench: monitor_overhead -->\nratio {ratio + 0.5:.2f}\n<!-- /bench -->\n"
    assert len(check(made_up)) == 1
    beside = "`bench/monitor_overhead.py` measured a ratio of 0.98.\n"
    assert "outside a <!-- bench: --> passage" in check(beside)[0]
    assert check("`bench/monitor_overhead.py` (`--reps 8`) alternates.\n") == []
    nothing = "<!-- bench: no_such_bench -->\n1.5 s\n<!-- /bench -->\n"
    assert "no bench/results/ file of no_such_bench" in check(nothing)[0]
