"""The feature table's cells and its majority highlighting."""

from __future__ import annotations

from fsbench.execute.features.tables import cell_text, differs, unavailable
from fsbench.store.features import FeatureRow, FeatureTable, Result

FS = ["ext2", "ext3", "ext4", "xfs", "btrfs"]


def row(cells: dict[str, Result], quantity: bool = False) -> FeatureRow:
    return FeatureRow(name="f", question="q?", quantity=quantity, results=cells)


def yes(value: int | str | None = None, unit: str = "") -> Result:
    return Result(supported="yes", value=value, unit=unit)


def no(value: str | None = None) -> Result:
    return Result(supported="no", value=value)


def lacking() -> Result:
    return Result(supported="unsupported", note="unavailable: kernel lacks it")


def test_cell_marks_and_values() -> None:
    r = row({})
    assert cell_text(r, yes()) == "✓"
    assert cell_text(r, no()) == "✗"
    assert cell_text(r, no("metadata only")) == "✗ metadata only"
    assert cell_text(r, Result(supported="n/a", note="why")) == "–"
    assert cell_text(r, lacking()) == "– unavailable"
    assert cell_text(r, Result(supported="error", note="boom")) == "! error"
    assert cell_text(r, yes(65536, "B")) == "✓ 64 KiB"


def test_quantity_cells_show_the_value_without_a_mark() -> None:
    q = row({}, quantity=True)
    assert cell_text(q, yes(65458, "files")) == "65,458 files"
    assert cell_text(q, yes((1 << 63) - 1, "B")) == "8 EiB − 1 B"
    assert cell_text(q, yes(255, "bytes")) == "255 bytes"
    assert cell_text(q, no()) == "✗"  # a refusal still shows its mark


def test_minority_marks_are_highlighted() -> None:
    r = row({"ext2": no(), "ext3": no(), "ext4": no(), "xfs": yes(), "btrfs": yes()})
    assert differs(r, FS) == {"xfs", "btrfs"}


def test_same_mark_different_value_is_highlighted_when_values_have_a_majority() -> None:
    cells = {fs: yes(4036, "B") for fs in ("ext2", "ext3", "ext4")}
    cells |= {"xfs": yes(65536, "B"), "btrfs": yes(16216, "B")}
    assert differs(row(cells, quantity=True), FS) == {"xfs", "btrfs"}


def test_mark_majority_when_values_have_none() -> None:
    cells = {
        "ext2": no("none"),
        "ext3": no("none"),
        "ext4": no("metadata only"),
        "xfs": no("metadata only"),
        "btrfs": yes("data + metadata"),
    }
    assert differs(row(cells), FS) == {"btrfs"}


def test_no_strict_majority_no_highlight() -> None:
    cells = {"ext4": yes(1, "B"), "xfs": yes(2, "B"), "btrfs": yes(3, "B")}
    assert differs(row(cells), ["ext4", "xfs", "btrfs"]) == set()
    two = {"ext4": no(), "xfs": yes()}
    assert differs(row(two), ["ext4", "xfs"]) == set()


def test_all_equal_nothing_highlighted() -> None:
    cells = {fs: yes(255, "bytes") for fs in FS}
    assert differs(row(cells), FS) == set()


def test_unavailable_and_errors_do_not_vote() -> None:
    cells = {
        "ext4": no(),
        "xfs": yes(),
        "btrfs": yes(),
        "jfs": lacking(),
        "f2fs": lacking(),
        "ext2": Result(supported="error"),
    }
    names = ["ext2", "ext4", "xfs", "btrfs", "jfs", "f2fs"]
    assert differs(row(cells), names) == {"ext4"}


def test_na_votes_like_a_mark() -> None:
    cells = {"ext2": Result(supported="n/a"), "ext4": Result(supported="n/a"), "btrfs": yes()}
    assert differs(row(cells), ["ext2", "ext4", "btrfs"]) == {"btrfs"}


def test_unavailable_columns_and_their_reason() -> None:
    rows = [
        FeatureRow(name=n, question="?", results={"ext4": yes(), "jfs": lacking()})
        for n in ("a", "b")
    ]
    table = FeatureTable(filesystems=["ext4", "jfs"], features=rows)
    assert unavailable(table) == {"jfs": "kernel lacks it"}
