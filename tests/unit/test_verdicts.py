"""Verdict texts: the evidence printed beside an answer is the evidence that decided
it, and never a p that the answer does not follow."""

from __future__ import annotations

from dataclasses import replace

from fsbench.analysis.design import Design
from fsbench.analysis.null_law import PAIR_WELCH
from fsbench.analysis.verdicts import decide_rows
from tests.unit.test_reports_ranking import make_row


def test_an_undecided_pair_shows_no_p_and_the_n_that_would_decide() -> None:
    rows = [
        ("ext4", make_row("ext4", [1.0, 1.01, 0.99])),
        ("xfs", make_row("xfs", [1.2, 1.21, 1.19])),
        ("btrfs", make_row("btrfs", [0.8, 1.9, 1.5])),
    ]
    v = decide_rows(rows, Design())
    assert v is not None and v.kind == "order" and v.best == ""
    ordered = v.pair("ext4", "xfs")
    assert ordered is not None and ordered.kind == "order" and ordered.winner == "ext4"
    for other in ("ext4", "xfs"):
        pair = v.pair(other, "btrfs")
        assert pair is not None and pair.kind == "undecided"
        text = v.pair_text(pair)
        assert "undecided" in text and "p =" not in text and "p <" not in text
        assert pair.needed is not None and f"n≈{pair.needed}" in text
    # btrfs cannot be placed, so no tier splits off; the order inside is said after it.
    assert v.ranking == "{ext4, xfs, btrfs}; ext4 < xfs (1.2×)"


def test_an_order_shows_a_p_below_the_level() -> None:
    v = decide_rows(
        [("a", make_row("a", [1.0, 1.01, 0.99])), ("b", make_row("b", [1.3, 1.31, 1.29]))],
        Design(),
    )
    assert v is not None and v.kind == "order"
    (pair,) = v.pairs
    assert pair.p is not None and pair.p < 0.05
    # The interval at the level its verdict used: one look of Welch's t alone (the rows
    # record no rounds), at most its own level.
    level = 1 - Design().boundary(PAIR_WELCH, 0.05, 3)
    assert 0.95 <= level < 0.98 and pair.ci_level == level and pair.law == PAIR_WELCH
    assert "Welch p" in v.text and f"{level:.0%} CI" in v.text


def test_constant_values_one_step_apart_are_undecided_by_resolution() -> None:
    a = replace(make_row("a", [3.0, 3.0, 3.0]), resolution=1.0)
    b = replace(make_row("b", [4.0, 4.0, 4.0]), resolution=1.0)
    v = decide_rows([("a", a), ("b", b)], Design())
    assert v is not None and v.kind == "undecided" and v.pairs[0].test == "resolution"
    assert "resolution" in v.text and v.short == "undecided: within the tool's resolution"


def test_a_count_the_same_every_time_is_equal_not_within_a_margin() -> None:
    """Extents counted by fsbench itself, 1 on every repetition of both configs: the
    verdict says they are the same count, not that they are equivalent within ±5%."""
    from fsbench.analysis.decisions import EQUIVALENT, Side, decide

    same = decide(
        [Side("ext4", (1.0, 1.0, 1.0)), Side("xfs", (1.0, 1.0, 1.0))],
        better="lower",
        unit="count",
        resolution=1,
    )
    assert same is not None and same.kind == EQUIVALENT and same.short == "ext4 = xfs"
    timed = decide(
        [Side("ext4", (1.00, 1.01, 0.99, 1.0)), Side("xfs", (1.0, 1.01, 0.99, 1.0))],
        better="lower",
        unit="s",
    )
    assert timed is not None and timed.short != "ext4 = xfs"
