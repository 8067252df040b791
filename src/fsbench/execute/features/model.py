"""The feature table as data: what `--json` prints and every renderer reads.

JSON shape (stable): `{filesystems: [...], features: [{name, question, results: {fs:
{supported, value, unit, evidence, note}}}]}`, plus `kernel` and `seconds` beside them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

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
