"""The one place results live, through SQLAlchemy Core: an SQLite file (WAL) by default,
or a PostgreSQL server (`postgresql://`, psycopg 3) that many hosts write at once.

Written trial by trial (a cell's records in one transaction), so a crash or Ctrl-C loses
at most the trial in progress. A run's store waits out an outage (waiting.py: the server
restarting, a connection dropped): its reads and updates try again with a backoff, and
the cells it measures meanwhile wait in order (in its spool file too) and are written
when the server is back, each exactly once. A full disk, or an outage past the run's
limit, stops the run (outage.py). Runs and trials carry a uid (ids are per store), so
that many writers never collide and stores merge without clashes. The schema is the
interface: reports, compare and scripts read only what is stored here.

A password in a URL stays in `Store.secret_url`, which only the engine sees: the URL
shown, logged or stored (`Store.url`, the stored argv, error messages) is without it.
"""

from __future__ import annotations

import fcntl
import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    create_engine,
    event,
    func,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import (
    IntegrityError,
    OperationalError,
    ProgrammingError,
    SQLAlchemyError,
)

from fsbench.store import folded, schema
from fsbench.store.dburl import redact_argv, to_url, without_password
from fsbench.store.records import FoldedRecord, MetricRecord, RunRecord, TrialRecord, now
from fsbench.store.schema import (
    SAMPLE_FIELDS,
    SCHEMA_VERSION,
    metadata,
    metrics,
    runs,
    samples,
    trials,
)
from fsbench.store.waiting import Waiter, Waits, waited
from fsbench.system.errors import FsbenchError
from fsbench.system.hostkeys import Host

# The key of the advisory lock that serializes schema creation and migration (any fixed
# 64-bit number that other applications of the database are unlikely to use).
PG_SCHEMA_LOCK = 0x66736265_6E6368
# libpq's limits where the URL sets none: a connection attempt to a server that does not
# answer gives up (and is tried again) after this many seconds, and a dead peer on a TCP
# connection is noticed within about a minute, not the kernel's two hours.
PG_CONNECT = {"connect_timeout": 10, "keepalives_idle": 30, "keepalives_interval": 10,
              "keepalives_count": 3}  # fmt: skip


class Store(Waits):
    """The result store at `db` (a path or a URL), created or migrated forward on open.

    A store written by an older fsbench is brought to this version in place (SQLite: after
    a copy beside it, `<file>.schema-N.bak`; PostgreSQL: in one transaction); `migrated`
    then says what was done. One process at a time creates or migrates a store (a lock
    file beside an SQLite store, an advisory lock on PostgreSQL). A store written by a
    newer fsbench is refused in one line: this one cannot know its meaning.
    """

    def __init__(self, db: str | Path | None = None, create: bool = True) -> None:
        """`create=False`: an empty database is refused, not made a store (a source to
        read from)."""
        # The URL with its password, for the engine only; `url` is what may be shown.
        self.create = create
        self.secret_url = to_url(db)
        self.url = without_password(self.secret_url)
        self.migrated: list[str] = []
        self.backup: Path | None = None
        # How a run's writes wait out an outage (none outside a run: the session sets it).
        self.waiter = Waiter(self.url)
        self._opening = True
        try:
            self.engine: Engine = create_engine(
                self.secret_url, pool_pre_ping=True, connect_args=self._connect_args()
            )
            event.listen(self.engine, "handle_error", self._store_error)
            if not self.postgresql:
                event.listen(self.engine, "connect", _sqlite_pragmas)
            with self._schema_lock():
                self._open_schema()
        except (SQLAlchemyError, OSError) as exc:
            raise FsbenchError(
                f"cannot open result store {self.url}: {self._reason(exc)}"
            ) from None
        finally:
            self._opening = False

    def _connect_args(self) -> dict[str, Any]:
        if not self.postgresql:
            return {}
        given = make_url(self.secret_url).query
        return {k: v for k, v in PG_CONNECT.items() if k not in given}

    def __str__(self) -> str:
        return self.url

    @contextmanager
    def _schema_lock(self) -> Iterator[None]:
        """One process at a time creates or migrates a store (a report that opens it while
        a run starts must not migrate it twice). The lock is a file of its own beside the
        store: SQLite's locks are POSIX locks, and closing any descriptor of the database
        file drops every POSIX lock the process holds on it (a reader then saw the store
        "malformed" while a run wrote)."""
        if self.postgresql:
            # Many hosts may open a new shared store at once: a session-level advisory
            # lock serializes creation and migration on the server.
            with self.engine.connect() as conn:
                conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": PG_SCHEMA_LOCK})
                try:
                    yield
                finally:
                    conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": PG_SCHEMA_LOCK})
                    conn.commit()
            return
        path = self.sqlite_path
        if path is None:
            yield
            return
        with open(path.with_name(f"{path.name}.lock"), "ab") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _open_schema(self) -> None:
        with self.engine.connect() as conn:
            version = schema.stored_version(conn)
        if version == SCHEMA_VERSION:
            return
        if version is None and not self.create:
            raise FsbenchError(f"no fsbench store at {self.url}")
        if version is not None and version > SCHEMA_VERSION:
            raise FsbenchError(
                f"{self.url} was written by a newer fsbench (schema {version}; this one "
                f"knows up to {SCHEMA_VERSION}): upgrade fsbench to read it"
            )
        if self.postgresql:
            # DDL is transactional on PostgreSQL: the tables, the migration and the
            # version are one transaction, all or nothing (no backup needed).
            with self.engine.begin() as conn:
                metadata.create_all(conn)
                self.migrated = schema.migrate(conn, version) if version else []
                schema.write_version(conn)
        else:
            if version is not None:
                self.backup = self._backup(version)
            self._create_tables()  # a new store, or tables added since (samples, meta)
            with self.engine.begin() as conn:
                self.migrated = schema.migrate(conn, version) if version else []
                schema.write_version(conn)
        if version is not None:
            self.migrated.insert(0, f"migrated from schema {version} to {SCHEMA_VERSION}")

    def _backup(self, version: int) -> Path | None:
        """A consistent copy of an SQLite store before it is migrated (the backup API
        copies committed WAL content too). PostgreSQL migrates in one transaction."""
        path = self.sqlite_path
        if path is None:
            return None
        dest = path.with_name(f"{path.name}.schema-{version}.bak")
        n = 1
        while dest.exists():
            dest = path.with_name(f"{path.name}.schema-{version}.{n}.bak")
            n += 1
        copy_sqlite(str(path), dest)
        return dest

    def _create_tables(self) -> None:
        # create_all checks, then creates, table by table: two processes opening a new
        # store at once (a report while a run starts) can both decide to create, and the
        # loser trips over each table or index the other made meanwhile. Every such error
        # means one more object exists, so as many retries as objects always get there.
        objects = sum(1 + len(t.indexes) for t in metadata.sorted_tables)
        for attempt in range(objects + 1):
            try:
                metadata.create_all(self.engine)
                return
            except (OperationalError, ProgrammingError, IntegrityError) as exc:
                if "already exists" not in str(exc) or attempt == objects:
                    raise

    def close(self) -> None:
        self.engine.dispose()

    def create_run(
        self,
        *,
        name: str,
        fsbench_version: str,
        argv: list[str],
        plan: dict[str, Any],
        overrides: dict[str, list[str]],
        schedule: list[tuple[int, str]],
        host: Host | Mapping[str, Any],
        target: dict[str, Any],
        kind: str = "run",
        facts: dict[str, Any] | None = None,
        workloads: dict[str, Any] | None = None,
        features: dict[str, Any] | None = None,
        uid: str | None = None,
        part_of: str = "",
        part_host: str = "",
        part_groups: list[str] | None = None,
        tag: str = "",
    ) -> int:
        """A new run; its argv is stored with any URL's password hidden, its host facts
        checked against their registry (a mapping is refused there in one line)."""
        machine = host if isinstance(host, Host) else Host.write(host)
        uid = uid or schema.new_uid()
        tried = False

        def created() -> int:
            nonlocal tried
            with self.engine.begin() as conn:
                if tried:  # a try whose commit may have happened: read back
                    found = conn.execute(select(runs.c.id).where(runs.c.uid == uid)).scalar()
                    if found is not None:
                        return int(found)
                tried = True
                return _new_id(conn.execute(insert(runs).values(**values)).inserted_primary_key)

        values = {
            "schema_version": SCHEMA_VERSION,
            "name": name,
            "kind": kind,
            "status": "running",
            "created_at": now(),
            "fsbench_version": fsbench_version,
            "argv": json.dumps(redact_argv(argv)),
            "plan": json.dumps(plan),
            "overrides": json.dumps(overrides),
            "schedule": json.dumps(schedule),
            "host": json.dumps(machine.stored()),
            "target": json.dumps(target),
            "workloads": json.dumps(workloads or {}),
            "features": json.dumps(features or {}),
            "facts": json.dumps(facts or {}),
            "uid": uid,
            "part_of": part_of,
            "part_host": part_host,
            "part_groups": json.dumps(list(part_groups or [])),
            "tag": tag,
        }
        return self.waited(created)

    @waited
    def set_target(self, run_id: int, target: dict[str, Any]) -> None:
        with self.engine.begin() as conn:
            conn.execute(update(runs).where(runs.c.id == run_id).values(target=json.dumps(target)))

    @waited
    def set_convergence(self, run_id: int, convergence: dict[str, Any]) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(runs).where(runs.c.id == run_id).values(convergence=json.dumps(convergence))
            )

    @waited
    def set_facts(self, run_id: int, facts: dict[str, Any]) -> None:
        """The facts of the run's kind (store/runkinds.py), replaced whole."""
        with self.engine.begin() as conn:
            conn.execute(update(runs).where(runs.c.id == run_id).values(facts=json.dumps(facts)))

    @waited
    def reopen_run(self, run_id: int) -> None:
        """A resumed run is running again until it finishes or is interrupted again."""
        with self.engine.begin() as conn:
            conn.execute(
                update(runs).where(runs.c.id == run_id).values(status="running", finished_at=None)
            )

    @waited
    def finish_run(self, run_id: int, status: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(runs).where(runs.c.id == run_id).values(status=status, finished_at=now())
            )

    def _insert_trial(self, conn: Connection, run_id: int, trial: TrialRecord) -> int:
        trial.uid = trial.uid or schema.new_uid()
        res = conn.execute(insert(trials).values(run_id=run_id, **_trial_values(trial)))
        trial_id = _new_id(res.inserted_primary_key)
        if trial.metrics:
            conn.execute(
                insert(metrics),
                [
                    {
                        "trial_id": trial_id,
                        "name": m.name,
                        "value": float(m.value),
                        "unit": m.unit,
                        "better": m.better,
                        "resolution": float(m.resolution),
                    }
                    for m in trial.metrics
                ],
            )
        if trial.samples:
            conn.execute(
                insert(samples),
                [{"trial_id": trial_id, **{k: s[k] for k in SAMPLE_FIELDS}} for s in trial.samples],
            )
        folded.insert_rows(conn, trial_id, trial.folded)
        trial.id = trial_id
        return trial_id

    @waited
    def latest_run_id(self) -> int | None:
        """The run started last. A host's part of a run on many hosts is not a run of its
        own, where the run it is part of is in the store (it was made first; the parts are
        written or merged after it)."""
        whole = runs.alias("whole")
        part = select(whole.c.id).where(whole.c.uid == runs.c.part_of).exists()
        with self.engine.connect() as conn:
            found = conn.execute(select(func.max(runs.c.id)).where(~part)).scalar()
        return None if found is None else int(found)

    @waited
    def get_run(self, run_id: int) -> RunRecord:
        with self.engine.connect() as conn:
            row = conn.execute(select(runs).where(runs.c.id == run_id)).mappings().first()
        if row is None:
            raise FsbenchError(f"no run {run_id} in {self.url}")
        return _run_record(row)

    @waited
    def parts(self, part_of: str) -> list[RunRecord]:
        """The parts of the run with uid `part_of` (one run per host, each with its own
        repetition loop), in the order they were made; [] for a run on one machine."""
        with self.engine.connect() as conn:
            rows = (
                conn.execute(select(runs).where(runs.c.part_of == part_of).order_by(runs.c.id))
                .mappings()
                .all()
            )
        return [_run_record(r) for r in rows]

    def part(self, part_of: str, host: str) -> RunRecord | None:
        found = [r for r in self.parts(part_of) if r.part_host == host]
        return found[-1] if found else None

    def run_trials(self, run: RunRecord) -> list[TrialRecord]:
        """The one view of a run's trials that reports read: its own, or, for a run made of
        parts, its parts' trials, each stamped with the host it ran on."""
        parts = self.parts(run.uid) if run.uid else []
        if not parts:
            return self.get_trials(run.id)
        out: list[TrialRecord] = []
        for part in parts:
            for trial in self.get_trials(part.id):
                trial.host = part.part_host
                out.append(trial)
        return out

    @waited
    def list_runs(self) -> list[RunRecord]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(runs).order_by(runs.c.id)).mappings().all()
        return [_run_record(r) for r in rows]

    @waited
    def get_trials(self, run_id: int) -> list[TrialRecord]:
        with self.engine.connect() as conn:
            trows = (
                conn.execute(
                    select(trials)
                    .where(trials.c.run_id == run_id)
                    .order_by(trials.c.seq, trials.c.step)
                )
                .mappings()
                .all()
            )
            mrows = (
                conn.execute(
                    select(metrics)
                    .join(trials, metrics.c.trial_id == trials.c.id)
                    .where(trials.c.run_id == run_id)
                    .order_by(metrics.c.id)
                )
                .mappings()
                .all()
            )
        by_trial: dict[int, list[MetricRecord]] = {}
        for m in mrows:
            by_trial.setdefault(m["trial_id"], []).append(
                MetricRecord(m["name"], m["value"], m["unit"], m["better"], m["resolution"])
            )
        return [_trial_record(t, by_trial.get(t["id"], [])) for t in trows]

    @waited
    def get_samples(self, trial_id: int) -> list[dict[str, float]]:
        """The timeline of one trial's timed phase, in time order."""
        with self.engine.connect() as conn:
            rows = (
                conn.execute(
                    select(samples).where(samples.c.trial_id == trial_id).order_by(samples.c.t)
                )
                .mappings()
                .all()
            )
        return [{k: float(r[k]) for k in SAMPLE_FIELDS} for r in rows]

    @waited
    def get_folded(self, trial_ids: Sequence[int]) -> dict[int, list[FoldedRecord]]:
        """The tracers' maps of these trials (folded stacks, histograms), by trial id."""
        with self.engine.connect() as conn:
            return folded.read(conn, trial_ids)

    @waited
    def integrity(self) -> str:
        """`ok` or SQLite's own complaint (doctor shows it)."""
        if not self.secret_url.startswith("sqlite"):
            return "ok"
        with self.engine.connect() as conn:
            rows = conn.exec_driver_sql("PRAGMA integrity_check").fetchall()
        return ", ".join(str(r[0]) for r in rows)


# Columns kept as JSON text, each with how it is written; the rest are stored as they are.
_TRIAL_JSON: dict[str, dict[str, Any]] = {
    "mkfs_options": {},
    "params": {"sort_keys": True},
    "knobs": {"sort_keys": True},
    "provenance": {"default": str},
}
# A trial's columns are its record's fields of the same names (its id and run aside).
_TRIAL_COLUMNS = [c.name for c in trials.columns if c.name not in ("id", "run_id")]
# A run's JSON columns, with what a row from before the column had means.
_RUN_JSON: dict[str, str] = {
    "argv": "[]",
    "plan": "{}",
    "overrides": "{}",
    "schedule": "[]",
    "host": "{}",
    "target": "{}",
    "convergence": "{}",
    "facts": "{}",
    "workloads": "{}",
    "features": "{}",
    "part_groups": "[]",
}


def _trial_values(trial: TrialRecord) -> dict[str, Any]:
    return {
        c: json.dumps(getattr(trial, c), **_TRIAL_JSON[c])
        if c in _TRIAL_JSON
        else getattr(trial, c)
        for c in _TRIAL_COLUMNS
    }


def _trial_record(row: Any, metrics: list[MetricRecord]) -> TrialRecord:
    values = {c: json.loads(row[c]) if c in _TRIAL_JSON else row[c] for c in _TRIAL_COLUMNS}
    return TrialRecord(id=row["id"], metrics=metrics, **values)


def _run_record(row: Any) -> RunRecord:
    values = {f.name: row[f.name] for f in fields(RunRecord)}
    for name, empty in _RUN_JSON.items():
        values[name] = json.loads(row[name] or empty)
    values["schedule"] = [(int(a), str(b)) for a, b in values["schedule"]]
    values["host"] = Host.read(values["host"])
    values["part_groups"] = list(values["part_groups"])
    return RunRecord(**values)


def copy_sqlite(source: str, dest: Path, uri: bool = False) -> None:
    """A consistent copy of an SQLite database (its backup API: what is committed)."""
    src = sqlite3.connect(source, uri=uri)
    try:
        out = sqlite3.connect(dest)
        try:
            src.backup(out)
        finally:
            out.close()
    finally:
        src.close()


def _new_id(key: Any) -> int:
    if key is None:
        raise FsbenchError("the store returned no id for a new row")
    return int(key[0])


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    # WAL: a report can read while a run writes; a crash mid-write loses no committed trial.
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.close()
