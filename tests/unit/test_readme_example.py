"""The README's "What a result looks like" is what `fsbench report 1` prints of the store it
names (tests/data/stores/v8.db), line for line and in order: a change to the tables or the
verdicts shows up there, or this fails. Its prose (the README's `<!-- example: -->`
passage) is compared too: every number it says is one the report prints, and what it
counts of the example (header lines, notes) is what the example holds."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import figures  # noqa: E402

WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def _readme(text: str | None) -> str:
    return (ROOT / "README.md").read_text() if text is None else text


def _example(text: str | None = None) -> list[str]:
    """The README's example (`text`, a copy of it, when given)."""
    text = _readme(text)
    section = text[text.index("## What a result looks like") :]
    block = re.search(r"```text\n(.*?)```", section, re.DOTALL)
    assert block is not None
    return [line.rstrip() for line in block.group(1).splitlines() if line.strip()]


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return report_lines(tmp_path_factory.mktemp("readme"))


def report_lines(tmp: Path) -> list[str]:
    """What `fsbench report 1` prints of a copy of the store the README names."""
    store = tmp / "COPY.db"
    shutil.copyfile(ROOT / "tests" / "data" / "stores" / "v8.db", store)
    res = subprocess.run(
        [sys.executable, "-m", "fsbench.cli", "report", "1", "--db", str(store)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "400"},
        check=False,
    )
    assert res.returncode == 0, res.stderr
    return [line.rstrip() for line in res.stdout.splitlines()]


def shown_but_not_printed(printed: list[str], text: str | None = None) -> list[str]:
    """The example's lines that the report does not print there, in order."""
    at, wrong = 0, []
    for line in _example(text):
        if line not in printed[at:]:
            wrong.append(line)
            continue
        at = printed.index(line, at) + 1
    return wrong


def test_the_readme_shows_what_the_report_prints(printed: list[str]) -> None:
    assert shown_but_not_printed(printed) == []


def _prose(text: str | None = None) -> str:
    """The example passage's text outside its code block."""
    text = _readme(text)
    (passage,) = [p for p in figures.all_passages(text, "README.md") if p.kind == "example"]
    return re.sub(r"```.*?```", "", passage.text, flags=re.DOTALL)


def _said(printed: list[str]) -> list[int]:
    """The numbers the prose says, in order, each read from what the report prints."""
    out = "\n".join(printed)
    run = re.search(r"^fsbench run (\d+) ", out, re.MULTILINE)
    size = re.search(r"size=(\d+)M\b", out)
    budget = re.search(r"^time: .* of a (\d+) s budget", out, re.MULTILINE)
    level = re.search(r"^mean ± (\d+)% CI \(n\)", out, re.MULTILINE)
    header = next(i for i, line in enumerate(printed) if line.startswith("alloc: seconds"))
    table = printed[header : header + 8]
    rows = [line for line in table if re.match(r"  (ext4|xfs|btrfs) ", line)]
    # each row: fallocate's (n), then write-4k's (n)
    column = {re.findall(r"\((\d+)\)", line)[1] for line in rows}
    below = re.search(r"undecided: n < (\d+)", out)
    assert run and size and budget and level and below and len(column) == 1
    (write_4k,) = column
    return [int(m.group(1)) for m in (run, size, budget, level)] + [
        int(write_4k),
        int(below.group(1)),
    ]


def said(text: str | None = None) -> list[int]:
    """The numbers the example's prose says, in order."""
    return [int(n.text) for line in _prose(text).splitlines() for n in figures.numbers(line)]


def test_the_readme_says_what_the_report_prints(printed: list[str]) -> None:
    """The run, its file size, its budget, the interval's level, write-4k's repetitions and
    the n below which nothing is tested: the prose's numbers, in order, are the report's."""
    assert said() == _said(printed)


def test_the_readme_counts_what_its_example_shows() -> None:
    """The prose's "trimmed to four lines of its header ... and two of its notes" counts
    the example's."""
    prose = " ".join(_prose().split())
    header = re.search(r"trimmed to (\w+) lines of its header", prose)
    notes = re.search(r"and (\w+) of its notes", prose)
    assert header and notes
    example = _example()
    table = next(i for i, line in enumerate(example) if line.startswith("alloc: seconds"))
    assert WORDS[header.group(1)] == table
    assert WORDS[notes.group(1)] == sum(1 for line in example if re.match(r"\s*\[\d+\] ", line))


def test_the_readme_quotes_the_verdicts_it_explains(printed: list[str]) -> None:
    """The verdicts the prose explains are the report's: write-4k ordered, fallocate not
    tested below n = 3, and an outlier shown."""
    prose = " ".join(_prose().split())
    verdicts = next(line for line in printed if line.lstrip().startswith("verdict "))
    assert "write-4k is ordered" in prose and "<" in verdicts.split("n < 3")[1]
    assert "fallocate's seconds" in prose and "undecided: n < 3" in verdicts
    assert "an outlier" in prose and any("outliers:" in line for line in _example())
