"""The tracers' maps of a trial in the store (schema.folded): written with the trial, in
its transaction; read back by the trials' ids.

A map is kept as "key<TAB>value" lines, one per key (a folded stack `root;...;leaf`, or a
histogram's bucket), zlib-compressed once it is larger than COMPRESS_FROM bytes: an
off-CPU map of a few thousand stacks is a few hundred KiB of text, a tenth of it packed.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, insert, select

from fsbench.store.records import FoldedRecord
from fsbench.store.schema import folded

COMPRESS_FROM = 4096
TEXT, ZLIB = "text", "zlib"


def encode(values: dict[str, float]) -> tuple[str, bytes]:
    """A map as its stored (encoding, data)."""
    text = "".join(f"{key.replace(chr(9), ' ')}\t{value!r}\n" for key, value in values.items())
    data = text.encode()
    if len(data) > COMPRESS_FROM:
        return ZLIB, zlib.compress(data, 6)
    return TEXT, data


def decode(encoding: str, data: bytes) -> dict[str, float]:
    text = (zlib.decompress(data) if encoding == ZLIB else bytes(data)).decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        key, _, value = line.rpartition("\t")
        if value:
            out[key] = out.get(key, 0.0) + float(value)
    return out


def insert_rows(conn: Connection, trial_id: int, maps: Sequence[FoldedRecord]) -> None:
    """A trial's maps, in the caller's transaction."""
    rows: list[dict[str, Any]] = []
    for m in maps:
        encoding, data = encode(m.values)
        rows.append(
            {
                "trial_id": trial_id,
                "name": m.name,
                "unit": m.unit,
                "encoding": encoding,
                "data": data,
            }
        )
    if rows:
        conn.execute(insert(folded), rows)


def read(conn: Connection, trial_ids: Sequence[int]) -> dict[int, list[FoldedRecord]]:
    """The maps of these trials, by trial id (a trial without maps has none)."""
    out: dict[int, list[FoldedRecord]] = {}
    ids = sorted(set(trial_ids))
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        rows = conn.execute(
            select(folded).where(folded.c.trial_id.in_(chunk)).order_by(folded.c.id)
        ).mappings()
        for r in rows:
            out.setdefault(r["trial_id"], []).append(
                FoldedRecord(r["name"], r["unit"], decode(r["encoding"], r["data"]))
            )
    return out
