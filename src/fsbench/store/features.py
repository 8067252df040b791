"""The feature table as data, and where the last one measured on each kernel is kept:
beside the result store, so that every run's HTML report can show the table of the
filesystems it compared (`fsbench features` measures it: execute/features/).

JSON shape (stable): `{filesystems: [...], features: [{name, question, results: {fs:
{supported, value, unit, evidence, note}}}]}`, plus `kernel` and `seconds` beside them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from fsbench.store.dburl import default_db_path

# yes / no: measured here. n/a: the question does not apply (with the reason in `note`).
# unsupported: the kernel or the tools lack the filesystem (note: "unavailable: <reason>").
# error: the probe itself failed; the note says how (a bug or a broken machine, not a fact).
Support = Literal["yes", "no", "n/a", "unsupported", "error"]
MEASURED: tuple[Support, ...] = ("yes", "no", "n/a")


@dataclass(frozen=True)
class Feature:
    """One row of the table. `quantity` rows are measurements (a count, a size): their
    cells show the value without a ✓ when it was measured."""

    name: str
    question: str
    quantity: bool = False


class Result(BaseModel):
    supported: Support
    value: int | float | str | None = None
    unit: str = ""  # "B" (bytes, shown in binary units), "files", "bytes" (a plain count)...
    evidence: list[str] = Field(default_factory=list)  # "$ command" + trimmed output
    note: str = ""


class FeatureRow(BaseModel):
    name: str
    question: str
    quantity: bool = False
    results: dict[str, Result] = Field(default_factory=dict)


class FeatureTable(BaseModel):
    filesystems: list[str]
    features: list[FeatureRow]
    kernel: str = ""
    seconds: float | None = None

    def row(self, name: str) -> FeatureRow:
        for r in self.features:
            if r.name == name:
                return r
        raise KeyError(f"no feature {name!r} in the table")

    def result(self, feature: str, fs: str) -> Result:
        return self.row(feature).results[fs]

    def only(self, filesystems: list[str]) -> FeatureTable:
        """The columns of these filesystems (a run report shows the run's own), in this
        order; a filesystem the table lacks is left out."""
        keep = [fs for fs in filesystems if fs in self.filesystems]
        rows = [
            r.model_copy(update={"results": {fs: r.results[fs] for fs in keep if fs in r.results}})
            for r in self.features
        ]
        return self.model_copy(update={"filesystems": keep, "features": rows})


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
