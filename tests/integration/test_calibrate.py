"""The A/A test on this machine: one config measured as two must never get a clear winner,
and `fsbench calibrate` says what the machine can resolve."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsbench.analysis.stats import min_detectable, reps_needed
from tests.helpers import fsbench, ours

pytestmark = pytest.mark.integration


def _calibrate(workdir: Path, db: Path, seed: int) -> dict:
    res = fsbench(
        "calibrate",
        "--workload",
        "fs_mark,fio",
        "--set",
        "profile=seq-write",
        "--scale",
        "tiny",
        "--seed",
        str(seed),
        "--image-size",
        "2G",
        "--workdir",
        str(workdir / "work"),
        "--db",
        str(db),
        "--no-report",
        "--json",
        timeout=900,
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_identical_configs_get_no_winner_and_calibration_says_what_resolves(
    workdir: Path,
) -> None:
    db = workdir / "results.db"
    # Once, whatever the machine's noise: identical configs get no order (false orders are
    # held at 5% over the calibration's metrics, Holm), and the twins' gap lies inside the
    # interval the run itself reports for it at that family level.
    doc = _calibrate(workdir, db, 1)
    winners = [n for n in doc["noise"] if n["false_winner"]]
    assert not winners, json.dumps(winners, indent=1)
    for item in doc["noise"]:
        low, high = item["ratio_ci"]
        assert low <= 1.0 <= high, item
        assert low <= item["ratio"] <= high
    assert doc["kind"] == "calibration"
    assert {(n["workload"], n["metric"]) for n in doc["noise"]} >= {
        ("fs_mark", "files_per_s"),
        ("fio", "write_mib_s"),
    }
    for item in doc["noise"]:
        assert item["n"] == 5 and item["cv"] >= 0
        assert item["resolvable"] is not None and item["resolvable"] >= 0
        assert set(item["reps_for"]) == {"0.05", "0.1", "0.25"}
    assert ours(workdir) == ([], [])

    # A later comparison on this host and kernel is checked against the calibration.
    res = fsbench(
        "run",
        "--fs",
        "ext4",
        "--fs",
        "ext4:label=twin",
        "--workload",
        "fio",
        "--set",
        "profile=seq-write",
        "--scale",
        "tiny",
        "--image-size",
        "2G",
        "--workdir",
        str(workdir / "work"),
        "--db",
        str(db),
        "--json",
        timeout=600,
    )
    assert res.returncode == 0, res.stderr
    later = json.loads(res.stdout)
    assert later["calibration_run"] == doc["run"]
    # Two identical configs, repetitions decided by the default loop: every answer is
    # equivalent or undecided, never an order.
    assert later["comparisons"], later.keys()
    for comparison in later["comparisons"]:
        verdict = comparison["verdict"]
        assert verdict["kind"] in ("equivalent", "undecided"), verdict["text"]
        assert all(p["kind"] != "order" for p in verdict["pairs"])
    rows = [r for r in later["rows"] if r["metric"] == "write_mib_s"]
    assert len(rows) == 2
    # Flagged exactly when the twins differ by less than the calibration's noise resolves at
    # the later run's n (whether they do is chance: both ways are checked).
    noise = next(n for n in doc["noise"] if (n["workload"], n["metric"]) == ("fio", "write_mib_s"))
    n = min(r["n"] for r in rows)
    resolvable = min_detectable(noise["cv"], 1.0, n)
    assert resolvable is not None
    means = [abs(r["mean"]) for r in rows]
    spread = max(means) / min(means) - 1
    for row in rows:
        assert row["min_detectable"] is not None
        # The repetitions a 5% difference needs at this row's CV (None: beyond 1000, as a
        # loaded machine can make it).
        assert row["reps_for_5pct"] == reps_needed(abs(row["cv"]), 0.05)
        if spread < resolvable:
            assert "below-calibration" in row["flags"], (spread, resolvable, row["flags"])
            assert f"calibration run {doc['run']}" in row["flags"]["below-calibration"]
        else:
            assert "below-calibration" not in row["flags"], (spread, resolvable, row["flags"])
    table = fsbench("report", "--db", str(db))
    assert f"calibration: run {doc['run']} of this host and kernel" in table.stdout
    assert ("below-calibration" in table.stdout) == (spread < resolvable)
