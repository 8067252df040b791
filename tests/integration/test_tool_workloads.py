"""fs_mark, dbench, postmark, sqlite and gzip at tiny scale on real ext4 and xfs loop
filesystems, through the real runner (`Runner.run_cell`: prepare, settle, timed run,
flush, monitors, derive, checks, inspect after a remount); and their failures, which the
tools themselves often do not signal by exit status."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import available_fs
from fsbench.store.records import TrialRecord
from fsbench.system import proc
from fsbench.workloads import get
from tests.runcell import Bench, flags, loop_bench, metrics

pytestmark = pytest.mark.integration

FS = [fs for fs in ("ext4", "xfs") if fs in available_fs()]
TOOL_OF = {"fs_mark": "fs_mark", "dbench": "dbench", "postmark": "postmark", "gzip": "gzip"}


@pytest.fixture(scope="module")
def bench() -> Iterator[Bench]:
    yield from loop_bench(1 << 30)


def needs_tool(name: str) -> None:
    tool = TOOL_OF.get(name)
    if tool and proc.which(tool) is None:
        pytest.skip(f"{tool} not installed")


HEADLINE_UNITS = {
    "fs_mark": ("files_per_s", "files/s"),
    "dbench": ("mb_per_s", "MB/s"),
    "postmark": ("transactions_per_s", "tx/s"),
    "sqlite": ("inserts_per_s", "inserts/s"),
    "gzip": ("mb_per_s", "MB/s"),
}


@pytest.mark.parametrize("fs_name", FS)
@pytest.mark.parametrize("name", list(HEADLINE_UNITS))
def test_tiny_trial(bench: Bench, fs_name: str, name: str) -> None:
    needs_tool(name)
    (record,) = bench.trial(fs_name, name)
    assert record.status == "ok", f"{record.message}\n{record.detail}"
    m = metrics(record)
    seconds = m["seconds"].value
    headline, unit = HEADLINE_UNITS[name]
    assert headline in get(name).headline and headline in record.provenance["headline"]
    assert m[headline].value > 0 and m[headline].unit == unit and m[headline].better == "higher"
    # Tiny runs of gzip and postmark are CPU bound here, and may say so (the runner's
    # monitors); no other check may fire: not-cold above all.
    assert set(flags(record)) <= {"cpu-bound"}, flags(record)

    if name == "fs_mark":
        assert m["files"].value == 1000
        assert m["files_per_s"].value == pytest.approx(1000 / seconds)
        assert m["fsync_avg_us"].value > 0  # -S1
        assert m["tool_files_per_s"].value > 0
        with bench.mounted(fs_name) as mnt:
            assert len(list((mnt / "fs_mark" / "d0").iterdir())) == 1000
    elif name == "dbench":
        assert m["max_latency_ms"].value > 0
        assert seconds >= 3  # its time limit
        assert m["mb_per_s"].resolution == 0.001  # dbench prints 3 decimals
    elif name == "postmark":
        assert m["transactions"].value == 3000
        assert 0 < m["transaction_seconds"].value < m["tool_seconds"].value
        assert m["read_bytes"].value > 0 and m["written_bytes"].value > 0
        with bench.mounted(fs_name) as mnt:
            assert list((mnt / "postmark").iterdir()) == []  # it deletes its files
    elif name == "sqlite":
        assert m["inserts"].value == 300
        assert m["db_bytes"].value > 0  # inspect found every row after remount
    elif name == "gzip":
        assert 0.6 < m["ratio"].value < 0.8
        # COLD: the input came from the device, not from the page cache prepare filled.
        assert m["device_read_bytes"].value >= 32 << 20
        with bench.mounted(fs_name) as mnt:
            out = mnt / "gzip" / "input.dat.gz"
            test = subprocess.run(["gzip", "-t", str(out)], capture_output=True)
            assert test.returncode == 0, test.stderr


def test_fs_mark_sweep_options(bench: Bench) -> None:
    """Threads over several directories, round-robin subdirectories, two loops, -S0."""
    needs_tool("fs_mark")
    params = {"files": 100, "size": 0, "threads": 2, "dirs": 2, "subdirs": 4}
    (record,) = bench.trial(FS[0], "fs_mark", **params, subdir_files=10, sync=0, loops=2)
    assert record.status == "ok", record.message
    m = metrics(record)
    assert m["files"].value == 100 * 2 * 2
    assert "fsync_avg_us" not in m and "write_avg_us" not in m
    assert m["creat_avg_us"].value > 0
    with bench.mounted(FS[0]) as mnt:
        files = [p for p in (mnt / "fs_mark").rglob("*") if p.is_file()]
        assert len(files) == 400 and all(p.stat().st_size == 0 for p in files)


def _failed(records: list[TrialRecord], *words: str) -> str:
    (record,) = records
    assert record.status == "failed", record.message
    assert all(w in record.message for w in words), record.message
    return record.message


# Too few inodes for the workload (mkfs -N 128): each tool runs out of space part-way, which
# fs_mark reports by its exit status and postmark and dbench only in their output.


def test_fs_mark_enospc_is_a_failed_trial(bench: Bench) -> None:
    needs_tool("fs_mark")
    records = bench.trial("ext4", "fs_mark", mkfs=("-N", "128"), files=500, size="4K", sync=0)
    _failed(records, "No space left on device")
    assert "exit status 1" in records[0].detail
    assert not list(Path.cwd().glob("fs_log.txt*"))  # its log never lands in the cwd


def test_postmark_errors_are_a_failed_trial(bench: Bench) -> None:
    """postmark exits 0 (or dies of SIGFPE) when it cannot open its files."""
    needs_tool("postmark")
    records = bench.trial(
        "ext4", "postmark", mkfs=("-N", "128"), files=500, transactions=200,
        min_size=500, max_size=1000,
    )  # fmt: skip
    assert _failed(records).startswith("postmark: Error: cannot open")


def test_dbench_failure_and_missing_loadfile(bench: Bench, tmp_path: Path) -> None:
    needs_tool("dbench")
    missing = bench.trial("ext4", "dbench", loadfile=str(tmp_path / "nope.txt"), duration=1)
    _failed(missing, "loadfile", "not found")
    # dbench itself exits 0 when its clients fail: out of inodes, one client's open fails
    # on ENOSPC or on the directory another could not make.
    full = bench.trial("ext4", "dbench", mkfs=("-N", "128"), clients=2, duration=3)
    message = _failed(full, "dbench: [", "failed for handle")
    assert "No space left on device" in full[0].detail and "barrier" not in message
