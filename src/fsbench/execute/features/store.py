"""The last feature table measured on each kernel, kept beside the result store so that
every run's HTML report can show the table for the filesystems it compared."""

from __future__ import annotations

import re
from pathlib import Path

from fsbench.execute.features.model import FeatureTable
from fsbench.store.dburl import default_db_path


def features_dir() -> Path:
    return default_db_path().parent / "features"


def _path(kernel: str) -> Path:
    return features_dir() / (re.sub(r"[^\w.+-]", "_", kernel) + ".json")


def save_features(table: FeatureTable) -> Path | None:
    """Merge into the kernel's stored table (a run of a few filesystems keeps the others)."""
    if not table.kernel:
        return None
    path = _path(table.kernel)
    old = load_features(table.kernel)
    merged = table
    if old is not None:
        keep = [fs for fs in old.filesystems if fs not in table.filesystems]
        if keep:
            merged = _merge(old.only(keep), table)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(merged.model_dump_json(indent=1))
    tmp.rename(path)
    return path


def load_features(kernel: str) -> FeatureTable | None:
    try:
        return FeatureTable.model_validate_json(_path(kernel).read_text())
    except (OSError, ValueError):
        return None


def _merge(a: FeatureTable, b: FeatureTable) -> FeatureTable:
    rows = []
    names_b = {r.name: r for r in b.features}
    for row in a.features:
        other = names_b.get(row.name)
        results = {**row.results, **(other.results if other else {})}
        rows.append(row.model_copy(update={"results": results}))
    seen = {r.name for r in a.features}
    rows += [r for r in b.features if r.name not in seen]
    return b.model_copy(update={"filesystems": [*a.filesystems, *b.filesystems], "features": rows})
