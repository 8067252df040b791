"""Writes goldens/: what `fsbench report` prints of every run of the committed stores in the
terminal (piped, and into a file), markdown and CSV, and what `fsbench compare` prints of
some of their pairs. tests/unit/test_fixture_goldens.py holds every later fsbench to them,
byte for byte (the JSON is test_fixture_reports.py's). Run it when a report changes on
purpose, and say why in the commit:

    .venv/bin/python tests/data/stores/goldens.py
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from typer.testing import CliRunner

from fsbench.cli.app import app

DATA = Path(__file__).resolve().parent
GOLDENS = DATA / "goldens"
RUNS = {"v5": [1, 2], "v6": [1, 2, 3], "v6-fleet": [1], "v7": [1, 2], "v8": [1], "v12": [1, 2]}
# name: the report's arguments after RUN, and the golden's suffix
REPORTS = {"table": ["-f", "table"], "md": ["-f", "md"], "csv": ["-f", "csv"]}
# A file is written at its own width (160 columns), the piped terminal at 200.
FILE_REPORT = "table-file"
COMPARES = {
    "v7-1-2": ("v7", ["1", "2"]),
    "v6-1-3": ("v6", ["1", "3"]),
    "v5-2-by-dirty-ratio": ("v5", ["2", "--by", "vm.dirty_ratio"]),
}


def cases() -> list[tuple[str, str, list[str]]]:
    """(golden file name, store, the command's arguments but --db) of every golden."""
    out = []
    for store, runs in RUNS.items():
        for run in runs:
            for suffix, args in REPORTS.items():
                out.append((f"report-{store}-{run}.{suffix}", store, ["report", str(run), *args]))
            out.append((f"report-{store}-{run}.{FILE_REPORT}", store, ["report", str(run)]))
    for name, (store, args) in COMPARES.items():
        for fmt in ("table", "md"):
            out.append((f"compare-{name}.{fmt}", store, ["compare", *args, "-f", fmt]))
    return out


def printed(store: Path, args: list[str], name: str, tmp: Path) -> str:
    """What the command writes: to the file of -o for a FILE_REPORT, else to stdout."""
    argv = [*args, "--db", str(store)]
    target = tmp / name
    if name.endswith(FILE_REPORT):
        argv += ["-o", str(target)]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, (argv, result.output)
    return target.read_text(encoding="utf-8") if name.endswith(FILE_REPORT) else result.stdout


def copies(tmp: Path) -> dict[str, Path]:
    """A copy of each committed store (opening one migrates it)."""
    out = {}
    for store in RUNS:
        out[store] = tmp / f"{store}.db"
        shutil.copyfile(DATA / f"{store}.db", out[store])
    return out


def main() -> None:
    GOLDENS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        stores = copies(tmp)
        for golden, store, args in cases():
            (GOLDENS / golden).write_text(printed(stores[store], args, golden, tmp))
            print(golden)


if __name__ == "__main__":
    main()
