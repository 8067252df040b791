"""system/numbers.py: one rule per kind of value, as every report, exporter and message
writes it."""

from __future__ import annotations

import pytest

from fsbench.system import numbers


@pytest.mark.parametrize(
    ("x", "text"),
    [(12345.6, "12,346"), (123.4, "123"), (12.34, "12.3"), (1.234, "1.23"), (0.01234, "0.0123"),
     (0.0, "0"), (None, "-"), (float("inf"), "inf")],
)  # fmt: skip
def test_a_number_has_three_significant_digits_below_100_and_separators_above(
    x: float | None, text: str
) -> None:
    assert numbers.number(x) == text


@pytest.mark.parametrize(
    ("p", "alone", "said"),
    [(0.0123, "0.012", "p = 0.012"), (0.0004, "< 0.001", "p < 0.001"), (0.23, "0.23", "p = 0.23"),
     (0.001, "0.001", "p = 0.001")],
)  # fmt: skip
def test_one_rule_for_p_values(p: float, alone: str, said: str) -> None:
    """Three decimals below 0.1, two above, and '< 0.001' below that: history's own rule
    (two significant digits, 'p = <0.001') is gone."""
    assert numbers.p_value(p) == alone and numbers.p(p) == said


def test_ratios_and_intervals() -> None:
    assert numbers.ratio(1.0234) == "1.023" and numbers.ratio(None) == "-"
    assert numbers.ratio(1.02, (0.98, 1.07), 0.95) == "1.020 [95%: 0.980, 1.070]"
    assert numbers.ratio(1.0, (1.0, 1.0)) == "1.000 [1.000, 1.000]"  # no level known
    assert numbers.interval((871.2, 1142.0)) == "871-1,142"
    assert numbers.interval(None) == "" and numbers.interval(None, "-") == "-"


def test_percentages_durations_counts_sizes() -> None:
    assert numbers.percent(0.052) == "5%" and numbers.percent(0.052, 1) == "5.2%"
    assert [numbers.share(x) for x in (0.12, 0.015, 0.0003)] == ["12%", "1.5%", "0.03%"]
    assert numbers.seconds(600.4) == "600 s" and numbers.whole(600.6) == "601"
    assert numbers.count(65458) == "65,458" and numbers.significant(12345.678, 4) == "1.235e+04"
    assert numbers.mean_ci(2.2034, 0.4971) == "2.20 ± 0.50"
    assert numbers.size(3 << 29) == "1.5 GiB" and numbers.size(512) == "512 B"
    assert numbers.exact_size(64 << 10) == "64 KiB" and numbers.exact_size(4052) == "4,052 B"
