"""A one-digit change to any figure of README.md, docs/*.md or engine/README.md fails a
check: proved on a deterministic sample spread over every document.

A figure is what bench/figures.py says it is: a number of a bench or code passage bound
to a key (its prose, its tables, the blocks of output it holds, code spans that show
output), and every number of an `<!-- example: -->` passage that tests/unit/
test_readme_example.py or test_doc_examples.py compares whole (the prose, the quoted
spans, the blocks of output). What a user types (a command line, a plan's or a spec's
settings, an option like `-I 256`) is the user's parameter and no figure; outside
passages nothing may look like a figure at all (test_readme_bench_figures.py).

Each sampled figure has one digit changed (its last, +1 mod 10) in a copy of its
document, and the checks the real tests run (figures.check_document, the examples'
comparisons) must report a problem in the copy. The issue's own mutations (issue 51) are
here too, by their text."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from fsbench.workloads import describe
from tests.unit import test_doc_examples as doc_examples
from tests.unit import test_readme_example as readme_example

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import figures  # noqa: E402

PER_DOCUMENT = 4  # figures sampled in each document's prose and tables, and in its blocks
COMPARED = {
    "tests/unit/test_readme_example.py",
    "tests/unit/test_doc_examples.py",
    "tests/unit/test_workload_contract.py",
}  # the tests of the example passages, each driven below on a copy; docs/tune.md's table of
# race levels (tests/unit/test_tune_race.py, minutes of simulation) is driven by the slow
# test_the_race_levels_table_fails_one_digit_off


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return readme_example.report_lines(tmp_path_factory.mktemp("readme"))


def problems(doc: str, text: str, report: list[str]) -> list[str]:
    """What the real tests find wrong in `text`, a copy of the document `doc`."""
    found = figures.check_document(text, doc) + doc_examples.differences(doc, text)
    if doc == "README.md":
        found += readme_example.shown_but_not_printed(report, text)
        if readme_example.said(text) != readme_example._said(report):
            found.append("README.md: the example's prose says other numbers")
    if doc == str(describe.DOC) and describe.table_in(text) != describe.markdown():
        found.append(f"{doc}: the parameter table is not `fsbench list workloads --format md`")
    return found


def in_figures(doc: str, text: str) -> list[tuple[figures.Printed, bool]]:
    """Every figure of the document: (where it is printed, whether in a fenced block)."""
    out = []
    for p in figures.all_passages(text, doc):
        block = {n for n, _, kind in figures.read_lines(p.body) if kind != "prose"}
        if p.kind == "example":
            if not set(p.files) & COMPARED:
                continue
            for n, line, _ in figures.read_lines(p.body):
                out += [(x, n in block) for x in figures.numbers(figures.unallowed(line), n)]
        else:
            figs = figures.figures(p)
            out += [(f.printed, f.printed.line in block) for f in figs if f.key != "_"]
    return out


def one_digit_changed(text: str, printed: figures.Printed) -> str:
    """The text with the last digit of one printed number changed (+1 mod 10)."""
    lines = text.splitlines()
    line = lines[printed.line - 1]
    assert line[printed.start : printed.end] == printed.text
    last = max(i for i, ch in enumerate(printed.text) if ch.isdigit())
    digit = str((int(printed.text[last]) + 1) % 10)
    number = printed.text[:last] + digit + printed.text[last + 1 :]
    lines[printed.line - 1] = line[: printed.start] + number + line[printed.end :]
    return "\n".join(lines) + "\n"


def sample(found: list[tuple[figures.Printed, bool]]) -> list[figures.Printed]:
    """PER_DOCUMENT figures of the prose and tables and PER_DOCUMENT of the blocks, evenly
    spaced from the first to the last."""
    out = []
    for in_block in (False, True):
        these = [p for p, b in found if b == in_block]
        step = max(1, len(these) // PER_DOCUMENT)
        out += these[::step][:PER_DOCUMENT] + these[-1:]
    return list(dict.fromkeys(out))


DOCUMENTS = [str(p.relative_to(ROOT)) for p in figures.documents()]


@pytest.mark.parametrize("doc", DOCUMENTS)
def test_a_one_digit_change_to_a_figure_fails(doc: str, report: list[str]) -> None:
    text = (ROOT / doc).read_text()
    assert problems(doc, text, report) == []
    found = in_figures(doc, text)
    for printed in sample(found):
        copy = one_digit_changed(text, printed)
        assert problems(doc, copy, report), f"{doc} line {printed.line}: {printed.text} changed"


def test_the_sample_reaches_every_document_and_the_blocks() -> None:
    """Every document with a figure is sampled, and the figures in fenced blocks (a
    report, a message, a document of the engine) are among them."""
    texts = {doc: (ROOT / doc).read_text() for doc in DOCUMENTS}
    found = {doc: in_figures(doc, text) for doc, text in texts.items()}
    marked = {doc for doc, text in texts.items() if figures.all_passages(text, doc)}
    assert {doc for doc in found if found[doc]} == marked
    in_blocks = {doc for doc, f in found.items() if any(b for _, b in f)}
    assert {"README.md", "docs/bisect.md", "docs/replay.md", "engine/README.md"} <= in_blocks


# The mutations issue 51 named: (document, the text as it was, changed to).
NAMED = [
    ("docs/aging.md", "its layout score 0.811", "its layout score 0.911"),
    ("docs/aging.md", "the tree grows 12% in 300 pulls", "the tree grows 22% in 300 pulls"),
    ("README.md", "ordered after 7 repetitions", "ordered after 8 repetitions"),
]  # and docs/tune.md's 1.8% -> 2.8%: test_the_race_levels_table_fails_one_digit_off


@pytest.mark.parametrize("named", NAMED, ids=lambda n: f"{n[0]}:{n[1]}")
def test_the_mutations_the_issue_named_fail(named: tuple[str, str, str], report: list[str]) -> None:
    """Each fails a check. aging.md no longer prints its layout scores nor the growth (no
    result file holds them; the guide says what they showed without their numbers): the
    sentence with the changed number, put back into a copy, fails the parser."""
    doc, old, new = named
    text = (ROOT / doc).read_text()
    pattern = r"\s+".join(map(re.escape, old.split()))
    if re.search(pattern, text) is None:
        assert doc == "docs/aging.md", f"{doc} no longer says {old!r}"
        copy = text + f"\nOn ext4 {new}.\n"
    else:
        copy = re.sub(pattern, new, text, count=1)
    assert copy != text
    assert problems(doc, copy, report)


def test_the_race_levels_table_fails_one_digit_off() -> None:
    """docs/tune.md's table of race levels per look (an example passage that
    tests/unit/test_tune_race.py compares to the code): every figure of it one digit off,
    and the issue's 1.8% -> 2.8%, fails that comparison."""
    from tests.unit import test_tune_race as tune_race

    doc = "docs/tune.md"
    text = (ROOT / doc).read_text()
    assert tune_race.look_levels_not_the_code(text) == []
    (table,) = figures.passages(text, doc, ("example",))
    for n, line, _ in figures.read_lines(table.body):
        for printed in figures.numbers(line, n):
            if line.lstrip().startswith("| configs") or printed.start < line.index("|", 2):
                continue  # the header's round counts, and each row's count of configs
            copy = one_digit_changed(text, printed)
            assert tune_race.look_levels_not_the_code(copy), f"line {n}: {printed.text}"
    named = text.replace("| 3 | 1.8% | 1.1% |", "| 3 | 2.8% | 1.1% |")
    assert named != text and tune_race.look_levels_not_the_code(named)
