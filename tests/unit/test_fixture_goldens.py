"""The committed stores report the same in every text format, byte for byte: what
`fsbench report` prints of each of their runs in the terminal (piped and into a file),
markdown and CSV, and what `fsbench compare` prints of some of their pairs, against the
goldens tests/data/stores/goldens.py wrote (their JSON: test_fixture_reports.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.data.stores import goldens


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, Path], Path]]:
    tmp = tmp_path_factory.mktemp("goldens")
    yield goldens.copies(tmp), tmp


@pytest.mark.parametrize(("golden", "store", "args"), goldens.cases(), ids=lambda x: str(x))
def test_a_committed_store_prints_its_golden(
    stores: tuple[dict[str, Path], Path], golden: str, store: str, args: list[str]
) -> None:
    copies, tmp = stores
    expected = (goldens.GOLDENS / golden).read_text(encoding="utf-8")
    assert goldens.printed(copies[store], args, golden, tmp) == expected
