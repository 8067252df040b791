"""The store's schema and its history: tables (SQLAlchemy Core) and the migrations that
bring a store written by any earlier fsbench forward, in place.

Every version since the first only added things, so a migration is a list of columns to
add (with the value old rows get) and tables to create. The store's version lives in the
`meta` table; a store from before that table existed is read by its columns. Reports of a
migrated store are the same as before: old trials simply have the defaults (no warm-up,
position 0: unknown, resolution 0: none declared).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    bindparam,
    inspect,
    select,
    text,
    update,
)

from fsbench.store.runfacts import features_snapshot, workload_facts
from fsbench.store.summaries import target_summary, vm_notes, vm_summary
from fsbench.system.hostkeys import Host

SCHEMA_VERSION = 12

metadata = MetaData()

meta = Table(
    "meta",
    metadata,
    Column("key", String(40), primary_key=True),
    Column("value", Text, nullable=False),
)

runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    # The run's identity in every store (ids are per store): merging stores, and the many
    # hosts of one run writing one store, never mix two runs up.
    Column("uid", String(32), nullable=False, server_default=""),
    Column("schema_version", Integer, nullable=False),  # of the fsbench that created it
    Column("name", String(200), nullable=False),
    # The command that made it: run (a comparison), calibration (an A/A run of `fsbench
    # calibrate`: the same config twice), tune (a race of `fsbench tune`), or the run on
    # many machines whose parts hold its trials. Reports read every kind's trials alike.
    Column("kind", String(20), nullable=False, server_default="run"),
    # running | finished | interrupted (Ctrl-C, SIGTERM: --resume finishes it) | failed
    # | incomplete (not interrupted, but some of it could not run: a host that failed).
    Column("status", String(20), nullable=False),
    Column("created_at", String(40), nullable=False),
    Column("finished_at", String(40)),
    Column("fsbench_version", String(40), nullable=False),
    Column("argv", Text, nullable=False),  # JSON list
    Column("plan", Text, nullable=False),  # JSON: the validated plan (with its order seed)
    Column("overrides", Text, nullable=False),  # JSON: --set values
    # JSON: the planned slots in order, [[rep, cell_key], ...] (rep 0: warm-up).
    Column("schedule", Text, nullable=False),
    Column("host", Text, nullable=False),  # JSON provenance: kernel, CPU, memory, tools
    Column("target", Text, nullable=False),  # JSON: device, model, rotational, direct I/O
    # JSON, --reps auto: per cell key, reps made and whether its CI reached the target.
    Column("convergence", Text, nullable=False, default="{}"),
    # JSON, schema 8 only: a grid's design planned from its budget; since schema 9 in
    # `facts` (the column stays, never written: a store only ever gains columns).
    Column("design", Text, nullable=False, server_default="{}"),
    # JSON: the facts of the run's kind (store/runkinds.py: each kind its typed model): a
    # grid's design planned from its budget, a race's settings, a bisection's tree and ends.
    Column("facts", Text, nullable=False, server_default="{}"),
    # JSON: what the reports need to know of each workload, as this fsbench defined it
    # ({name: {summary, headline, params}}), so that a later fsbench reports it the same.
    Column("workloads", Text, nullable=False, server_default="{}"),
    # JSON: the `fsbench features` table of the run's filesystems measured on its kernel
    # when the run started ({} when none was measured).
    Column("features", Text, nullable=False, server_default="{}"),
    # A run made of parts, one per host (each its own run with its own repetition loop):
    # a part names the uid of the run it is part of, its host's name and groups (JSON
    # list); "" for a run that is not a part.
    Column("part_of", String(32), nullable=False, server_default=""),
    Column("part_host", String(200), nullable=False, server_default=""),
    Column("part_groups", Text, nullable=False, server_default="[]"),
    # The series the run belongs to (`fsbench run --tag NAME`; `fsbench history --tag`
    # selects them): "" for none.
    Column("tag", String(80), nullable=False, server_default=""),
)
runs_uid = Index("runs_uid", runs.c.uid, unique=True)
runs_part = Index("runs_part", runs.c.part_of, runs.c.part_host)

trials = Table(
    "trials",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    # The trial's identity in every store: many hosts write one store at once, and a
    # merge recognises a trial it already has.
    Column("uid", String(32), nullable=False, server_default=""),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("seq", Integer, nullable=False),  # slot in the run's schedule
    Column("step", Integer, nullable=False),  # position in the cell's chain (0 if none)
    Column("chain", String(300), nullable=False),  # "untar+tree-read+fsck", or ""
    Column("rep", Integer, nullable=False),  # 0: the warm-up repetition, stored, not counted
    # Place in its round (1 = first; 0 = not recorded) and the cell key of the trial that
    # ran just before it ("" = the first of its process or guest): the order-effect check.
    Column("position", Integer, nullable=False, server_default="0"),
    Column("previous_cell", Text, nullable=False, server_default=""),
    Column("cell_key", Text, nullable=False),
    Column("config", String(300), nullable=False),  # display label
    Column("fs", String(40), nullable=False),
    Column("mkfs_options", Text, nullable=False),  # JSON list, as asked
    Column("mount_options", Text, nullable=False),  # as asked
    Column("workload", String(80), nullable=False),
    Column("params", Text, nullable=False),  # JSON object
    Column("knobs", Text, nullable=False),  # JSON object: sysctls, scheduler, contention
    Column("status", String(20), nullable=False),  # ok | unsupported | failed
    Column("message", Text, nullable=False),
    Column("detail", Text, nullable=False),
    Column("started_at", String(40), nullable=False),
    Column("finished_at", String(40), nullable=False),
    Column("provenance", Text, nullable=False),  # JSON: mkfs argv, effective options, geometry
    UniqueConstraint("run_id", "seq", "step", name="one_trial_per_slot"),
)
trials_uid = Index("trials_uid", trials.c.uid, unique=True)

samples = Table(
    "samples",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("trial_id", Integer, ForeignKey("trials.id", ondelete="CASCADE"), nullable=False),
    Column("t", Float, nullable=False),  # seconds since the timed phase started
    Column("read_bps", Float, nullable=False),
    Column("write_bps", Float, nullable=False),
    Column("util_pct", Float, nullable=False),
    Column("cpu_user_pct", Float, nullable=False),
    Column("cpu_sys_pct", Float, nullable=False),
    Column("cpu_iowait_pct", Float, nullable=False),
    Column("dirty_bytes", Float, nullable=False),
    Column("writeback_bytes", Float, nullable=False),
)

SAMPLE_FIELDS = (
    "t",
    "read_bps",
    "write_bps",
    "util_pct",
    "cpu_user_pct",
    "cpu_sys_pct",
    "cpu_iowait_pct",
    "dirty_bytes",
    "writeback_bytes",
)

metrics = Table(
    "metrics",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("trial_id", Integer, ForeignKey("trials.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(80), nullable=False),
    Column("value", Float, nullable=False),
    Column("unit", String(20), nullable=False),
    Column("better", String(10), nullable=False),  # higher | lower
    # The smallest step the tool reports this metric in (1 for a count, 0.1 for "3.9%");
    # 0: finer than anything that matters. Differences below it are no difference.
    Column("resolution", Float, nullable=False, server_default="0"),
)

# The maps a tracer measured in an instrumented trial (an explain run's): folded kernel
# stacks (off-CPU time, CPU samples, lock waits) and histograms (request sizes, queue
# depths), one row per map, as "key<TAB>value" lines, zlib-compressed when large
# (store/folded.py). Reports read them from here, never from the trial's artefact files.
folded = Table(
    "folded",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("trial_id", Integer, ForeignKey("trials.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(80), nullable=False),  # offcpu, profile, locks, dev.write_size...
    Column("unit", String(20), nullable=False),  # of the values: s, samples, requests
    Column("encoding", String(10), nullable=False),  # text | zlib
    Column("data", LargeBinary, nullable=False),
)
folded_trial = Index("folded_trial", folded.c.trial_id)


@dataclass(frozen=True)
class Added:
    """A column a version added, and the SQL value rows written before it get."""

    table: str
    column: str
    ddl_type: str
    default: str


@dataclass(frozen=True)
class Renamed:
    """A column a version renamed (ALTER TABLE ... RENAME COLUMN: SQLite 3.25+, PostgreSQL);
    its indexes follow it."""

    table: str
    old: str
    new: str


# What each version added to (or renamed in) the one before. Tables (samples in 4, meta in
# 6, folded in 12) are created by create_all; columns need ALTER TABLE.
MIGRATIONS: dict[int, tuple[Added | Renamed, ...]] = {
    2: (
        Added("trials", "step", "INTEGER", "0"),
        Added("trials", "chain", "VARCHAR(300)", "''"),
    ),
    3: (Added("trials", "knobs", "TEXT", "'{}'"),),
    4: (),
    5: (Added("runs", "convergence", "TEXT", "'{}'"),),
    6: (
        Added("runs", "uid", "VARCHAR(32)", "''"),
        Added("runs", "fleet_uid", "VARCHAR(32)", "''"),
        Added("runs", "fleet_host", "VARCHAR(200)", "''"),
        Added("runs", "fleet_groups", "TEXT", "'[]'"),
        Added("runs", "kind", "VARCHAR(20)", "'run'"),
        Added("runs", "workloads", "TEXT", "'{}'"),
        Added("runs", "features", "TEXT", "'{}'"),
        Added("trials", "uid", "VARCHAR(32)", "''"),
        Added("trials", "position", "INTEGER", "0"),
        Added("trials", "previous_cell", "TEXT", "''"),
        Added("metrics", "resolution", "FLOAT", "0"),
    ),
    # The parts of a run on many hosts are named by what they are, not by the one executor
    # that makes them (version 6 named them after it).
    7: (
        Renamed("runs", "fleet_uid", "part_of"),
        Renamed("runs", "fleet_host", "part_host"),
        Renamed("runs", "fleet_groups", "part_groups"),
    ),
    8: (Added("runs", "design", "TEXT", "'{}'"),),
    9: (Added("runs", "facts", "TEXT", "'{}'"),),
    10: (Added("runs", "tag", "VARCHAR(80)", "''"),),
    # A race's budget is its plan's, its space one model of its facts: data only (_fill_11).
    11: (),
    # The tracers' maps of instrumented trials: a table of its own (`folded`).
    12: (),
}

# Columns that tell an unversioned store's age: the newest version whose additions are all
# present is the store's version.
_FIRST = 1


def stored_version(conn: Connection) -> int | None:
    """The store's schema version; None for an empty database (nothing to migrate)."""
    found = inspect(conn)
    tables = set(found.get_table_names())
    if "meta" in tables:
        row = conn.execute(select(meta.c.value).where(meta.c.key == "schema_version")).first()
        if row is not None:
            return int(row[0])
    if "runs" not in tables:
        return None
    # Before the meta table (versions 1-5): the newest version whose columns are all there.
    columns = {t: {c["name"] for c in found.get_columns(t)} for t in tables}
    version = _FIRST
    for v in sorted(MIGRATIONS):
        wanted = MIGRATIONS[v]
        if v == 4 and "samples" not in tables:
            break
        if all(a.column in columns.get(a.table, set()) for a in wanted if isinstance(a, Added)):
            version = v
        else:
            break
    return version


def migrate(conn: Connection, version: int) -> list[str]:
    """Bring a store at `version` to SCHEMA_VERSION inside the caller's transaction;
    returns what was done, one line per step. Idempotent per column."""
    done: list[str] = []
    found = inspect(conn)
    for v in range(version + 1, SCHEMA_VERSION + 1):
        for step in MIGRATIONS.get(v, ()):
            have = {c["name"] for c in found.get_columns(step.table)}
            if isinstance(step, Renamed):
                if step.old not in have or step.new in have:
                    continue
                rename_column(conn, step)
                done.append(f"schema {v}: {step.table}.{step.old} -> {step.new}")
                continue
            if step.column in have:
                continue
            add_column(conn, step)
            done.append(f"schema {v}: {step.table}.{step.column}")
        found = inspect(conn)  # the inspector caches what it saw
        fill = DATA_MIGRATIONS.get(v)
        if fill is not None:
            done += fill(conn)
    return done


def add_column(conn: Connection, add: Added) -> None:
    """One ALTER TABLE, the same in SQLite and PostgreSQL (standard types and literals)."""
    quote = conn.dialect.identifier_preparer.quote
    conn.execute(
        text(
            f"ALTER TABLE {quote(add.table)} ADD COLUMN "
            f"{quote(add.column)} {add.ddl_type} NOT NULL DEFAULT {add.default}"
        )
    )


def rename_column(conn: Connection, step: Renamed) -> None:
    quote = conn.dialect.identifier_preparer.quote
    conn.execute(
        text(
            f"ALTER TABLE {quote(step.table)} RENAME COLUMN {quote(step.old)} TO {quote(step.new)}"
        )
    )


def _fill_run_facts(conn: Connection) -> list[str]:
    """Schema 6: runs keep what their reports need. Older runs get it from this fsbench
    (what their reports asked the live code for until then): the workloads' facts, and
    the feature table saved for their kernel."""
    done = []
    rows = conn.execute(select(runs.c.id, runs.c.host, runs.c.workloads, runs.c.target)).all()
    for run_id, host, stored, target in rows:
        described = json.loads(target or "{}")
        if "summary" not in described:
            described["summary"] = _legacy_summary(described)
            if described.get("kind") == "vm":
                described["notes"] = vm_notes(described)
            conn.execute(
                update(runs).where(runs.c.id == run_id).values(target=json.dumps(described))
            )
        if stored not in (None, "", "{}"):
            continue
        names = [
            r[0]
            for r in conn.execute(
                select(trials.c.workload).where(trials.c.run_id == run_id).distinct()
            )
        ]
        fs_types = [
            r[0]
            for r in conn.execute(select(trials.c.fs).where(trials.c.run_id == run_id).distinct())
        ]
        kernel = Host.read(json.loads(host or "{}")).kernel or ""
        conn.execute(
            update(runs)
            .where(runs.c.id == run_id)
            .values(
                workloads=json.dumps(workload_facts(names)),
                features=json.dumps(features_snapshot(kernel, fs_types)),
            )
        )
        done.append(f"schema 6: run {run_id} keeps its workloads' facts")
    return done


def _legacy_summary(target: dict[str, Any]) -> str:
    """The one-line target of a run stored before targets described themselves, as the
    reports of that version printed it."""
    if target.get("kind") == "vm":
        return vm_summary(target)
    if target.get("kind") in ("loop", "device"):
        return target_summary(target)
    return str(target.get("kind") or "unknown target")


def _fill_uids(conn: Connection) -> list[str]:
    """Schema 6: every run and trial gets its uid (before their unique indexes exist),
    derived from what the row is (`legacy_run_uid`, `legacy_trial_uid`)."""
    done = []
    old = conn.execute(
        select(
            runs.c.id,
            runs.c.name,
            runs.c.created_at,
            runs.c.fsbench_version,
            runs.c.argv,
            runs.c.plan,
            runs.c.host,
        ).where(runs.c.uid == "")
    ).all()
    if old:
        conn.execute(
            update(runs).where(runs.c.id == bindparam("run_id")).values(uid=bindparam("new")),
            [{"run_id": r.id, "new": legacy_run_uid(*r[1:])} for r in old],
        )
        done.append(f"schema 6: {len(old)} runs get their uid")
    trial_rows = conn.execute(
        select(trials.c.id, runs.c.uid, trials.c.seq, trials.c.step)
        .join(runs, trials.c.run_id == runs.c.id)
        .where(trials.c.uid == "")
    ).all()
    if trial_rows:
        conn.execute(
            update(trials).where(trials.c.id == bindparam("trial_id")).values(uid=bindparam("new")),
            [{"trial_id": t[0], "new": legacy_trial_uid(*t[1:])} for t in trial_rows],
        )
        done.append(f"schema 6: {len(trial_rows)} trials get their uid")
    return done


def _fill_6(conn: Connection) -> list[str]:
    done = _fill_uids(conn) + _fill_run_facts(conn)
    for index in [runs_uid, trials_uid]:
        index.create(conn, checkfirst=True)
    return done


def _fill_7(conn: Connection) -> list[str]:
    """Schema 7: the index on a part's run and host under its own name (version 6's, on the
    columns now renamed, followed them: it is dropped rather than kept twice)."""
    wanted = list(runs_part.columns.keys())
    for found in inspect(conn).get_indexes("runs"):
        if found["column_names"] == wanted and found["name"] != runs_part.name:
            conn.execute(
                text(f"DROP INDEX {conn.dialect.identifier_preparer.quote(found['name'] or '')}")
            )
    runs_part.create(conn, checkfirst=True)
    return []


def _fill_9(conn: Connection) -> list[str]:
    """Schema 9: a run's kind keeps its facts in a column of its own. A grid's design was
    in `design` (schema 8), a race's settings in its convergence record (`race`), a
    bisection's tree and endpoints in its target (`bisect`): they move, and nothing else of
    those records changes."""
    done = []
    columns = (runs.c.id, runs.c.kind, runs.c.convergence, runs.c.target, runs.c.design)
    for run_id, kind, convergence, target, design in conn.execute(select(*columns)).all():
        moved: dict[str, Any] = {}
        values: dict[str, Any] = {}
        if json.loads(design or "{}"):
            moved = {"design": json.loads(design)}
        elif kind == "tune":
            record = json.loads(convergence or "{}")
            moved = record.pop("race", None) or {}
            values = {"convergence": json.dumps(record)}
        elif kind == "bisect":
            described = json.loads(target or "{}")
            moved = described.pop("bisect", None) or {}
            values = {"target": json.dumps(described)}
        if moved:
            values["facts"] = json.dumps(moved)
            conn.execute(update(runs).where(runs.c.id == run_id).values(**values))
            done.append(f"schema 9: run {run_id} ({kind}) keeps its facts in runs.facts")
    return done


def _fill_11(conn: Connection) -> list[str]:
    """Schema 11: a race keeps its budget in its plan (`budget`, the whole tune's) and its
    space as one model of its facts (`space`: execute/race/trials.py, RaceSpace). A race
    stored before kept its share of the budget and the duplicates of its space among its
    settings: the share becomes its plan's budget (a space of one race, so the share is the
    same), the duplicates its space's; nothing else changes."""
    done = []
    columns = (runs.c.id, runs.c.kind, runs.c.plan, runs.c.facts)
    for run_id, kind, plan, facts in conn.execute(select(*columns)).all():
        record = json.loads(facts or "{}")
        if kind != "tune" or not record or "space" in record:
            continue
        budget = record.pop("budget", None)
        record["space"] = {"duplicates": int(record.pop("duplicates", 0) or 0)}
        values = {"facts": json.dumps(record)}
        if budget:
            values["plan"] = json.dumps({**json.loads(plan or "{}"), "budget": budget})
        conn.execute(update(runs).where(runs.c.id == run_id).values(**values))
        done.append(f"schema 11: run {run_id} (tune) keeps its budget in its plan")
    return done


def new_uid() -> str:
    """The uid of a new run or trial: random (UUID4), so that many hosts writing one store,
    or stores merged later, never give two rows one identity."""
    return uuid.uuid4().hex


# Rows stored before uids existed get a name-based one (UUID5) derived from what they are,
# the same wherever and however often an old store is migrated: a copy of a store migrated
# for a merge names its runs as the store itself does once migrated, and merging either
# twice adds nothing.
_LEGACY = uuid.UUID("5f0d7c1e-3b1a-4c55-9a51-0f5b3e4e2a61")


def legacy_run_uid(
    name: str, created_at: str, fsbench_version: str, argv: str, plan: str, host: str
) -> str:
    key = json.dumps([name, created_at, fsbench_version, argv, plan, host])
    return uuid.uuid5(_LEGACY, key).hex


def legacy_trial_uid(run_uid: str, seq: int, step: int) -> str:
    return uuid.uuid5(_LEGACY, f"{run_uid}/{seq}/{step}").hex


# Data a version's reports need that older rows lack, filled after its columns exist.
DATA_MIGRATIONS: dict[int, Callable[[Connection], list[str]]] = {
    6: _fill_6,
    7: _fill_7,
    9: _fill_9,
    11: _fill_11,
}


def write_version(conn: Connection) -> None:
    conn.execute(meta.delete().where(meta.c.key == "schema_version"))
    conn.execute(meta.insert().values(key="schema_version", value=str(SCHEMA_VERSION)))
