"""A plugin is an entry point of `fsbench.<kind>.v<contract>` (system/plugins.py). One
built against another version of a contract is never loaded: asked for by name, it is
refused in one line that names its package and both versions, and nothing runs. The
plugin here is a real installed distribution's metadata (a .dist-info on the path), as
pip leaves it, read by importlib.metadata in a fresh fsbench process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsbench.store.results import Store
from tests.helpers import TEST_DATA_HOME

pytestmark = pytest.mark.integration

ENTRY_POINTS = """\
[fsbench.workloads.v0]
old-files = toyplug:OldFiles

[fsbench.run_kinds.v9]
laps = toyplug:LAPS
"""


def _installed(site: Path) -> None:
    info = site / "toyplug-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toyplug\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    # Importing it would fail loudly: a refused plugin must never be imported.
    (site / "toyplug.py").write_text("raise ImportError('a refused plugin was imported')\n")


def _fsbench(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_DATA_HOME": str(TEST_DATA_HOME), "PYTHONPATH": str(site)}
    return subprocess.run(
        [sys.executable, "-m", "fsbench.cli", *args],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_a_plugin_built_for_another_contract_is_refused_in_one_line(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _installed(site)
    db = tmp_path / "r.db"

    ran = _fsbench(site, "run", "--fs", "ext4", "--workload", "old-files", "--db", str(db))
    assert ran.returncode == 2, ran.stderr
    assert ran.stderr.splitlines() == [
        "fsbench: error: workload 'old-files' (package toyplug 1.0) was built for fsbench's "
        "workload contract v0; this fsbench offers v1"
    ]
    assert not db.exists() or Store(db).list_runs() == []

    # A stored run of a kind whose plugin is built for a newer contract: its report is
    # refused the same way, and the other commands still list it.
    store = Store(db)
    run_id = store.create_run(
        name="laps", fsbench_version="0", argv=[], plan={}, overrides={}, schedule=[],
        host={}, target={}, kind="laps", facts={"laps": 3},
    )  # fmt: skip
    shown = _fsbench(site, "report", str(run_id), "--db", str(db))
    assert shown.returncode == 2, shown.stderr
    assert shown.stderr.splitlines() == [
        "fsbench: error: run kind 'laps' (package toyplug 1.0) was built for fsbench's "
        "run kind contract v9; this fsbench offers v1"
    ]
    listed = _fsbench(site, "list", "runs", "--db", str(db), "--json")
    assert listed.returncode == 0 and '"kind": "laps"' in listed.stdout, listed.stderr
