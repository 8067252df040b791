"""What the guides quote of fsbench's output in a code span, inside an `<!-- example: -->`
passage naming this test, is what fsbench's code prints: each quoted span (bench/figures.py
`span_kind` OUTPUT) is made here by the function that prints it, from the inputs given
below or read from a committed fixture, and the passage's quotes are compared whole and
in order. No other number may stand in such a passage: its prose outside the quotes
prints none."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from fsbench.analysis.bisect_gate import refusal
from fsbench.analysis.decisions import Decision, Pair
from fsbench.analysis.explain import Explanation
from fsbench.reports.explain import account_line
from fsbench.system import numbers

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import figures  # noqa: E402

THIS = "tests/unit/test_doc_examples.py"


def _equivalent() -> list[str]:
    pair = Pair(a="ext4", b="xfs", kind="equivalent", equivalent=True, ratio=0.98,
                ci=(0.96, 1.01), ci_level=0.90)  # fmt: skip
    decision = Decision(metric="files_per_s", unit="files/s", better="higher",
                        labels=("ext4", "xfs"), means=(1.0, 0.98), pairs=(pair,))  # fmt: skip
    return [decision.pair_text(pair)]


def _fixture_interval() -> list[str]:
    """The interval of v7.db's run 2, xfs on h2 against ext4 on h2, as the committed
    comparisons of that store print it (tests/data/stores/comparisons.py writes them)."""
    comparisons = json.loads((ROOT / "tests/data/stores/v7-comparisons.json").read_text())
    texts = [c["verdict"]["text"] for c in comparisons["2"]]
    (text,) = [t for t in texts if "h2 · ext4 better than h2 · xfs" in t]
    pair = text.split("h2 · ext4 better than h2 · xfs (")[1].split(")")[0]
    return [pair.split(", ")[1]]  # "1.5×, 98.3% CI 1.44-1.58, Welch p < 0.001"


def _account() -> list[str]:
    e = Explanation(key=("", "fs_mark", "{}"), a="ext4", b="ext4 mount=sync", per="file",
                    headline="files_per_s", n=(3, 3), gap=0.0029, explained=0.80)  # fmt: skip
    return [account_line(e)]


def _refusal() -> list[str]:
    """Endpoints three repetitions each that no budget of three tells apart."""
    found = refusal([790.2, 835.0, 812.0], [780.5, 832.1, 805.7], better="higher", n_max=3,
                    unit="files/s")  # fmt: skip
    assert found is not None
    return [found.line]


# (document, the n-th example passage of it naming this test) -> what its quotes are
EXAMPLES: dict[tuple[str, int], Callable[[], list[str]]] = {
    ("docs/results.md", 0): lambda: [
        numbers.interval((871.3, 1141.6)),
        numbers.ratio(1.023, (0.980, 1.070), 0.95),
        numbers.p(0.012),
        numbers.p(0.0004),
    ],
    ("docs/statistics.md", 0): _equivalent,
    ("docs/statistics.md", 1): _fixture_interval,
    ("docs/explain.md", 0): _account,
    ("docs/bisect.md", 0): _refusal,
}


def _mine(doc: str, text: str | None = None) -> list[figures.Passage]:
    text = (ROOT / doc).read_text() if text is None else text
    return [p for p in figures.passages(text, doc, ("example",)) if THIS in p.files]


def quoted(p: figures.Passage) -> list[str]:
    """The passage's code spans that show output and its blocks of output (each whole,
    its lines unindented), in order."""
    out: list[str] = []
    blocks = {b.lines[0][0]: b for b in figures.blocks(p.text) if b.lines}
    inside: set[int] = set()
    for k, (_, line) in enumerate(p.body, 1):
        if k in blocks and blocks[k].kind == figures.OUTPUT:
            out.append("\n".join(t.strip() for _, t in blocks[k].lines))
        if k in blocks:
            inside |= {n for n, _ in blocks[k].lines}
        if k not in inside and not figures._FENCE.match(line):
            spans = figures._SPAN.finditer(line)
            out += [m.group(1) for m in spans if figures.span_kind(m.group(1)) == figures.OUTPUT]
    return out


def differences(doc: str, text: str | None = None) -> list[str]:
    """What the example passages of `doc` (of `text`, a copy of it, when given) quote
    that the code does not print, or print beside the quotes."""
    out = []
    for index, passage in enumerate(_mine(doc, text)):
        where = (doc, index)
        if where not in EXAMPLES:
            out.append(f"{doc} line {passage.line}: no example here compares it")
            continue
        if quoted(passage) != EXAMPLES[where]():
            out.append(f"{doc} line {passage.line}: {quoted(passage)} != {EXAMPLES[where]()}")
        out += [f"{doc} line {passage.line}: {n} beside the quotes" for n in _prose(passage)]
    return out


@pytest.mark.parametrize("where", list(EXAMPLES), ids=lambda w: f"{w[0]}#{w[1]}")
def test_a_quoted_output_is_what_the_code_prints(where: tuple[str, int]) -> None:
    doc, index = where
    passage = _mine(doc)[index]
    assert quoted(passage) == EXAMPLES[where]()
    assert _prose(passage) == []
    assert differences(doc) == []


def _prose(passage: figures.Passage) -> list[str]:
    """The numbers of the passage outside its quotes."""
    prose = [
        figures._SPAN.sub(lambda m: " " * len(m.group(0)), line)
        for _, line, kind in figures.read_lines(passage.body)
        if kind == "prose"
    ]
    return [n.text for line in prose for n in figures.numbers(line)]


def test_every_passage_naming_this_test_is_compared() -> None:
    named = {
        (str(doc.relative_to(ROOT)), i)
        for doc in figures.documents()
        for i, _ in enumerate(_mine(str(doc.relative_to(ROOT))))
    }
    assert named == set(EXAMPLES)
