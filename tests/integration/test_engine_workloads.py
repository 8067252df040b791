"""filebench personalities through fsbench-engine, on real filesystems (tiny scale)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsbench.system import engine as _engine
from tests.helpers import fsbench, ours

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(_engine.find_engine() is None, reason="fsbench-engine not built"),
]


def _run(workdir: Path, *args: str) -> tuple[int, list[dict[str, object]], str]:
    res = fsbench(
        "run",
        "--workdir",
        str(workdir / "work"),
        "--db",
        str(workdir / "r.db"),
        "--image-size",
        "1G",
        "--scale",
        "tiny",
        "--reps",
        "1",
        "--json",
        *args,
    )
    return res.returncode, json.loads(res.stdout)["rows"] if res.stdout.strip() else [], res.stderr


def test_fileserver_thread_sweep_gives_ops_and_percentiles(workdir: Path) -> None:
    rc, rows, err = _run(
        workdir,
        "--fs",
        "ext4,xfs",
        "--workload",
        "fileserver",
        "--set",
        "threads=1,4",
        "--set",
        "duration=1",
    )
    assert rc == 0, err
    for fs in ("ext4", "xfs"):
        for threads in (1, 4):
            cell = {
                r["metric"]: r for r in rows if r["fs"] == fs and r["params"]["threads"] == threads
            }
            assert cell["ops_per_s"]["mean"] > 0
            p = [cell[f"lat_{q}_us"]["mean"] for q in ("p50", "p95", "p99", "p99_9", "max")]
            assert all(x > 0 for x in p) and p == sorted(p)
            assert cell["write_amplification"]["mean"] > 0
            assert cell["prepare_seconds"]["mean"] >= 0
    assert ours(workdir) == ([], [])


@pytest.mark.parametrize("name", ["varmail", "webserver"])
def test_other_personalities(workdir: Path, name: str) -> None:
    rc, rows, err = _run(workdir, "--fs", "ext4", "--workload", name, "--set", "duration=1")
    assert rc == 0, err
    ops = next(r for r in rows if r["metric"] == "ops_per_s")
    assert ops["status"] == "ok" and ops["mean"] > 0
