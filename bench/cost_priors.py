"""The cost priors shipped with a preset: what a counted trial of each of its cells costs,
measured from stored runs of the preset, so that a decided run on a store with no trials
of its cells plans its budget without a projection pass (analysis/costs.py; a store's own
trials of a cell on this host win over its prior).

Reads the runs of the preset in a store (every finished one, or those given with --run),
takes each cell's counted slots as they cost their run (store.records.slot_seconds: from
the end of the slot before to its own end, mkfs and unmount included), and writes
src/fsbench/plan/presets/<preset>.costs.json whole: per cell key its seconds, trial by
trial, and whether its headline metrics are all exact counts; where they came from
(store, runs, their dates and host, this machine, the fsbench commit) beside them.

    .venv/bin/python bench/cost_priors.py --store ~/.local/share/fsbench/results.db \
        [--store DB ...] [--preset quick] [--run ID ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_file import fsbench_state, machine, now  # noqa: E402

from fsbench.analysis import costs  # noqa: E402
from fsbench.plan import model as planning  # noqa: E402
from fsbench.plan.presets import load_preset  # noqa: E402
from fsbench.store.results import Store  # noqa: E402

PRESETS = Path(__file__).resolve().parent.parent / "src" / "fsbench" / "plan" / "presets"


def priors(stores: list[Store], preset: str, run_ids: list[int]) -> dict[str, Any]:
    """The priors file of `preset` from each store's runs `run_ids` (all its finished runs
    of the preset when empty): a cell's trials pooled over them all."""
    keys = {c.key for c in planning.expand(load_preset(preset))}
    runs = [
        (store, r)
        for store in stores
        for r in store.list_runs()
        if (r.id in run_ids if run_ids else r.name == preset and r.status == "finished")
        and not r.part_of
        and not (r.plan or {}).get("instrumented")
    ]
    cells: dict[str, dict[str, Any]] = {}
    for store, run in runs:
        for key, found in costs.cell_history(store.get_trials(run.id), keys).items():
            cell = cells.setdefault(key, {"seconds": [], "counts_only": found.counts_only})
            cell["seconds"] += [round(s, 3) for s in found.seconds]
    missing = sorted(keys - set(cells))
    if missing:
        raise SystemExit(f"no counted trials of {len(missing)} cells, e.g. {missing[0]}")
    return {
        "preset": preset,
        "origin": {
            "written": now(),
            "argv": ["bench/cost_priors.py", *sys.argv[1:]],
            "runs": [
                {"id": r.id, "created_at": r.created_at, "host": r.host.hostname} for _, r in runs
            ],
            "machine": machine(),
            "fsbench": fsbench_state(),
        },
        "cells": {key: cells[key] for key in sorted(cells)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, action="append", required=True, help="repeatable")
    parser.add_argument("--preset", default="quick")
    parser.add_argument("--run", type=int, action="append", default=[])
    args = parser.parse_args()
    doc = priors([Store(s) for s in args.store], args.preset, args.run)
    out = PRESETS / f"{args.preset}{costs.PRIORS_SUFFIX}"
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{out}: {len(doc['cells'])} cells from {len(doc['origin']['runs'])} runs")


if __name__ == "__main__":
    main()
