from __future__ import annotations

import math

import pytest

from fsbench.analysis.stats import summarize, t_quantile
from fsbench.system import numbers
from fsbench.system.units import format_size, parse_size


@pytest.mark.parametrize(
    "text, value",
    [
        ("64M", 64 << 20),
        ("1G", 1 << 30),
        ("4 GiB", 4 << 30),
        ("512k", 512 << 10),
        ("100", 100),
        (4096, 4096),
        ("1.5G", 3 << 29),
    ],
)
def test_parse_size(text: str | int, value: int) -> None:
    assert parse_size(text) == value


@pytest.mark.parametrize("bad", ["", "G", "-1M", "12X", "1e3"])
def test_parse_size_rejects(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_size(bad)


def test_format_size() -> None:
    assert format_size(64 << 20) == "64M"
    assert format_size(4 << 30) == "4G"
    assert format_size(1536) == "1536"
    assert numbers.size(3 << 29) == "1.5 GiB"


def test_t_quantiles_match_tables() -> None:
    assert t_quantile(1) == pytest.approx(12.706, abs=1e-3)
    assert t_quantile(2) == pytest.approx(4.303, abs=1e-3)
    assert t_quantile(9) == pytest.approx(2.262, abs=1e-3)


def test_summary_of_three() -> None:
    s = summarize([10.0, 12.0, 14.0])
    assert s.n == 3 and s.mean == 12.0 and s.median == 12.0
    assert s.sd == pytest.approx(2.0)
    half = 4.303 * 2.0 / math.sqrt(3)
    assert s.ci95 is not None
    assert s.ci95[0] == pytest.approx(12.0 - half, abs=1e-2)
    assert s.half_width == pytest.approx(half, abs=1e-2)
    assert s.cv == pytest.approx(2.0 / 12.0)


def test_summary_edges() -> None:
    assert summarize([]).mean is None
    one = summarize([5.0])
    assert one.n == 1 and one.mean == 5.0 and one.ci95 is None and one.sd is None
    flat = summarize([2.0, 2.0])
    assert flat.ci95 == (2.0, 2.0)
