"""`fsbench history` explains a change point when the runs on either side of it were
explained: a nightly series of fs_mark on loop images (a config `nightly` beside a
constant `ref`) whose `nightly` gains mount option `sync` at run 7; runs 6 and 7 each get
an instrumented pass (`fsbench explain`), and the change point found at run 7 says which
mechanisms differ between those two passes' trials of `nightly`: the journal and its
cache flushes, the way a pair of configs is explained."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import fsbench, ours

pytestmark = pytest.mark.integration

# fs_mark without fsync, 300 files: ~0.1 s on ext4, ~2 s with every write synchronous.
WORKLOAD = ["--workload", "fs_mark", "--scale", "tiny", "--set", "sync=0", "--set", "files=300"]
REF, FAST, SLOW = "ext4:label=ref", "ext4:label=nightly", "ext4:mount=sync:label=nightly"
BEFORE = 6  # nights before the change: the newest-runs test finds it at the second after


def night(workdir: Path, fs: str) -> None:
    res = fsbench(
        "run", "--fs", fs, "--fs", REF, *WORKLOAD, "--reps", "2", "--warmup", "0",
        "--image-size", "1G", "--workdir", str(workdir / "work"), "--db", str(workdir / "r.db"),
        "--tag", "nightly", "--no-report", timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]


def history(workdir: Path, *args: str) -> str:
    res = fsbench("history", "--db", str(workdir / "r.db"), "--tag", "nightly", *args)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout


# Alone: real fs_mark timings, and a planted change to be found (test_history_loop.py).
@pytest.mark.alone
def test_a_change_point_between_explained_runs_names_its_mechanisms(workdir: Path) -> None:
    try:
        for _ in range(BEFORE):
            night(workdir, FAST)
        for _ in range(2):
            night(workdir, SLOW)
        # Before any pass, the change point is found and nothing is said of why.
        (series,) = [
            s for s in json.loads(history(workdir, "--format", "json"))["series"]
            if s["config"] == "nightly"
        ]  # fmt: skip
        (change,) = series["changes"]
        assert (change["before_run"]["run"], change["after_run"]["run"]) == (BEFORE, BEFORE + 1)
        assert change["why"] == ""
        for run in (BEFORE, BEFORE + 1):
            res = fsbench("explain", str(run), "--db", str(workdir / "r.db"), timeout=900)
            assert res.returncode == 0, res.stderr[-3000:]
        (series,) = [
            s for s in json.loads(history(workdir, "--format", "json"))["series"]
            if s["config"] == "nightly"
        ]  # fmt: skip
        (change,) = series["changes"]
        why = change["why"]
        assert why.startswith(f"run {BEFORE + 1} against run {BEFORE}: "), why
        assert "journal" in why or "cache flushes" in why, why
        assert "(explained: " in why
        assert f"why: run {BEFORE + 1} against run {BEFORE}: " in " ".join(history(workdir).split())
    finally:
        assert ours(workdir) == ([], [])
