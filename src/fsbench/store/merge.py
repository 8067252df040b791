"""Bringing runs from one store into another, keeping their provenance.

A run is the same run in every store by its uid, a trial the same trial by its uid. Merging
copies the rows of the runs DEST lacks (every column: host, target, plan, argv, status,
times, convergence, the run a part belongs to) with their trials, metrics, samples and
tracers' maps; to a run it already has, it adds the trials the run lacks (a host's store
fetched again after a resume), then takes the source's status, end and convergence when
the source got further. Each run is merged in one transaction. Merging the same store
twice adds nothing. Integer ids are per store: they change, the uids stay.

A source is never written: an SQLite source is read from a snapshot in a temporary
directory (`source`), so that a store of an older fsbench is migrated in the copy only.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, RowMapping, Table, insert, select, update
from sqlalchemy.exc import IntegrityError

from fsbench.store.dburl import redact_argv
from fsbench.store.results import Store, copy_sqlite
from fsbench.store.schema import folded, metrics, runs, samples, trials
from fsbench.system.errors import FsbenchError

# How far a run got: a merge never moves a run back.
_PROGRESS = {"running": 0, "interrupted": 1, "failed": 1, "incomplete": 1, "finished": 2}
# What a run that DEST has takes from a source that got further.
_STATE = ("status", "finished_at", "convergence", "facts", "target")


@dataclass
class MergeResult:
    runs_added: list[str] = field(default_factory=list)  # uids
    runs_updated: list[str] = field(default_factory=list)
    trials_added: int = 0
    # Trials whose slot (seq, step) DEST's copy of the run already holds with another
    # trial (the same run resumed in both stores): DEST's trial is kept.
    trials_conflicting: int = 0

    def add(self, other: MergeResult) -> None:
        self.runs_added += other.runs_added
        self.runs_updated += other.runs_updated
        self.trials_added += other.trials_added
        self.trials_conflicting += other.trials_conflicting

    def as_dict(self) -> dict[str, object]:
        return {
            "runs_added": len(self.runs_added),
            "runs_updated": len(self.runs_updated),
            "trials_added": self.trials_added,
            "trials_conflicting": self.trials_conflicting,
            "uids": [*self.runs_added, *self.runs_updated],
        }


def merge_store(src: Store, dest: Store) -> MergeResult:
    """Every run of `src` into `dest`, one transaction per run; `src` is only read."""
    result = MergeResult()
    with src.engine.connect() as reader:
        for run in reader.execute(select(runs).order_by(runs.c.id)).mappings().all():
            try:
                _merge_run(reader, dest, run, result)
            except IntegrityError:
                # Another writer brought the same run in meanwhile: merge against it.
                _merge_run(reader, dest, run, result)
    return result


def _merge_run(reader: Connection, dest: Store, run: RowMapping, out: MergeResult) -> None:
    src_trials = (
        reader.execute(select(trials).where(trials.c.run_id == run["id"]).order_by(trials.c.id))
        .mappings()
        .all()
    )
    with dest.engine.begin() as conn:
        mine = conn.execute(select(runs).where(runs.c.uid == run["uid"])).mappings().first()
        if mine is None:
            row = _copy(runs, run, argv=json.dumps(redact_argv(json.loads(run["argv"]))))
            run_id = int(conn.execute(insert(runs).values(row).returning(runs.c.id)).scalar_one())
            uids: set[str] = set()
            slots: set[tuple[int, int]] = set()
        else:
            run_id = int(mine["id"])
            held = conn.execute(
                select(trials.c.uid, trials.c.seq, trials.c.step).where(trials.c.run_id == run_id)
            ).all()
            uids = {h.uid for h in held}
            slots = {(h.seq, h.step) for h in held}
        new = [t for t in src_trials if t["uid"] not in uids and (t["seq"], t["step"]) not in slots]
        conflicting = sum(
            1 for t in src_trials if t["uid"] not in uids and (t["seq"], t["step"]) in slots
        )
        _copy_trials(reader, conn, new, run_id)
        updated = mine is not None and bool(new or _further(run, mine))
        if mine is not None and updated and not _further(mine, run):
            state = {k: run[k] for k in _STATE}
            conn.execute(update(runs).where(runs.c.id == run_id).values(state))
    # Counted once the run's transaction is committed.
    if mine is None:
        out.runs_added.append(run["uid"])
    elif updated:
        out.runs_updated.append(run["uid"])
    out.trials_added += len(new)
    out.trials_conflicting += conflicting


def _copy_trials(reader: Connection, conn: Connection, new: list[RowMapping], run_id: int) -> None:
    """The trials with their metrics, samples and tracers' maps, under their new ids."""
    if not new:
        return
    made = conn.execute(
        insert(trials).returning(trials.c.id, trials.c.uid),
        [_copy(trials, t, run_id=run_id) for t in new],
    ).all()
    by_uid = {uid: int(trial_id) for trial_id, uid in made}
    new_id = {int(t["id"]): by_uid[t["uid"]] for t in new}
    for table in (metrics, samples, folded):
        rows = [
            _copy(table, r, trial_id=new_id[r["trial_id"]])
            for chunk in _chunks(sorted(new_id))
            for r in reader.execute(
                select(table).where(table.c.trial_id.in_(chunk)).order_by(table.c.id)
            ).mappings()
        ]
        if rows:
            conn.execute(insert(table), rows)


def _copy(table: Table, row: RowMapping, **changes: Any) -> dict[str, Any]:
    """A row for `table` as it was, without its per-store id, with `changes`."""
    return {c.name: row[c.name] for c in table.columns if c.name != "id"} | changes


def _chunks(ids: list[int], size: int = 500) -> Iterator[list[int]]:
    for i in range(0, len(ids), size):
        yield ids[i : i + size]


def _further(src: RowMapping, dest: RowMapping) -> bool:
    return _PROGRESS.get(src["status"], 0) > _PROGRESS.get(dest["status"], 0)


@contextmanager
def source(db: str | Path) -> Iterator[Store]:
    """A store to merge from, never written. An SQLite file is copied first (SQLite's
    backup API, read-only: a consistent snapshot even while a run writes it) into a
    temporary directory, and the copy opened: a store of an older fsbench is migrated in
    the copy, the source stays as it was. A server store is opened where it is (and, like
    any store fsbench opens, brought forward if an older fsbench made it)."""
    given = str(db)
    path: Path | None = None
    if "://" not in given:
        path = Path(given).expanduser()
    elif given.startswith("sqlite:///"):
        path = Path(given.removeprefix("sqlite:///"))
    if path is None:
        store = Store(db, create=False)
        try:
            yield store
        finally:
            store.close()
        return
    if not path.is_file():
        raise FsbenchError(f"no store at {path}")
    with tempfile.TemporaryDirectory(prefix="fsbench-merge-") as tmp:
        copy = Path(tmp) / path.name
        _snapshot(path, copy)
        try:
            store = Store(copy, create=False)
        except FsbenchError as exc:  # it names the copy: name the source
            raise FsbenchError(str(exc).replace(str(copy), str(path))) from None
        try:
            yield store
        finally:
            store.close()


def _snapshot(path: Path, copy: Path) -> None:
    # Read-only. Without a -wal file beside it nobody has the store open and everything
    # committed is in the file: `immutable` then reads it without creating -wal or -shm
    # files beside it (a read-only WAL reader otherwise leaves them behind).
    live = path.with_name(path.name + "-wal").exists()
    mode = "mode=ro" if live else "mode=ro&immutable=1"
    try:
        copy_sqlite(f"{path.resolve().as_uri()}?{mode}", copy, uri=True)
    except sqlite3.Error as exc:
        raise FsbenchError(f"cannot read the store {path}: {exc}") from None
