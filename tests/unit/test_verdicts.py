"""Verdict texts: the p shown is the one that decided; a tie within the metric's
resolution is no difference."""

from __future__ import annotations

from dataclasses import replace

from fsbench.reports.ranking import NO_CLEAR, rank_rows
from tests.unit.test_reports_ranking import make_row


def test_no_winner_text_shows_the_deciding_p_not_a_small_one() -> None:
    rows = [
        ("ext4", make_row("ext4", [1.0, 1.01, 0.99])),
        ("xfs", make_row("xfs", [1.2, 1.21, 1.19])),
        ("btrfs", make_row("btrfs", [0.8, 1.9, 1.5])),
    ]
    v = rank_rows(rows)
    assert v is not None and not v.significant
    assert v.decisive == "btrfs"
    assert v.text.startswith(NO_CLEAR) and "vs btrfs" in v.text
    assert v.p_decisive is not None and f"{v.p_decisive:.2f}" in v.text


def test_winner_text_shows_a_p_below_the_threshold() -> None:
    v = rank_rows(
        [("a", make_row("a", [1.0, 1.01, 0.99])), ("b", make_row("b", [1.3, 1.31, 1.29]))]
    )
    assert v is not None and v.significant
    assert v.p_decisive is not None and v.p_decisive < 0.05
    assert "Welch p" in v.text and "Holm" in v.text


def test_constant_values_one_step_apart_are_no_winner() -> None:
    a = replace(make_row("a", [3.0, 3.0, 3.0]), resolution=1.0)
    b = replace(make_row("b", [4.0, 4.0, 4.0]), resolution=1.0)
    v = rank_rows([("a", a), ("b", b)])
    assert v is not None and not v.significant and v.within_resolution
    assert "resolution" in v.text
    assert v.short == NO_CLEAR
