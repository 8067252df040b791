"""The feature table's document in markdown, HTML (a fragment and a page), JSON, CSV and
the terminal."""

from __future__ import annotations

import json

import pytest

from fsbench.reports import export
from fsbench.reports.features_table import FEATURES_CSS, document, features_table_html, html_page
from fsbench.store.features import FeatureRow, FeatureTable, Result
from fsbench.system.errors import FsbenchError


def markdown(table: FeatureTable, evidence: bool = False) -> str:
    return export.write(document(table, evidence), "md")


def sample() -> FeatureTable:
    reflink = FeatureRow(
        name="reflink copy",
        question="Does cp --reflink=always share extents?",
        results={
            "ext4": Result(
                supported="no",
                note="cp: failed to clone 'b' from 'a': Operation not supported",
                evidence=["$ cp --reflink=always MNT/a MNT/b [exit 1]\ncp: failed <to> clone"],
            ),
            "xfs": Result(supported="yes", value="1 shared extent(s)"),
            "btrfs": Result(supported="yes", value="1 shared extent(s)"),
            "jfs": Result(supported="unsupported", note="unavailable: kernel lacks jfs"),
        },
    )
    names = FeatureRow(
        name="longest file name",
        question="How long can a name be?",
        quantity=True,
        results={
            "ext4": Result(supported="yes", value=255, unit="bytes"),
            "xfs": Result(supported="yes", value=255, unit="bytes"),
            "btrfs": Result(supported="yes", value=255, unit="bytes"),
            "jfs": Result(supported="unsupported", note="unavailable: kernel lacks jfs"),
        },
    )
    return FeatureTable(
        filesystems=["ext4", "xfs", "btrfs", "jfs"],
        features=[reflink, names],
        kernel="6.18.0-test",
        seconds=12.3,
    )


def test_markdown_bolds_the_differing_cells_only() -> None:
    md = markdown(sample())
    lines = md.splitlines()
    assert "| feature | ext4 | xfs | btrfs | jfs |" in lines
    assert (
        "| reflink copy | **✗** | ✓ 1 shared extent(s) | ✓ 1 shared extent(s) | – unavailable |"
        in (lines)
    )
    assert "| longest file name | 255 bytes | 255 bytes | 255 bytes | – unavailable |" in lines
    assert "- jfs: unavailable: kernel lacks jfs" in lines
    assert "Operation not supported" in md  # notes are listed under the table
    assert "$ cp --reflink" not in md  # evidence only when asked
    assert "$ cp --reflink" in markdown(sample(), evidence=True)


def test_markdown_escapes_pipes() -> None:
    t = sample()
    t.features[0].results["xfs"] = Result(supported="yes", value="a|b")
    assert "a\\|b" in markdown(t)


def test_html_fragment_is_escaped_and_marks_differences() -> None:
    html = features_table_html(sample())
    assert html.startswith('<table class="fsb-features">')
    assert "<to>" not in html and "&lt;to&gt;" in html
    assert "&#x27;b&#x27;" in html  # quotes in notes escaped
    assert html.count("feat-diff") == 1
    assert 'class="feat-no feat-diff"' in html
    assert 'class="feat-unsupported"' in html
    assert "<details><summary>" in html  # evidence behind the cell
    assert "jfs: unavailable: kernel lacks jfs" in html
    assert "<html" not in html  # a fragment, for the run report


def test_html_page_is_standalone() -> None:
    page = html_page(sample())
    assert page.startswith("<!DOCTYPE html>")
    assert FEATURES_CSS.strip().splitlines()[0] in page
    assert features_table_html(sample()) in page


def test_json_structure_is_stable() -> None:
    data = json.loads(export.write(document(sample()), "json"))
    assert set(data) == {"filesystems", "features", "kernel", "seconds"}
    assert data["filesystems"] == ["ext4", "xfs", "btrfs", "jfs"]
    first = data["features"][0]
    assert set(first) == {"name", "question", "quantity", "results"}
    assert set(first["results"]) == {"ext4", "xfs", "btrfs", "jfs"}
    for cell in first["results"].values():
        assert set(cell) == {"supported", "value", "unit", "evidence", "note"}
    assert first["results"]["xfs"]["supported"] == "yes"
    assert data["features"][1]["results"]["ext4"]["value"] == 255
    assert FeatureTable.model_validate(data) == sample()


def test_text_table_has_marks_legend_and_unavailable_reason() -> None:
    text = export.write(document(sample()), "table")
    assert "reflink copy" in text and "✓ 1 shared extent(s)" in text
    assert "255 bytes" in text
    assert "differs from the majority" in text
    assert "jfs: unavailable: kernel lacks jfs" in text
    assert "\x1b[" not in text  # no terminal escapes in a file


def test_csv_has_a_record_per_cell_and_an_unknown_format_is_refused() -> None:
    lines = export.write(document(sample()), "csv").splitlines()
    assert lines[0] == "feature,question,filesystem,supported,value,unit,note"
    assert len(lines) == 1 + 2 * 4
    assert "longest file name,How long can a name be?,xfs,yes,255,bytes," in lines
    with pytest.raises(FsbenchError, match="unknown format 'pdf'"):
        export.write(document(sample()), "pdf")


def test_only_keeps_the_run_s_filesystems() -> None:
    t = sample().only(["xfs", "ext4", "f2fs"])
    assert t.filesystems == ["xfs", "ext4"]
    assert list(t.features[0].results) == ["xfs", "ext4"]
    assert "btrfs" not in features_table_html(t)
