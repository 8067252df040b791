"""Trials measured while the store could not take them, kept in order in a file of the
run's workdir (`WORKDIR/spool/<run uid>.jsonl`, one cell a line) until they are written:
a run killed meanwhile, or stopped by an outage or a full store disk, loses none of them;
its resume writes them first.

The file holds trial records and the run's id in its store, nothing else: never the
store's URL, so never its password. It is rewritten whole (a new file renamed over the
old one) whenever what waits changes, and removed when nothing does.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fsbench.store.records import TrialRecord


def spool_path(workdir: Path, run_uid: str) -> Path:
    return Path(workdir) / "spool" / f"{run_uid}.jsonl"


@dataclass
class Cell:
    """One cell's records waiting for the store (one transaction when written). `tried`:
    a write of it was begun, and its commit may have happened although the connection
    dropped before it said so; it is read back before it is written again."""

    run_id: int
    records: list[TrialRecord]
    tried: bool = False

    @property
    def size(self) -> int:
        """Bytes of its records as JSON (what the store needs room for, roughly)."""
        return len(self.line())

    def line(self) -> str:
        return json.dumps(
            {"run_id": self.run_id, "records": [asdict(r) for r in self.records]}, default=str
        )


@dataclass
class Spool:
    """The file at `path`; `error` says why it could not be written (the cells then wait in
    memory only)."""

    path: Path
    error: str = ""
    written: int = field(default=0)  # cells in the file now

    def keep(self, cells: list[Cell]) -> None:
        """The file holds exactly `cells` (none: it is removed)."""
        try:
            if not cells:
                self.path.unlink(missing_ok=True)
                self.written = 0
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(self.path.name + ".tmp")
            with open(tmp, "w", encoding="utf-8") as out:
                for cell in cells:
                    out.write(cell.line() + "\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
            self.written = len(cells)
            self.error = ""
        except OSError as exc:
            self.error = f"{self.path}: {exc.strerror or exc}"

    def read(self) -> list[Cell]:
        """The cells the file holds (a line cut short by a crash is not one)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        cells = []
        for line in text.splitlines():
            try:
                data = json.loads(line)
            except ValueError:
                continue
            records = [TrialRecord.from_dict(r) for r in data["records"]]
            cells.append(Cell(int(data["run_id"]), records, tried=True))
        self.written = len(cells)
        return cells
