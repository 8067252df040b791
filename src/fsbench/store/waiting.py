"""How a store waits out an outage for the run that writes it (`Waits`, the part of the
Store that does it; `Waiter`, its state): the limit (the plan's `store_wait`; 0, the
default outside a run: an error is raised at once), the backoff between tries, what the
run is told ("store unreachable, retrying (N s)"), and the cells measured meanwhile, in
order, in memory and in the run's spool file (spool.py), until they are written, each
exactly once (a cell whose commit may have happened is read back first).

The outage's clock runs from its first failed try to the next success: a run that waited
some of it while its trials went on measuring does not get the whole limit again when it
must block (a read, the run's end).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from sqlalchemy import Connection, Engine, select
from sqlalchemy.engine import ExceptionContext
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from fsbench.store import schema, trialfacts
from fsbench.store.dburl import redact
from fsbench.store.outage import (
    Backoff,
    Kind,
    StoreError,
    StoreFull,
    StoreUnreachable,
    classify,
    free_bytes,
    sqlite_room_needed,
)
from fsbench.store.records import TrialRecord
from fsbench.store.schema import trials
from fsbench.store.spool import Cell, Spool
from fsbench.system.errors import FsbenchError


def _silent(text: str) -> None:
    pass


@dataclass
class Waiter:
    url: str  # as it may be shown
    limit: float = 0.0  # seconds an outage is waited out; 0: not at all
    say: Callable[[str], None] = _silent
    spool: Spool | None = None
    cells: list[Cell] = field(default_factory=list)  # waiting to be written, in order
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    since: float | None = None  # when the outage began (None: none now)
    backoff: Backoff = field(default_factory=lambda: Backoff(0.0))
    next_try: float = 0.0

    @property
    def waits(self) -> bool:
        return self.limit > 0

    @property
    def in_run(self) -> bool:
        """A run set it up (its spool): its errors end the run in one line."""
        return self.spool is not None

    @contextmanager
    def not_waiting(self) -> Iterator[None]:
        """Store calls that must not wait (the run ends on an interrupt: a second try
        later is its resume's)."""
        limit, self.limit = self.limit, 0.0
        try:
            yield
        finally:
            self.limit = limit

    def due(self) -> bool:
        """Whether the next try of a waiting write may happen now."""
        return self.clock() >= self.next_try

    def failed(self, error: Exception) -> float:
        """A try failed with `error` (an outage, one line): the seconds until the next
        one, said to the run; past the limit, StoreUnreachable. Without a limit, `error`
        itself."""
        if not self.waits:
            if not self.in_run:  # the error as it is
                raise error
            raise StoreUnreachable(self.url, 0.0, _reason(error, self.url))
        now = self.clock()
        if self.since is None:
            self.since, self.backoff = now, Backoff(self.limit)
        delay = self.backoff.next_delay(now - self.since)
        if delay is None:
            raise StoreUnreachable(self.url, now - self.since, _reason(error, self.url))
        self.next_try = now + delay
        waiting = f"; cells waiting: {len(self.cells)}" if self.cells else ""
        self.say(f"store unreachable, retrying ({delay:.1f} s){waiting}: {error}")
        return delay

    def recovered(self) -> None:
        """A try succeeded: the outage (if any) is over."""
        if self.since is not None:
            self.say(f"store reachable again after {self.clock() - self.since:.0f} s")
        self.since, self.next_try = None, 0.0

    def drop_first(self) -> None:
        """The first waiting cell is in the store (or can never be: the error says why)."""
        self.cells.pop(0)
        if self.spool is not None and self.spool.written:
            self._keep()

    def spooled(self) -> None:
        """What still waits, in the spool file too (a cell the store took at once never
        touches the disk)."""
        if self.spool is not None and (self.cells or self.spool.written):
            self._keep()

    def _keep(self) -> None:
        if self.spool is None:
            return
        said = self.spool.error
        self.spool.keep(self.cells)
        if self.spool.error and self.spool.error != said:
            self.say(f"warning: cannot keep waiting trials on disk ({self.spool.error})")

    def pending_bytes(self) -> int:
        return sum(c.size for c in self.cells)


def _reason(error: Exception, url: str) -> str:
    """The driver's words of an error that says `result store URL: words`."""
    text = str(error)
    prefix = f"result store {url}: "
    return text[len(prefix) :] if text.startswith(prefix) else text


P = ParamSpec("P")
T = TypeVar("T")
W = TypeVar("W", bound="Waits")


def waited(method: Callable[Concatenate[W, P], T]) -> Callable[Concatenate[W, P], T]:
    """A store call that waits out an outage (Store.waited)."""

    def call(self: W, *args: P.args, **kwargs: P.kwargs) -> T:
        return self.waited(lambda: method(self, *args, **kwargs))

    return functools.update_wrapper(call, method)  # type: ignore[return-value]


class Waits:
    """The part of the Store that waits out outages: every store call through `waited`
    (the `@waited` methods), trial writes through `record_trials`. What it needs of the
    Store is declared here."""

    engine: Engine
    url: str
    secret_url: str
    waiter: Waiter
    _opening: bool

    @property
    def postgresql(self) -> bool:
        return self.secret_url.startswith("postgresql")

    @property
    def sqlite_path(self) -> Path | None:
        if not self.secret_url.startswith("sqlite:///"):
            return None
        return Path(self.secret_url.removeprefix("sqlite:///"))

    def _insert_trial(self, conn: Connection, run_id: int, trial: TrialRecord) -> int:
        raise NotImplementedError

    def _reason(self, exc: BaseException) -> str:
        """The driver's own first line, with no secret of the URL in it."""
        cause = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
        lines = str(cause).strip().splitlines()
        return redact(lines[0] if lines else repr(cause), self.secret_url)

    def _store_error(self, ctx: ExceptionContext) -> BaseException | None:
        """A server refusing or dropping us, a store locked past its busy timeout or on a
        full disk, is one line that names the store without its password (not a
        traceback quoting the driver), with what it means (outage.classify); constraint
        and programming errors stay what they are."""
        if ctx.is_pre_ping:
            return None
        kind = classify(ctx.sqlalchemy_exception or ctx.original_exception, self.sqlite_path)
        refused = isinstance(ctx.sqlalchemy_exception, OperationalError | InterfaceError)
        if kind is Kind.PERMANENT and not (self.postgresql and refused):
            return None
        what = "cannot open result store" if self._opening else "result store"
        return StoreError(f"{what} {self.url}: {self._reason(ctx.original_exception)}", kind)

    def waited(self, work: Callable[[], T]) -> T:
        """`work`, a store call, after the cells that wait are written; an outage waited
        out as the run's Waiter says (one line past its limit), a full disk StoreFull."""
        self._write_waiting(block=True)
        while True:
            try:
                result = work()
            except StoreError as exc:
                self._wait_after(exc)
                continue
            except DBAPIError as exc:
                self._refuse(exc)
                raise
            self.waiter.recovered()
            return result

    def _refuse(self, exc: DBAPIError) -> None:
        """An error no retry fixes (a missing table, a constraint): in a run, one line that
        ends it; outside one, the caller gets the error as it is (it may expect it)."""
        if self.waiter.in_run:
            raise StoreError(
                f"result store {self.url}: {self._reason(exc)}", Kind.PERMANENT
            ) from None

    def _wait_after(self, exc: StoreError) -> None:
        """After a failed try: wait before the next one, or raise what ends the trying."""
        if exc.kind is Kind.FULL:
            raise self._full(exc) from None
        if exc.kind is not Kind.TRANSIENT:
            raise exc
        self.waiter.sleep(self.waiter.failed(exc))

    def _full(self, exc: StoreError) -> StoreFull:
        reason = self._reason(exc).removeprefix(f"result store {self.url}: ")
        path = self.sqlite_path
        if path is None:
            return StoreFull(self.url, reason, None, None)
        needed = sqlite_room_needed(path, self.waiter.pending_bytes())
        return StoreFull(str(path), reason, needed, free_bytes(path))

    def _write_waiting(self, block: bool) -> None:
        """The cells that wait, in order, each in one transaction; `block`: until all are
        written (or raise), else while the backoff lets it try. A cell a try may have
        committed is read back first: none is written twice."""
        waiter = self.waiter
        while waiter.cells:
            if not block and not waiter.due():
                return
            cell = waiter.cells[0]
            try:
                with self.engine.begin() as conn:
                    if not (cell.tried and self._holds(conn, cell)):
                        cell.tried = True
                        for trial in cell.records:
                            self._insert_trial(conn, cell.run_id, trial)
            except StoreError as exc:
                if exc.kind is Kind.PERMANENT:
                    waiter.drop_first()  # no try will write it: the error says why
                    raise
                if block or exc.kind is Kind.FULL:
                    self._wait_after(exc)
                else:
                    waiter.failed(exc)
                    return
                continue
            except DBAPIError as exc:
                waiter.drop_first()
                self._refuse(exc)
                raise
            except FsbenchError:
                waiter.drop_first()
                raise
            waiter.drop_first()
            waiter.recovered()

    def record_trials(self, run_id: int, records: list[TrialRecord]) -> None:
        """The trials of one cell (its chain's steps) and their metrics in one
        transaction: all or nothing. Each trial's provenance is checked against the
        registry of its keys (trialfacts) first. In a run that waits out outages, a cell
        the store cannot take now waits, in order, and the run goes on measuring: it is
        written by a later call once the store is back (`waiting`: those not written
        yet)."""
        for trial in records:
            trialfacts.check(trial.provenance, f"{trial.config} · {trial.workload}")
            trial.uid = trial.uid or schema.new_uid()  # its identity across tries
        self.waiter.cells.append(Cell(run_id, records))
        try:
            self._write_waiting(block=not self.waiter.waits)
        except BaseException:
            if not self.waiter.in_run:  # the caller has the error, as ever
                self.waiter.cells.clear()
            raise
        finally:
            self.waiter.spooled()

    @property
    def waiting(self) -> int:
        """Cells measured that wait to be written."""
        return len(self.waiter.cells)

    def write_spooled(self) -> int:
        """The cells a run's spool file keeps (what it measured while the store could not
        take it, before it was stopped), written, each once; how many were."""
        spool = self.waiter.spool
        if spool is None:
            return 0
        found = [c for c in spool.read() if c.records]
        for cell in found:
            self.waiter.cells.append(cell)
        self.waited(lambda: None)
        return len(found)

    def _holds(self, conn: Connection, cell: Cell) -> bool:
        """Whether the store has the cell already (a try whose commit happened although
        the connection dropped before it said so): its slot's trials, read back. A slot
        that holds other trials is refused: it would be written twice."""
        first = cell.records[0]
        found = set(
            conn.execute(
                select(trials.c.uid).where(
                    trials.c.run_id == cell.run_id, trials.c.seq == first.seq
                )
            ).scalars()
        )
        if not found:
            return False
        if found == {t.uid for t in cell.records}:
            return True
        raise FsbenchError(
            f"run {cell.run_id} already holds other trials of slot {first.seq}: not written twice"
        )
