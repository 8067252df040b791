"""What host and guest exchange through the 9p share: the job, and the files the guest
writes back (its facts at start, one JSON line of records per cell, DONE or FAILED).

Light on imports: the guest reads the job with this under TCG.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from fsbench.plan.model import Cell, FsConfig

# Share files: written by the host / by the guest.
JOB = "job.json"
PYSRC = "py"  # the host's fsbench package, on the guest's PYTHONPATH before the image's
INPUTS = "inputs"  # the files the cells' steps read from the host (Workload.inputs)
ENGINE = "bin/fsbench-engine"  # the host's engine: the image has none
STARTED = "started.json"
RECORDS = "records.jsonl"
DONE = "DONE"
FAILED = "FAILED"


@dataclass(frozen=True)
class VmCell:
    """One scheduled trial: (seq, rep) + the cell, in a JSON-friendly form."""

    seq: int
    rep: int
    config: dict[str, Any]  # FsConfig.model_dump(mode="json")
    workload: str
    params: dict[str, Any]
    knobs: dict[str, str] = field(default_factory=dict)
    position: int = 0  # place in its round

    @classmethod
    def of(cls, seq: int, rep: int, cell: Cell, position: int = 0) -> VmCell:
        return cls(
            seq,
            rep,
            cell.config.model_dump(mode="json"),
            cell.workload,
            dict(cell.params),
            dict(cell.knobs),
            position,
        )

    def cell(self) -> Cell:
        return Cell(FsConfig.model_validate(self.config), self.workload, self.params, self.knobs)

    def cell_key(self) -> str:
        try:
            return self.cell().key
        except Exception:  # an invalid cell: import_records reports it as failed
            return ""


@dataclass
class VmJob:
    """What the guest runs: cells in order, at one scale, each within `trial_timeout`."""

    cells: list[VmCell]
    scale: str
    trial_timeout: float | None = None
    plan: dict[str, Any] | None = None  # the validated plan, for the guest's record only
    # Instead of cells: make the scratch disk a copy of the guest's own root on this
    # filesystem config (FsConfig as JSON), for the boot workload's filesystems that the
    # host kernel cannot write.
    make_root: dict[str, Any] | None = None
    # Cell keys the kernel refused before this job: skipped, as on the host.
    refused: list[str] = field(default_factory=list)
    # Instead of cells: one boot of a crash cell (fsbench.vm.crash.guest: check the disk the
    # last power cut left, then run the pattern until the power goes).
    crash: dict[str, Any] | None = None
    # The cells' input files as their plan names them -> their copies in the share, and
    # the host's working directory, where a relative name starts.
    inputs: dict[str, str] = field(default_factory=dict)
    cwd: str = "/"
    engine: str = ""  # the engine's copy in the share, or "" (none built on the host)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> VmJob:
        data = json.loads(text)
        cells = [VmCell(**c) for c in data["cells"]]
        return cls(
            cells,
            data["scale"],
            data.get("trial_timeout"),
            data.get("plan"),
            data.get("make_root"),
            list(data.get("refused") or []),
            data.get("crash"),
            dict(data.get("inputs") or {}),
            data.get("cwd", "/"),
            data.get("engine", ""),
        )


def record_lines(share: Path) -> list[str]:
    """The complete lines of the guest's records file (it may be writing the last one)."""
    try:
        text = (share / RECORDS).read_text()
    except OSError:
        return []
    return [ln for ln in text.split("\n")[:-1] if ln.strip()]


def read_records(share: Path) -> list[dict[str, Any]]:
    """Every record the guest wrote, as the dicts it wrote (asdict(TrialRecord))."""
    out: list[dict[str, Any]] = []
    for line in record_lines(share):
        try:
            out.extend(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out
