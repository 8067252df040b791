"""The number of bad inputs docs/results.md says are refused in one line is the number of
cases in the table of tests/integration/test_bad_input.py: a case added or removed there
changes the claim, or this fails."""

from __future__ import annotations

import re
from pathlib import Path

from tests.integration.test_bad_input import CASES

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results.md"
CLAIM = re.compile(
    r"`tests/integration/test_bad_input\.py`\s+types\s+(\d+)\s+bad\s+inputs", re.MULTILINE
)


def test_the_docs_quote_the_number_of_cases_in_the_table() -> None:
    claims = CLAIM.findall(RESULTS.read_text(encoding="utf-8"))
    assert len(claims) == 1, f"{RESULTS.name}: the count of bad inputs is quoted {len(claims)}x"
    assert int(claims[0]) == len(CASES), (
        f"{RESULTS.name} says {claims[0]} bad inputs; the table has {len(CASES)}"
    )


def test_every_case_has_its_own_id() -> None:
    ids = [c.id for c in CASES]
    assert len(set(ids)) == len(ids), sorted(i for i in ids if ids.count(i) > 1)
