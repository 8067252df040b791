"""`fsbench merge SRC... --db DEST`: runs from other stores into this one."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from fsbench.cli.common import DbOption, JsonOption
from fsbench.store.merge import MergeResult, merge_store, source
from fsbench.store.results import Store


def merge(
    sources: Annotated[
        list[str],
        typer.Argument(metavar="SRC...", help="Stores to bring in: file paths or URLs."),
    ],
    db: DbOption = None,
    json_out: JsonOption = False,
) -> None:
    """Bring every run of each SRC (its trials, metrics, samples and provenance) into
    --db. Idempotent: a run already there (by its uid) only gets the trials it lacks. A
    source is never written (an older SQLite store is migrated in a temporary copy)."""
    dest = Store(db)
    total = MergeResult()
    out: list[dict[str, object]] = []
    try:
        for given in sources:
            with source(given) as src:
                got = merge_store(src, dest)
                shown = str(src) if src.sqlite_path is None else given
                notes = src.migrated[:1]
            total.add(got)
            out.append({"source": shown, **got.as_dict(), "notes": notes})
            if not json_out:
                line = (
                    f"{shown}: {len(got.runs_added)} runs added, {len(got.runs_updated)} "
                    f"updated, {got.trials_added} trials added"
                )
                if got.trials_conflicting:
                    line += f", {got.trials_conflicting} trials kept as {dest} had them"
                typer.echo(line + "".join(f" ({n}, in a copy)" for n in notes))
    finally:
        dest.close()
    if json_out:
        typer.echo(json.dumps({"dest": dest.url, "sources": out, **total.as_dict()}, indent=2))
    else:
        typer.echo(
            f"into {dest}: {len(total.runs_added)} runs added, {len(total.runs_updated)} "
            f"updated, {total.trials_added} trials added"
        )


# Where `fsbench --help` lists it (app.py registers every command module by its rank).
RANK = 80


def register(app: typer.Typer) -> None:
    app.command("merge")(merge)
