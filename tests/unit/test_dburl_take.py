"""A fleet host's fsbench takes its password file: reads it once, deletes it, keeps the
password in memory for the URL it matches (libpq's rules), and drops the variables that
named it from its environment."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from fsbench.store import dburl
from fsbench.system.errors import FsbenchError


@pytest.fixture(autouse=True)
def _nothing_taken() -> Iterator[None]:
    dburl._taken.clear()
    yield
    dburl._taken.clear()


def test_the_password_file_is_taken_once_and_matches_like_libpq(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "p:w\\d@x"
    line = dburl.pgpass_line(f"postgresql://fsb:{secret.replace('@', '%40')}@127.0.0.1:5433/db")
    assert dburl.parse_pgpass_line(line) == ["127.0.0.1", "5433", "db", "fsb", secret]
    path = tmp_path / "pgpass"
    path.write_text(line + "\n")
    monkeypatch.setenv(dburl.TAKE_PGPASSFILE, str(path))
    monkeypatch.setenv("PGPASSFILE", str(path))

    url = dburl.to_url("postgresql://fsb@127.0.0.1:5433/db")
    assert dburl.password_of(url) == secret
    assert not path.exists()
    assert dburl.TAKE_PGPASSFILE not in os.environ
    assert "PGPASSFILE" not in os.environ
    assert secret not in dburl.without_password(url)
    # Later stores of the same process still connect; another server or user gets nothing.
    assert dburl.password_of(dburl.to_url("postgresql://fsb@127.0.0.1:5433/db")) == secret
    assert dburl.password_of(dburl.to_url("postgresql://fsb@127.0.0.1:5999/db")) == ""
    assert dburl.password_of(dburl.to_url("postgresql://other@127.0.0.1:5433/db")) == ""
    # A password given in the URL wins.
    assert dburl.password_of(dburl.to_url("postgresql://fsb:mine@127.0.0.1:5433/db")) == "mine"


def test_no_file_no_password(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(dburl.TAKE_PGPASSFILE, str(tmp_path / "absent"))
    assert dburl.password_of(dburl.to_url("postgresql://fsb@127.0.0.1/db")) == ""


def test_a_store_directory_that_cannot_be_made_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(FsbenchError, match="cannot make the directory of result store"):
        dburl.to_url("/proc/no-such-dir/results.db")
