"""A host's part of a fleet run: how the controller starts it and how it watches it, one
definition for both sides.

The controller's playbook (start.yml) runs `fsbench fleet member PLAN --entry JSON` on each
host, the entry a `MemberEntry`; the host's fsbench rewrites a `MemberProgress` record
after every trial, atomically, and the controller reads it at every poll (status.yml) and
knows a running host by the pid it names (running.yml, stop.yml).
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from fsbench.execute.hooks import Hooks
from fsbench.execute.schedule import Slot
from fsbench.execute.session import Part
from fsbench.plan.model import Plan
from fsbench.store.records import TrialRecord


class MemberEntry(BaseModel):
    """What a host is told of its part: the fleet run's uid, its own inventory name and
    groups, and where it writes its progress."""

    model_config = ConfigDict(extra="forbid")

    uid: str
    host: str
    groups: list[str] = []
    progress: Path

    @property
    def part(self) -> Part:
        return Part(self.uid, self.host, tuple(self.groups))


State = Literal["starting", "running", "finished", "interrupted", "failed"]


class MemberProgress(BaseModel):
    """A host's progress: its fsbench's pid, the member run, trials done of total, the
    cell running now, an ETA, and when it was written."""

    pid: int | None = None
    hostname: str | None = None
    state: State = "starting"
    run_id: int | None = None
    done: int = 0
    total: int = 0
    current: str = ""
    eta_s: float | None = None
    updated: float = 0.0


class ProgressFile(Hooks):
    """Keeps the host's `MemberProgress` on disk, rewritten atomically after every trial;
    passes every event on to `inner` (the terminal's progress bar)."""

    def __init__(self, path: Path, inner: Hooks) -> None:
        self.path, self.inner = path, inner
        self.record = MemberProgress(pid=os.getpid(), hostname=socket.gethostname())
        self.t0 = time.monotonic()
        self.first_done = 0
        self._write()

    def _write(self) -> None:
        self.record.updated = time.time()
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text(self.record.model_dump_json())
        os.replace(tmp, self.path)

    def ended(self, state: str) -> None:
        self.inner.ended(state)
        self.record = self.record.model_copy(update={"state": state})
        self._write()

    def done(self, run_id: int, stored: int) -> None:
        """A part that had nothing left to do: finished with its trials stored."""
        self.record = self.record.model_copy(
            update={"run_id": run_id, "state": "finished", "done": stored, "total": stored}
        )
        self._write()

    def note(self, text: str) -> None:
        self.inner.note(text)

    def begin(self, run_id: int, plan: Plan, done: int, total: int, banner: str) -> None:
        self.inner.begin(run_id, plan, done, total, banner)
        self.first_done = done
        self.record = self.record.model_copy(
            update={"run_id": run_id, "done": done, "total": total, "state": "running"}
        )
        self._write()

    def started(self, slot: Slot, done: int, total: int) -> None:
        self.inner.started(slot, done, total)
        self.record = self.record.model_copy(
            update={"current": slot.cell.describe(), "total": total}
        )
        self._write()

    def finished(self, slot: Slot, records: list[TrialRecord], done: int, total: int) -> None:
        self.inner.finished(slot, records, done, total)
        made = done - self.first_done
        rate = made / max(time.monotonic() - self.t0, 1e-9)
        eta = (total - done) / rate if made else None
        self.record = self.record.model_copy(update={"done": done, "total": total, "eta_s": eta})
        self._write()
