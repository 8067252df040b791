"""`fsbench merge SRC... --db DEST`: runs from other stores into this one."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console

from fsbench.cli.common import DbOption, JsonOption
from fsbench.merge import MergeResult, merge_store
from fsbench.store import Store


def merge(
    sources: Annotated[
        list[str], typer.Argument(metavar="SRC...", help="Stores to bring in: paths or URLs.")
    ],
    db: DbOption = None,
    json_out: JsonOption = False,
) -> None:
    """Bring every run of SRC (with its trials, metrics, samples and provenance) into --db.
    Idempotent: a run already there (by its uid) only gets the trials it lacks."""
    dest = Store(db)
    total = MergeResult()
    out: list[dict[str, object]] = []
    for text in sources:
        src = Store(text)
        try:
            got = merge_store(src, dest)
        finally:
            src.close()
        total.runs_added += got.runs_added
        total.runs_updated += got.runs_updated
        total.trials_added += got.trials_added
        out.append({"source": src.url, **got.as_dict()})
        if not json_out:
            Console(stderr=True).print(
                f"{src.url}: {len(got.runs_added)} runs added, {len(got.runs_updated)} "
                f"updated, {got.trials_added} trials added",
                highlight=False,
                markup=False,
            )
    if json_out:
        typer.echo(json.dumps({"dest": dest.url, "sources": out, **total.as_dict()}, indent=2))
