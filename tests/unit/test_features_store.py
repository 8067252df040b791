from __future__ import annotations

from pathlib import Path

import pytest

from fsbench.store.features import FeatureRow, FeatureTable, Result, load_features, save_features


def _table(fs: list[str], value: str) -> FeatureTable:
    return FeatureTable(
        filesystems=fs,
        kernel="6.18.44-test",
        features=[
            FeatureRow(
                name="reflink",
                question="cp --reflink=always?",
                results={
                    f: Result(supported="no" if f == "ext4" else "yes", value=value) for f in fs
                },
            )
        ],
    )


def test_saved_tables_merge_per_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert load_features("6.18.44-test") is None
    save_features(_table(["ext4", "xfs"], "old"))
    save_features(_table(["xfs", "btrfs"], "new"))
    table = load_features("6.18.44-test")
    assert table is not None
    assert table.filesystems == ["ext4", "xfs", "btrfs"]
    results = table.row("reflink").results
    assert results["ext4"].value == "old" and results["xfs"].value == "new"
    assert results["btrfs"].supported == "yes"


def test_a_row_without_a_filesystem_is_left_out_not_an_error() -> None:
    table = _table(["ext4", "xfs"], "v")
    row = table.features[0].model_copy(
        update={"results": {"xfs": table.features[0].results["xfs"]}}
    )
    partial = table.model_copy(update={"features": [row]})
    assert list(partial.only(["ext4", "xfs"]).features[0].results) == ["xfs"]
