"""sqlite: inserts into an indexed table, each in its own transaction, through Python's
sqlite3 library, on a database file on the filesystem (the SQLite test of the classic
suites: Phoronix's pts/sqlite timed 12,500 such inserts).

With the classic settings (rollback journal `DELETE`, `synchronous = FULL`) every insert
is a commit: the journal is created, written and fsync'd, the database written and
fsync'd, the journal deleted. That is a test of fsync and of file create/delete cost.

The rows are made in `prepare` (seeded: every run inserts the same rows), the schema
too; the timed phase opens the database, inserts and closes it. `inserts_per_s` is the
inserts over the runner's `seconds`, which includes the syncfs after the run (nothing
left to write under FULL; everything under OFF). `inspect` checks, after a remount, that
every row is there and the database is sound.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from fsbench.system.errors import TrialFailed, Unsupported
from fsbench.workloads.base import CacheState, Flush, Params, Scale, TrialContext, Workload
from fsbench.workloads.metric import Better, Metric, Rate

DIRNAME = "sqlite"
DBNAME = "bench.db"
JournalMode = Literal["DELETE", "TRUNCATE", "PERSIST", "WAL", "MEMORY", "OFF"]
Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]
_ROW_BYTES = 256  # generous: key, text of up to 100 bytes, timestamp, index entry
_MARGIN = 32 << 20

SCHEMA = (
    "CREATE TABLE bench ("
    " id INTEGER PRIMARY KEY,"
    " k INTEGER NOT NULL,"
    " name TEXT NOT NULL,"
    " t TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)",
    "CREATE INDEX bench_k ON bench (k)",
)
INSERT = "INSERT INTO bench (k, name) VALUES (?, ?)"


class SqliteParams(Params):
    inserts: Annotated[int, Field(gt=0, description="rows inserted, one transaction each")]
    journal_mode: JournalMode = Field(
        default="DELETE", description="PRAGMA journal_mode (DELETE: the classic rollback journal)"
    )
    synchronous: Synchronous = Field(
        default="FULL", description="PRAGMA synchronous (FULL: fsync at every commit, classic)"
    )
    seed: int = Field(default=1, description="seed of the rows (same seed, same rows)")


def rows(params: SqliteParams) -> list[tuple[int, str]]:
    rng = random.Random(params.seed)
    letters = "abcdefghijklmnopqrstuvwxyz "
    return [
        (rng.randrange(1 << 31), "".join(rng.choices(letters, k=rng.randrange(16, 100))))
        for _ in range(params.inserts)
    ]


def connect(path: Path, params: SqliteParams) -> sqlite3.Connection:
    """A connection in autocommit mode (every statement its own transaction) with the
    journal mode and synchronous setting of params, as SQLite reports them back."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        (mode,) = conn.execute(f"PRAGMA journal_mode = {params.journal_mode}").fetchone()
        if str(mode).upper() != params.journal_mode:
            raise Unsupported(f"sqlite refused journal_mode={params.journal_mode}: got {mode}")
        conn.execute(f"PRAGMA synchronous = {params.synchronous}")
    except BaseException:
        conn.close()
        raise
    return conn


class Sqlite(Workload[SqliteParams]):
    name = "sqlite"
    summary = (
        "sqlite: inserts into an indexed table, one transaction each (journal DELETE, "
        "synchronous FULL): inserts/s"
    )
    scale_defaults = {
        # 85-600 inserts/s on ext4 here (DELETE + FULL: an fsync'd journal per insert),
        # depending on the host's load: fsync cost is the whole test.
        Scale.TINY: {"inserts": 300},
        Scale.QUICK: {"inserts": 1500},
        Scale.FULL: {"inserts": 12500},  # Phoronix's pts/sqlite
    }
    cache = CacheState.WARM  # a fresh database: nothing to read
    flush = Flush.SYNC
    headline = ("inserts_per_s",)
    rates = (Rate("inserts", "inserts_per_s", "inserts/s"),)

    def __init__(self) -> None:
        self._rows: list[tuple[int, str]] = []

    def required_bytes(self, params: SqliteParams) -> int:
        return params.inserts * _ROW_BYTES + _MARGIN

    def _path(self, ctx: TrialContext) -> Path:
        return ctx.mountpoint / DIRNAME / DBNAME

    def prepare(self, ctx: TrialContext, params: SqliteParams) -> None:
        path = self._path(ctx)
        path.parent.mkdir(exist_ok=True)
        self._rows = rows(params)
        try:
            conn = connect(path, params)
            try:
                for statement in SCHEMA:
                    conn.execute(statement)
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise TrialFailed(f"sqlite: creating {path}: {exc}") from exc

    def run(self, ctx: TrialContext, params: SqliteParams) -> list[Metric]:
        if len(self._rows) != params.inserts:  # run without prepare (a chain): make them
            self._rows = rows(params)
        path = self._path(ctx)
        done = 0
        try:
            conn = connect(path, params)
            try:
                for row in self._rows:
                    conn.execute(INSERT, row)
                    done += 1
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise TrialFailed(
                f"sqlite: insert {done + 1} of {params.inserts}: {exc}",
                f"{path} journal_mode={params.journal_mode} synchronous={params.synchronous}",
            ) from exc
        return [Metric("inserts", params.inserts, "count", Better.HIGHER, resolution=1)]

    def inspect(self, ctx: TrialContext, params: SqliteParams) -> list[Metric]:
        path = self._path(ctx)
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            (count,) = conn.execute("SELECT count(*) FROM bench").fetchone()
            (check,) = conn.execute("PRAGMA quick_check").fetchone()
        finally:
            conn.close()
        if count != params.inserts or check != "ok":
            raise TrialFailed(
                f"sqlite: {count} rows of {params.inserts} after remount, quick_check: {check}"
            )
        return [Metric("db_bytes", path.stat().st_size, "B", Better.LOWER)]
