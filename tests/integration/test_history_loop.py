"""`fsbench history` on real runs: a nightly series of fs_mark on loop images where a real
change enters at a known run (the config's mount options gain `sync`, recorded in every
trial), found at that run with the mount option named as what changed there; the gate
passes the night the change arrives (one run may be a spike), fails the night a second run
confirms it, and passes the night after."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsbench.cli.history import EXIT_REGRESSION
from tests.helpers import fsbench, ours

pytestmark = pytest.mark.integration

# fs_mark without fsync, 300 files: ~0.1 s on ext4, ~2 s with every write synchronous.
WORKLOAD = ["--workload", "fs_mark", "--scale", "tiny", "--set", "sync=0", "--set", "files=300"]
FAST, SLOW = "ext4:label=nightly", "ext4:mount=sync:label=nightly"
BEFORE = 6  # nights before the change


def night(workdir: Path, fs: str) -> None:
    res = fsbench(
        "run", "--fs", fs, *WORKLOAD, "--reps", "2", "--warmup", "0", "--image-size", "1G",
        "--workdir", str(workdir / "work"), "--db", str(workdir / "r.db"), "--tag", "nightly",
        timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr


def gate(workdir: Path) -> tuple[int, dict[str, object], str]:
    res = fsbench(
        "history", "--db", str(workdir / "r.db"), "--tag", "nightly", "--fail-on", "regression",
        "--format", "json",
    )  # fmt: skip
    assert res.returncode in (0, EXIT_REGRESSION), res.stderr
    return res.returncode, json.loads(res.stdout), res.stderr


# Alone: it times real fs_mark runs and must find a planted change on its first night; the
# other worker's load hid it once (fc8 on 2026-11-28: exit 0 where 7 was due).
@pytest.mark.alone
def test_a_mount_option_entering_the_series_is_found_and_gated(workdir: Path) -> None:
    try:
        for _ in range(BEFORE):
            night(workdir, FAST)
        code, _, _ = gate(workdir)
        assert code == 0
        night(workdir, SLOW)  # run 7: every write synchronous; alone, it may be a spike
        code, doc, _ = gate(workdir)
        assert code == 0, doc
        night(workdir, SLOW)  # run 8 confirms it
        code, doc, err = gate(workdir)
        assert code == EXIT_REGRESSION, doc
        (series,) = doc["series"]  # type: ignore[misc]
        (change,) = series["changes"]
        assert change["after_run"]["run"] == BEFORE + 1 and change["direction"] == "worse"
        assert change["ratio"] < 0.5 and not change["harness"]
        assert {"what": "mount options", "before": "", "after": "sync", "at_run": "7"} in (
            change["coincident"]
        )
        assert "regression: nightly" in err
        night(workdir, SLOW)  # run 9: the change is known since run 8
        code, doc, _ = gate(workdir)
        assert code == 0
        (series,) = doc["series"]  # type: ignore[misc]
        assert [c["after_run"]["run"] for c in series["changes"]] == [BEFORE + 1]
    finally:
        assert ours(workdir) == ([], [])
