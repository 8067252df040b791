"""What a store's error means for a run that writes it: an outage to wait out (the server
restarting, a connection dropped, SQLite locked past its busy timeout), a full disk (the
run stops, interrupted), or an error no retry can fix (authentication, a missing table, a
constraint), raised at once. Each is one line without the URL's password.

    kind = classify(exc)          # TRANSIENT, FULL or PERMANENT
    for delay in Backoff(limit): ...  # bounded exponential backoff with jitter
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import ClassVar

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from fsbench.system import numbers
from fsbench.system.errors import FsbenchError

# The backoff between tries: from FIRST_DELAY, doubled each try, at most MAX_DELAY, each
# delay drawn in [JITTER x delay, delay] (many hosts that lost one server at once do not
# all knock again at the same moment).
FIRST_DELAY = 0.5
MAX_DELAY = 15.0
JITTER = 0.5


class Kind(StrEnum):
    TRANSIENT = "transient"  # wait it out
    FULL = "full"  # the store's disk is full: the run stops, interrupted
    PERMANENT = "permanent"  # no retry fixes it


# PostgreSQL's SQLSTATEs of an outage: class 08 (connection exception), the server shutting
# down or starting (57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now),
# too many connections, and a transaction the server gave up to let another go on.
_PG_TRANSIENT = ("08", "57P01", "57P02", "57P03", "53300", "40001", "40P01")
_PG_FULL = ("53100",)  # disk_full
# A connection that failed before the server said who it is has no SQLSTATE: the server's
# FATAL words say whether waiting helps (it is starting, stopping, busy) or not (who we
# are, which database).
_CONNECT_PERMANENT = (
    "password authentication failed",
    "does not exist",
    "no pg_hba.conf entry",
    "permission denied",
    "is not permitted to log in",
    "authentication failed",
)
# SQLite: locked past its busy timeout is another writer (wait); full is the disk.
_SQLITE_TRANSIENT = ("SQLITE_BUSY", "SQLITE_LOCKED")
_SQLITE_FULL = ("SQLITE_FULL",)
# An I/O error on an SQLite store whose filesystem has less than this free is the disk
# being full (a write of the WAL's shared memory fails so, not as SQLITE_FULL).
FULL_BELOW = 1 << 20


def classify(exc: BaseException, path: Path | None = None) -> Kind:
    """What `exc` (a SQLAlchemy error or the driver's own) means for a run writing the
    store; `path`: an SQLite store's file (its filesystem's free space tells an I/O error
    of a full disk from another)."""
    cause = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    if isinstance(cause, sqlite3.Error):
        name = str(getattr(cause, "sqlite_errorname", ""))
        if name.startswith(_SQLITE_TRANSIENT):
            return Kind.TRANSIENT
        if name.startswith(_SQLITE_FULL):
            return Kind.FULL
        if name.startswith("SQLITE_IOERR") and path is not None and free_bytes(path) < FULL_BELOW:
            return Kind.FULL
        return Kind.PERMANENT
    state = str(getattr(cause, "sqlstate", None) or "")
    if state:
        if state.startswith(_PG_FULL):
            return Kind.FULL
        return Kind.TRANSIENT if state.startswith(_PG_TRANSIENT) else Kind.PERMANENT
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return Kind.TRANSIENT  # SQLAlchemy saw the connection drop
    if _is_psycopg_connection_error(cause) or isinstance(exc, OperationalError | InterfaceError):
        said = str(cause).lower()
        return Kind.PERMANENT if any(w in said for w in _CONNECT_PERMANENT) else Kind.TRANSIENT
    return Kind.PERMANENT


def _is_psycopg_connection_error(cause: BaseException) -> bool:
    """psycopg's own OperationalError or InterfaceError without a SQLSTATE: the connection
    failed or was lost (refused, reset, the socket gone, "connection is bad")."""
    module = type(cause).__module__
    return module.startswith("psycopg") and type(cause).__name__ in (
        "OperationalError",
        "InterfaceError",
    )


def free_bytes(path: Path) -> int:
    """Free bytes on the filesystem holding `path` (or its nearest existing parent)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        return shutil.disk_usage(probe).free
    except OSError:
        return 0


@dataclass
class Backoff:
    """Delays between tries of an outage that began `waited` seconds ago, until `limit`
    seconds have passed: exponential from FIRST_DELAY, capped at MAX_DELAY, jittered; the
    last delay ends at the limit."""

    limit: float
    rng: random.Random = field(default_factory=random.Random)
    tries: int = 0

    def next_delay(self, waited: float) -> float | None:
        """Seconds to wait before the next try, or None: the limit has passed."""
        left = self.limit - waited
        if left <= 0:
            return None
        top = min(MAX_DELAY, FIRST_DELAY * 2**self.tries)
        self.tries += 1
        return float(min(left, top * self.rng.uniform(JITTER, 1.0)))

    def delays(self, waited: float = 0.0) -> Iterator[float]:
        while (delay := self.next_delay(waited)) is not None:
            yield delay
            waited += delay


class StoreStopped(FsbenchError):
    """The store cannot take the run's writes now (unreachable past its limit, its disk
    full): the run ends `interrupted`, and a resume goes on with it once it can."""

    run_status: ClassVar[str] = "interrupted"


class StoreUnreachable(StoreStopped):
    def __init__(self, url: str, waited: float, reason: str) -> None:
        super().__init__(f"result store {url} unreachable for {waited:.0f} s ({reason})")


class StoreFull(StoreStopped):
    def __init__(self, where: str, reason: str, needed: int | None, free: int | None) -> None:
        room = ""
        if needed is not None:
            room = f": about {numbers.size(needed)} more free space needed"
            if free is not None:
                room += f" ({numbers.size(free)} free)"
        super().__init__(f"result store {where} is full{room} ({reason})")


def sqlite_room_needed(path: Path, pending_bytes: int, page_size: int = 4096) -> int:
    """What an SQLite store in WAL mode needs free to take `pending_bytes` of records: each
    changed page written to the WAL (about 4 x the records' JSON, indexes and metrics
    rows included), the WAL growing to its autocheckpoint (1000 pages) before it is
    reused, and the database file taking the pages at the checkpoint."""
    wal = path.with_name(path.name + "-wal")
    wal_now = wal.stat().st_size if wal.exists() else 0
    wal_room = max(0, 1000 * page_size - wal_now)
    return 4 * pending_bytes + wal_room + 16 * page_size


class StoreError(FsbenchError):
    """A store call failed: one line naming the store without its password, and what
    the failure means (`kind`)."""

    def __init__(self, message: str, kind: Kind) -> None:
        super().__init__(message)
        self.kind = kind
