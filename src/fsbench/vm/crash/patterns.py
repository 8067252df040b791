"""The crash patterns: what an application does on the filesystem until the power is cut,
what it acknowledges as it goes, and what must hold once the machine is back.

Each pattern is a pair of functions on a directory of the filesystem under test:

    run(root, seed, ack, size)   runs until killed; calls ack({...}) once an operation is
                                 what the pattern promises (durable, or merely done)
    check(root, seed, acks)      after the crash: what was lost, empty or mixed

Every byte written is a function of the seed, so `check` knows each file's possible
contents without a copy, and a case replays from its seed. Stdlib only: this runs in the
guest (under TCG every import costs).

What the patterns promise (the application's view, not POSIX's letter):

    fsync-append          record i appended and fsync()ed: acknowledged records survive
    replace-rename        new version written to a temporary file, renamed over the old,
                          no fsync: each file holds some complete version, never empty or mixed
    replace-rename-fsync  the same with fsync(file) before and fsync(dir) after the rename:
                          the acknowledged version (or a later one) survives
    create-tree           a small tree untarred, then sync(), then more files created:
                          every file of the tree survives intact
    sqlite-commit         SQLite transactions in WAL mode (synchronous=FULL): every
                          acknowledged commit survives and the database is intact
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

Ack = Callable[[dict[str, Any]], None]
READY = "ready"  # the first acknowledgement: setup done, the power may go from now on
KEEP_DAMAGE = 100  # damaged items listed per crash; all are counted


@dataclass
class Damage:
    """One thing wrong after the crash."""

    kind: str  # lost | empty | mixed | missing | corrupt
    path: str
    detail: str = ""


@dataclass
class Verdict:
    acked: int = 0  # operations acknowledged as durable (what the pattern promises)
    lost: int = 0  # of those, not there after the crash
    empty: int = 0  # files empty after a rename
    mixed: int = 0  # files neither a complete old nor a complete new version
    damage: list[Damage] = field(default_factory=list)

    def add(self, kind: str, path: str, detail: str = "") -> None:
        if len(self.damage) < KEEP_DAMAGE:
            self.damage.append(Damage(kind, path, detail))
        if kind == "empty":
            self.empty += 1
        elif kind == "mixed":
            self.mixed += 1
        else:
            self.lost += 1

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- seeded contents -------------------------------------------------------------------


def content(seed: int, name: str, version: int, size: int) -> bytes:
    """Version `version` of file `name`: a header naming it and the body's digest, then
    `size` pseudo-random bytes. A torn or zero-filled write never parses as a version."""
    body = random.Random(f"{seed}:{name}:{version}").randbytes(size)
    digest = hashlib.sha256(body).hexdigest()[:16]
    return f"fsbench-crash {name} v{version} len {size} sha {digest}\n".encode() + body


def parse(data: bytes, name: str) -> int | None:
    """The version a file's bytes are, or None if they are not one complete version."""
    head, sep, body = data.partition(b"\n")
    parts = head.decode(errors="replace").split()
    if not sep or len(parts) != 7 or parts[:2] != ["fsbench-crash", name]:
        return None
    try:
        version, size = int(parts[2].removeprefix("v")), int(parts[4])
    except ValueError:
        return None
    if len(body) != size or hashlib.sha256(body).hexdigest()[:16] != parts[6]:
        return None
    return version


def _sizes(rng: random.Random, largest: int) -> int:
    """File sizes from 1 byte to `largest`, log-uniform (most small, some large)."""
    return max(1, int(2 ** rng.uniform(0, max(1.0, largest.bit_length() - 1))))


def _write_file(path: Path, data: bytes, fsync: bool) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


# -- fsync-append ----------------------------------------------------------------------

RECORD = 128  # bytes per log record


def _record(seed: int, i: int) -> bytes:
    # 10 digits of index + body + 16 of digest + newline: exactly RECORD bytes.
    body = random.Random(f"{seed}:rec:{i}").randbytes(RECORD // 2).hex()[: RECORD - 27]
    digest = hashlib.sha256(f"{i}:{body}".encode()).hexdigest()[:16]
    return f"{i:010d}{body}{digest}\n".encode()


def run_fsync_append(root: Path, seed: int, ack: Ack, size: int) -> None:
    fd = os.open(root / "log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.fsync(fd)
    _fsync_dir(root)
    ack({READY: True})
    i = 0
    while True:
        os.write(fd, _record(seed, i))
        os.fsync(fd)
        ack({"n": i})
        i += 1


def check_fsync_append(root: Path, seed: int, acks: list[dict[str, Any]]) -> Verdict:
    acked = max((a["n"] for a in acks if "n" in a), default=-1) + 1
    out = Verdict(acked=acked)
    data = _read(root / "log")
    if data is None:
        if acked:
            out.add("missing", "log", f"{acked} acknowledged records")
            out.lost = acked  # every acknowledged record went with the file
        return out
    for i in range(acked):
        if data[i * RECORD : (i + 1) * RECORD] != _record(seed, i):
            have = len(data) // RECORD
            out.add("lost", "log", f"record {i} of {acked} acknowledged ({have} in the file)")
    return out


# -- replace-rename (with and without fsync) -------------------------------------------


def _names(size: int) -> list[str]:
    return [f"f{i:03d}" for i in range(max(1, size))]


LARGEST_VERSION = 64 << 10  # bytes: delayed allocation has something to delay


def _replace_loop(root: Path, seed: int, ack: Ack, size: int, fsync: bool) -> None:
    names = _names(size)
    rng = random.Random(f"{seed}:replace")
    for name in names:  # version 0 of every file, durable before the power may go
        _write_file(root / name, content(seed, name, 0, _sizes(rng, LARGEST_VERSION)), True)
    _fsync_dir(root)
    os.sync()
    ack({READY: True})
    version = dict.fromkeys(names, 0)
    while True:
        name = rng.choice(names)
        version[name] += 1
        tmp = root / f".{name}.tmp"
        data = content(seed, name, version[name], _sizes(rng, LARGEST_VERSION))
        _write_file(tmp, data, fsync)
        os.rename(tmp, root / name)
        if fsync:
            _fsync_dir(root)
        ack({"f": name, "v": version[name]})


def run_replace_rename(root: Path, seed: int, ack: Ack, size: int) -> None:
    _replace_loop(root, seed, ack, size, fsync=False)


def run_replace_rename_fsync(root: Path, seed: int, ack: Ack, size: int) -> None:
    _replace_loop(root, seed, ack, size, fsync=True)


def _check_replace(
    root: Path, seed: int, acks: list[dict[str, Any]], size: int, durable: bool
) -> Verdict:
    last: dict[str, int] = {}
    for a in acks:
        if "f" in a:
            last[a["f"]] = a["v"]
    # Without fsync nothing is promised durable but the files' existence (version 0 was
    # synced): each of them counts once. With fsync, every acknowledged replace counts.
    out = Verdict(acked=sum(1 for a in acks if "f" in a) if durable else len(_names(size)))
    for name in _names(size):
        data = _read(root / name)
        if data is None:
            out.add("missing", name, "the file is gone")
            continue
        if not data:
            out.add("empty", name, f"0 bytes (last renamed version {last.get(name, 0)})")
            continue
        got = parse(data, name)
        if got is None:
            out.add("mixed", name, f"{len(data)} bytes that are no complete version")
        elif durable and got < last.get(name, 0):
            out.add("lost", name, f"version {got}, acknowledged {last[name]}")
    return out


def check_replace_rename(root: Path, seed: int, acks: list[dict[str, Any]], size: int) -> Verdict:
    return _check_replace(root, seed, acks, size, durable=False)


def check_replace_rename_fsync(
    root: Path, seed: int, acks: list[dict[str, Any]], size: int
) -> Verdict:
    return _check_replace(root, seed, acks, size, durable=True)


# -- create-tree -----------------------------------------------------------------------


def tree_manifest(seed: int, size: int) -> dict[str, int]:
    """The small tree's files and sizes: `size` files in directories two levels deep."""
    rng = random.Random(f"{seed}:tree")
    out = {}
    for i in range(max(1, size)):
        path = f"d{rng.randrange(8)}/e{rng.randrange(4)}/t{i:04d}"
        out[path] = _sizes(rng, 32 << 10)
    return out


def _tarball(seed: int, manifest: dict[str, int]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, length in manifest.items():
            data = content(seed, Path(path).name, 0, length)
            info = tarfile.TarInfo(f"tree/{path}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def run_create_tree(root: Path, seed: int, ack: Ack, size: int) -> None:
    manifest = tree_manifest(seed, size)
    # Made before the power may go, outside the filesystem under test: only the untar
    # (GNU tar, as people untar) counts.
    with tempfile.NamedTemporaryFile(suffix=".tar") as blob:
        blob.write(_tarball(seed, manifest))
        blob.flush()
        ack({READY: True})
        subprocess.run(["tar", "-xf", blob.name, "-C", str(root)], check=True)
    os.sync()
    ack({"synced": len(manifest)})
    more = root / "more"
    more.mkdir()
    rng = random.Random(f"{seed}:more")
    i = 0
    while True:  # keeps the journal busy when the power goes; nothing promised
        name = f"m{i:06d}"
        _write_file(more / name, content(seed, name, 0, _sizes(rng, 32 << 10)), False)
        ack({"created": i})
        i += 1


def check_create_tree(root: Path, seed: int, acks: list[dict[str, Any]], size: int) -> Verdict:
    synced = any("synced" in a for a in acks)
    manifest = tree_manifest(seed, size)
    out = Verdict(acked=len(manifest) if synced else 0)
    if not synced:
        return out
    for path in manifest:
        name = Path(path).name
        data = _read(root / "tree" / path)
        if data is None:
            out.add("missing", f"tree/{path}", "synced, gone")
        elif not data:
            out.add("empty", f"tree/{path}", "synced, 0 bytes")
        elif parse(data, name) != 0:
            out.add("mixed", f"tree/{path}", f"synced, {len(data)} bytes not its content")
    return out


# -- sqlite-commit ---------------------------------------------------------------------


def _row(seed: int, i: int) -> bytes:
    rng = random.Random(f"{seed}:row:{i}")
    return rng.randbytes(rng.randrange(16, 4096))


def run_sqlite_commit(root: Path, seed: int, ack: Ack, size: int) -> None:
    import sqlite3

    db = sqlite3.connect(root / "db.sqlite", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")  # WAL: the log is synced at every commit
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, payload BLOB NOT NULL)")
    os.sync()
    ack({READY: True})
    i = 0
    while True:
        db.execute("BEGIN")
        db.execute("INSERT INTO t VALUES (?, ?)", (i, _row(seed, i)))
        db.execute("COMMIT")
        ack({"n": i})
        i += 1


def check_sqlite_commit(root: Path, seed: int, acks: list[dict[str, Any]], size: int) -> Verdict:
    import sqlite3

    acked = max((a["n"] for a in acks if "n" in a), default=-1) + 1
    out = Verdict(acked=acked)
    path = root / "db.sqlite"
    if not path.exists():
        if acked:
            out.add("missing", "db.sqlite", f"{acked} acknowledged commits")
        return out
    try:
        db = sqlite3.connect(path)  # opening replays the WAL, as the application would
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
        rows = dict(db.execute("SELECT id, payload FROM t WHERE id < ?", (acked,)).fetchall())
        db.close()
    except sqlite3.DatabaseError as exc:
        out.add("corrupt", "db.sqlite", f"{exc} ({acked} acknowledged commits)")
        out.lost = max(out.lost, acked)
        return out
    if integrity != "ok":
        out.add("corrupt", "db.sqlite", f"integrity_check: {integrity}")
    for i in range(acked):
        if rows.get(i) != _row(seed, i):
            out.add("lost", "db.sqlite", f"commit {i} of {acked} acknowledged")
    return out


# -- the catalogue ---------------------------------------------------------------------


@dataclass(frozen=True)
class Pattern:
    name: str
    run: Callable[[Path, int, Ack, int], None]
    check: Callable[[Path, int, list[dict[str, Any]], int], Verdict]
    promise: str  # one line: what must hold after the crash
    # Its acknowledgements promise durability (a crash state from before an operation's
    # flush need not hold it); False: they only say what was written (replace-rename).
    durable: bool = True


PATTERNS: dict[str, Pattern] = {
    p.name: p
    for p in (
        Pattern(
            "fsync-append",
            run_fsync_append,
            lambda root, seed, acks, size: check_fsync_append(root, seed, acks),
            "every acknowledged (fsync()ed) record is there",
        ),
        Pattern(
            "replace-rename",
            run_replace_rename,
            check_replace_rename,
            "each file holds a complete old or new version, never empty or mixed",
            durable=False,
        ),
        Pattern(
            "replace-rename-fsync",
            run_replace_rename_fsync,
            check_replace_rename_fsync,
            "each file holds its acknowledged version or a later one",
        ),
        Pattern(
            "create-tree",
            run_create_tree,
            check_create_tree,
            "every file untarred before sync() is intact",
        ),
        Pattern(
            "sqlite-commit",
            run_sqlite_commit,
            check_sqlite_commit,
            "every acknowledged commit is in the database, which is intact",
        ),
    )
}


def read_acks(text: str) -> list[dict[str, Any]]:
    """The acknowledgement log as the host received it: one JSON object per line; a line
    cut by the power is not an acknowledgement."""
    out = []
    for line in text.split("\n")[:-1]:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out
