"""The README's "What a result looks like" is what `fsbench report 1` prints of the store it
names (tests/data/stores/v8.db), line for line and in order: a change to the tables or the
verdicts shows up there, or this fails."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _example() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## What a result looks like") :]
    block = re.search(r"```text\n(.*?)```", section, re.DOTALL)
    assert block is not None
    return [line.rstrip() for line in block.group(1).splitlines() if line.strip()]


def test_the_readme_shows_what_the_report_prints(tmp_path: Path) -> None:
    store = tmp_path / "COPY.db"
    shutil.copyfile(ROOT / "tests" / "data" / "stores" / "v8.db", store)
    res = subprocess.run(
        [sys.executable, "-m", "fsbench.cli", "report", "1", "--db", str(store)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "400"},
        check=False,
    )
    assert res.returncode == 0, res.stderr
    printed = [line.rstrip() for line in res.stdout.splitlines()]
    at = 0
    for line in _example():
        assert line in printed[at:], line
        at = printed.index(line, at) + 1
