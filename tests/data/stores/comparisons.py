"""Writes <store>-comparisons.json beside each committed store: its runs' comparisons as
today's decision rule decides them. Run it when the rule changes on purpose (say so in the
commit); tests/unit/test_fixture_reports.py holds every later fsbench to them.

    .venv/bin/python tests/data/stores/comparisons.py
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from fsbench.reports import export, formats, run_report, source
from fsbench.store.results import Store

DATA = Path(__file__).resolve().parent
STORES = {"v6-fleet": [1], "v7": [1, 2], "v8": [1]}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for name, runs in STORES.items():
            copy = Path(tmp) / f"{name}.db"
            shutil.copyfile(DATA / f"{name}.db", copy)
            store = Store(str(copy))
            out = {}
            for run_id in runs:
                report = json.loads(
                    export.write(run_report.of(source.load(store, run_id)), formats.JSON)
                )
                out[str(run_id)] = report["comparisons"]
            store.close()
            (DATA / f"{name}-comparisons.json").write_text(json.dumps(out, indent=1) + "\n")
            print(f"{name}-comparisons.json: {sum(len(v) for v in out.values())} comparisons")


if __name__ == "__main__":
    main()
