# ruff: noqa: E501 - captured tool output is kept verbatim, long lines included
"""Parsers of fs_mark, dbench and postmark output on real captured output (Debian 12:
fs_mark 3.3, dbench 4.00, postmark 1.53 reporting itself as v1.51, on ext4 over a loop
device; trailing blanks stripped), the argv and config builders, parameter models, and
the process helpers of _tools. Unit tests: the tools are not run here (the helpers run
the Python interpreter)."""

from __future__ import annotations

import sys
import time
import zlib
from pathlib import Path

import pytest

from fsbench.execute.checks import cold_read_shortfall
from fsbench.system import proc
from fsbench.system.errors import TrialFailed
from fsbench.workloads import _tools, get
from fsbench.workloads import dbench as db
from fsbench.workloads import fs_mark as fm
from fsbench.workloads import gzip as gz
from fsbench.workloads import postmark as pm
from fsbench.workloads import sqlite as sq
from fsbench.workloads.base import Better, Metric, Scale

FS_MARK_V_2LOOPS = """\

#  fs_mark  -d  fm/d0  -d  fm/d1  -t  2  -n  300  -s  4096  -S  1  -L  2  -k  -v  -l  /tmp/fsl.txt
#\tVersion 3.3, 2 thread(s) starting at Sun Nov 22 01:10:25 2026
#\tSync method: INBAND FSYNC: fsync() per file in write loop.
#\tDirectories:  no subdirectories used
#\tFile names: 40 bytes long, (16 initial bytes of time stamp with 24 random bytes at end of name)
#\tFiles info: size 4096 bytes, written with an IO size of 16384 bytes per write
#\tApp overhead is time in microseconds spent in the test not doing file writing related system calls.
#\tAll system call times are reported in microseconds.

FSUse%        Count         Size    Files/sec     App Overhead        CREAT (Min/Avg/Max)        WRITE (Min/Avg/Max)        FSYNC (Min/Avg/Max)         SYNC (Min/Avg/Max)        CLOSE (Min/Avg/Max)       UNLINK (Min/Avg/Max)
     5          600         4096        334.8            11986       27      448    10957        9       18      604      755     5497    27293        0        0        0        3        7      520        0        0        0
     5         1200         4096        244.4            15522       26      540    14356        9       18      171      810     7592    32521        0        0        0        2        7       60        0        0        0
"""

FS_MARK_SIZE0 = """\

#  fs_mark  -d  fm/z  -n  500  -s  0  -S  0  -D  4  -N  50  -k  -v  -l  /tmp/fsl.txt
#\tVersion 3.3, 1 thread(s) starting at Sun Nov 22 01:10:30 2026
#\tSync method: NO SYNC: Test does not issue sync() or fsync() calls.
#\tDirectories:  Round Robin between directories across 4 subdirectories with 50 files per subdirectory.
#\tFile names: 40 bytes long, (16 initial bytes of time stamp with 24 random bytes at end of name)
#\tFiles info: size 0 bytes, written with an IO size of 16384 bytes per write
#\tApp overhead is time in microseconds spent in the test not doing file writing related system calls.
#\tAll system call times are reported in microseconds.

FSUse%        Count         Size    Files/sec     App Overhead        CREAT (Min/Avg/Max)        WRITE (Min/Avg/Max)        FSYNC (Min/Avg/Max)         SYNC (Min/Avg/Max)        CLOSE (Min/Avg/Max)       UNLINK (Min/Avg/Max)
     5          500            0      25549.3             7479       10       21     2650        1        0        2        0        0        0        0        0        0        1        1      207        0        0        0
"""

FS_MARK_NO_V = """\

#  fs_mark  -d  fm/plain  -n  500  -s  4096  -S  0  -L  2  -k  -l  /tmp/fsl.txt
#\tVersion 3.3, 1 thread(s) starting at Sun Nov 22 01:10:30 2026
#\tSync method: NO SYNC: Test does not issue sync() or fsync() calls.
#\tDirectories:  no subdirectories used
#\tFile names: 40 bytes long, (16 initial bytes of time stamp with 24 random bytes at end of name)
#\tFiles info: size 4096 bytes, written with an IO size of 16384 bytes per write
#\tApp overhead is time in microseconds spent in the test not doing file writing related system calls.

FSUse%        Count         Size    Files/sec     App Overhead
     5          500         4096      29809.8             2248
     5         1000         4096      25955.2             2683
"""

DBENCH = """\
dbench version 4.00 - Copyright Andrew Tridgell 1999-2004

Running for 3 seconds with load '/usr/share/dbench/client.txt' and minimum warmup 0 secs
0 of 2 processes prepared for launch   0 sec
2 of 2 processes prepared for launch   0 sec
releasing clients
   2      9547   136.01 MB/sec  execute   1 sec  latency 22.878 ms
   2     17801   113.22 MB/sec  execute   2 sec  latency 41.776 ms
   2  cleanup   3 sec
   0  cleanup   3 sec

 Operation      Count    AvgLat    MaxLat
 ----------------------------------------
 NTCreateX       8991     0.032    12.104
 Close           6709     0.002     0.546
 Rename           375     0.054     2.404
 Unlink          1722     0.074    16.579
 Deltree            2     4.029     7.709
 Mkdir              2     0.053     0.087
 Qpathinfo       8062     0.022    13.240
 Qfileinfo       1550     0.001     0.232
 Qfsinfo         1464     0.007     4.129
 Sfileinfo        736     0.052     9.976
 Find            3095     0.054    13.342
 WriteX          5194     0.043    11.048
 ReadX          13867     0.007     8.458
 LockX             28     0.004     0.014
 UnlockX           28     0.002     0.002
 Flush            633     7.320    41.766

Throughput 113.225 MB/sec  2 clients  2 procs  max_latency=41.776 ms
"""

DBENCH_FAILED = """\
dbench version 4.00 - Copyright Andrew Tridgell 1999-2004

Running for 2 seconds with load '/usr/share/dbench/client.txt' and minimum warmup 0 secs
0 of 1 processes prepared for launch   0 sec
1 of 1 processes prepared for launch   0 sec
releasing clients
[3] open /nonexistent/clients/client0 failed for handle 16385 (No such file or directory)
(4) ERROR: handle 16385 was not found
Child failed with status 1
"""

POSTMARK = """\
PostMark v1.51 : 8/14/01
pm>pm>pm>pm>pm>pm>pm>pm>pm>pm>pm>Creating subdirectories...Done
Creating files...Done
Performing transactions..........Done
Deleting files...Done
Deleting subdirectories...Done
Time:
\t1 seconds total
\t1 seconds of transactions (1000 per second)

Files:
\t698 created (698 per second)
\t\tCreation alone: 200 files (200 per second)
\t\tMixed with transactions: 498 files (498 per second)
\t495 read (495 per second)
\t505 appended (505 per second)
\t698 deleted (698 per second)
\t\tDeletion alone: 196 files (196 per second)
\t\tMixed with transactions: 502 files (502 per second)

Data:
\t157.40 megabytes read (157.40 megabytes per second)
\t223.81 megabytes written (223.81 megabytes per second)
pm>"""

POSTMARK_SMALL = """\
PostMark v1.51 : 8/14/01
pm>pm>pm>pm>pm>Creating files...Done
Performing transactions..........Done
Deleting files...Done
Time:
\t1 seconds total
\t1 seconds of transactions (200 per second)

Files:
\t199 created (199 per second)
\t\tCreation alone: 100 files (100 per second)
\t\tMixed with transactions: 99 files (99 per second)
\t96 read (96 per second)
\t104 appended (104 per second)
\t199 deleted (199 per second)
\t\tDeletion alone: 98 files (98 per second)
\t\tMixed with transactions: 101 files (101 per second)

Data:
\t608.66 kilobytes read (608.66 kilobytes per second)
\t1.22 megabytes written (1.22 megabytes per second)
pm>"""

POSTMARK_ENOSPC = """\
PostMark v1.51 : 8/14/01
pm>pm>pm>Creating files...Done
Performing transactions..........Done
Deleting files...Done
Time:
\t1 seconds total
\t1 seconds of transactions (500 per second)

Files:
\t747 created (747 per second)
\t\tCreation alone: 500 files (500 per second)
\t\tMixed with transactions: 247 files (247 per second)
\t0 read (0 per second)
\t0 appended (0 per second)
\t0 deleted (0 per second)
\t\tDeletion alone: 0 files (0 per second)
\t\tMixed with transactions: 0 files (0 per second)

Data:
\t0.000000 bytes read (0.000000 bytes per second)
\t0.000000 bytes written (0.000000 bytes per second)
pm>
"""

# The first line of an earlier real dbench run on this machine (not in every run).
DBENCH_FAILED_SEMAPHORE = DBENCH_FAILED.replace(
    "minimum warmup 0 secs\n", "minimum warmup 0 secs\nfailed to create barrier semaphore \n"
)

# postmark killed by SIGFPE (its report divides by a zero count) after failing every open:
# stdout stops mid-line; stderr has the errors.
POSTMARK_FAILED_STDOUT = """\
PostMark v1.51 : 8/14/01
pm>pm>pm>pm>Creating files...Done
Performing transactions"""
POSTMARK_FAILED_STDERR = """\
Error: cannot open '/var/tmp/fsb-helper/mnt/nonexistent/1' for writing
Error: cannot open '/var/tmp/fsb-helper/mnt/nonexistent/2' for writing
Error: cannot open '/var/tmp/fsb-helper/mnt/nonexistent/3' for writing
Error: cannot open '/var/tmp/fsb-helper/mnt/nonexistent/1' for append
Error: Cannot delete '/var/tmp/fsb-helper/mnt/nonexistent/3'
"""

FS_MARK_ENOSPC_STDERR = """\
Error in creat: No space left on device
fopen failed to open: fs_log.txt.4863
"""


def by_name(metrics: list[Metric]) -> dict[str, Metric]:
    names = [m.name for m in metrics]
    assert len(names) == len(set(names)), names
    return {m.name: m for m in metrics}


def result(rc: int, stdout: str = "", stderr: str = "") -> proc.Result:
    return proc.Result(("tool", "arg"), rc, stdout, stderr)


# -- fs_mark ---------------------------------------------------------------------------


def test_fs_mark_table_with_latencies() -> None:
    rows = fm.parse_output(FS_MARK_V_2LOOPS)
    assert [r.count for r in rows] == [600, 1200]  # cumulative over loops
    assert [r.files_per_s for r in rows] == [334.8, 244.4]
    assert [r.size for r in rows] == [4096, 4096]
    assert rows[0].app_overhead_us == 11986
    assert list(rows[0].latencies) == ["creat", "write", "fsync", "sync", "close", "unlink"]
    assert rows[0].latencies["fsync"] == (755, 5497, 27293)
    assert rows[1].latencies["close"] == (2, 7, 60)


def test_fs_mark_summary_weights_loops_and_skips_calls_not_made() -> None:
    metrics = by_name(fm.summarize(fm.parse_output(FS_MARK_V_2LOOPS), 4096))
    assert metrics["files"].value == 1200
    tool_seconds = 600 / 334.8 + 600 / 244.4
    assert metrics["tool_files_per_s"].value == pytest.approx(1200 / tool_seconds)
    assert metrics["tool_files_per_s"].better == Better.HIGHER
    assert metrics["creat_avg_us"].value == pytest.approx((448 + 540) / 2)
    assert metrics["fsync_avg_us"].value == pytest.approx((5497 + 7592) / 2)
    assert metrics["fsync_avg_us"].unit == "us"
    assert metrics["fsync_avg_us"].better == Better.LOWER
    # What fs_mark prints: whole files, whole microseconds, files/s to one decimal.
    assert metrics["files"].resolution == metrics["fsync_avg_us"].resolution == 1
    assert metrics["tool_files_per_s"].resolution == 0.1
    assert {"write_avg_us", "close_avg_us"} <= set(metrics)
    # -S1 calls no sync(); -k unlinks nothing: all zeros, not printed as metrics.
    assert "sync_avg_us" not in metrics and "unlink_avg_us" not in metrics


def test_fs_mark_size_zero_write_column_is_ignored() -> None:
    # With -s 0 fs_mark's WRITE column reads min 1, avg 0, max 2: no write() was made.
    rows = fm.parse_output(FS_MARK_SIZE0)
    assert len(rows) == 1 and rows[0].latencies["write"] == (1, 0, 2)
    metrics = by_name(fm.summarize(rows, 0))
    assert set(metrics) == {"files", "tool_files_per_s", "creat_avg_us", "close_avg_us"}
    assert metrics["files"].value == 500
    assert metrics["tool_files_per_s"].value == pytest.approx(25549.3)


def test_fs_mark_table_without_v() -> None:
    rows = fm.parse_output(FS_MARK_NO_V)
    assert [(r.count, r.files_per_s) for r in rows] == [(500, 29809.8), (1000, 25955.2)]
    assert all(r.latencies == {} for r in rows)
    metrics = by_name(fm.summarize(rows, 4096))
    assert set(metrics) == {"files", "tool_files_per_s", "bytes_written"}
    assert metrics["bytes_written"].value == 1000 * 4096


def test_fs_mark_no_table() -> None:
    assert fm.parse_output("") == []
    # ENOSPC: fs_mark prints its header and the table header, then dies (exit 1).
    header_only = FS_MARK_NO_V.split("     5  ")[0]
    assert fm.parse_output(header_only) == []
    assert fm.summarize([], 4096) == []
    failed = _tools.tool_failed("fs_mark", result(1, header_only, FS_MARK_ENOSPC_STDERR))
    assert failed.message == "fs_mark: Error in creat: No space left on device"
    assert "exit status 1" in failed.detail and "FSUse%" in failed.detail


def test_fs_mark_argv() -> None:
    params = fm.FsMarkParams(files=100, size="4K", threads=4, dirs=2, sync=1, loops=3)
    args = fm.argv(params, [Path("/m/a"), Path("/m/b")], Path("/tmp/log"))
    assert args[:5] == ["fs_mark", "-d", "/m/a", "-d", "/m/b"]
    joined = " ".join(args)
    for option in ("-n 100", "-s 4096", "-t 4", "-S 1", "-L 3", "-l /tmp/log"):
        assert option in joined
    assert "-k" in args and "-v" in args
    assert "-D" not in args and "-N" not in args
    sub = fm.FsMarkParams(files=10, size=0, sync=0, subdirs=8, subdir_files=50)
    args = fm.argv(sub, [Path("/m/a")], Path("/tmp/log"))
    assert args[args.index("-D") + 1] == "8" and args[args.index("-N") + 1] == "50"


def test_fs_mark_params() -> None:
    assert get("fs_mark") is fm.FsMark
    full = fm.FsMarkParams.model_validate(fm.FsMark.defaults(Scale.FULL))
    assert (full.total_files, full.size, full.sync) == (1_000_000, 4096, 1)
    # 1M inodes: ext4's default 16 KiB per inode wants a ~16 GB filesystem.
    assert fm.FsMark().required_bytes(full) >= 1_000_000 * 16384
    for scale in Scale:
        fm.FsMarkParams.model_validate(fm.FsMark.defaults(scale))
    with pytest.raises(ValueError, match="multiple of dirs"):
        fm.FsMarkParams(files=1, size=0, sync=0, threads=3, dirs=2)
    with pytest.raises(ValueError, match="subdirs"):
        fm.FsMarkParams(files=1, size=0, sync=0, subdir_files=5)
    with pytest.raises(ValueError):
        fm.FsMarkParams(files=1, size=0, sync=7)
    with pytest.raises(ValueError):
        fm.FsMarkParams(files=1, size=0)  # type: ignore[call-arg]  # sync: never implicit


def test_fs_mark_files_per_s_uses_the_runner_seconds() -> None:
    params = fm.FsMarkParams(files=1000, size="4K", sync=1)
    (m,) = fm.FsMark().derive(params, {"files": 1000, "seconds": 2.5})
    assert m == Metric("files_per_s", 400.0, "files/s", Better.HIGHER)
    assert fm.FsMark().derive(params, {"files": 1000}) == []


# -- dbench ----------------------------------------------------------------------------


def test_dbench_output() -> None:
    res = db.parse_output(DBENCH)
    assert res is not None
    assert (res.mb_per_s, res.clients, res.max_latency_ms) == (113.225, 2, 41.776)
    assert len(res.operations) == 16
    assert res.operations["Flush"] == (633, 7.320, 41.766)
    assert res.operations["NTCreateX"] == (8991, 0.032, 12.104)
    # The per-second progress lines are not mistaken for the table.
    assert "execute" not in res.operations and "cleanup" not in res.operations


def test_dbench_failure_has_no_throughput() -> None:
    assert db.parse_output(DBENCH_FAILED) is None
    # dbench exits 0 when its client fails; errors are on stdout.
    first = (
        "[3] open /nonexistent/clients/client0 failed for handle 16385 (No such file or directory)"
    )
    assert db.first_error(result(0, DBENCH_FAILED)) == first
    assert db.first_error(result(0, DBENCH_FAILED_SEMAPHORE)) == first
    assert db.first_error(result(0, "dbench version 4.00\n")) == "no Throughput line in its output"


def test_dbench_argv_and_params() -> None:
    assert get("dbench") is db.Dbench
    params = db.DbenchParams(clients=6, duration=10)
    assert params.loadfile == "/usr/share/dbench/client.txt"
    args = db.argv(params, Path("/m/dbench"), warmup_option=False)
    assert args == [
        "dbench",
        "-D",
        "/m/dbench",
        "-t",
        "10",
        "-c",
        "/usr/share/dbench/client.txt",
        "6",
    ]
    synced = db.DbenchParams(
        clients=1, duration=5, warmup=2, o_sync=True, sync_dirs=True, fsync=True
    )
    args = db.argv(synced, Path("/d"), warmup_option=True)
    assert args[-1] == "1"
    assert {"-s", "-S", "-F", "--warmup=2"} <= set(args)
    assert "--warmup=2" not in db.argv(synced, Path("/d"), warmup_option=False)
    assert db.Dbench.defaults(Scale.QUICK)["clients"] == [1, 6, 12]
    assert db.Dbench.defaults(Scale.FULL) == {"clients": [1, 6, 12, 48, 128], "duration": 600}


# -- postmark --------------------------------------------------------------------------


def test_postmark_report() -> None:
    rep = pm.parse_report(POSTMARK)
    assert rep == pm.Report(
        seconds_total=1,
        seconds_transactions=1,
        created=698,
        created_alone=200,
        read=495,
        appended=505,
        deleted=698,
        deleted_alone=196,
        read_bytes=157.40 * 2**20,
        written_bytes=223.81 * 2**20,
        read_step=0.01 * 2**20,  # printed with 2 decimals: the resolution
        written_step=0.01 * 2**20,
    )


def test_postmark_report_units() -> None:
    small = pm.parse_report(POSTMARK_SMALL)
    assert small is not None
    assert small.read_bytes == pytest.approx(608.66 * 1024)  # postmark's kilobyte is 1024
    assert small.written_bytes == pytest.approx(1.22 * 2**20)
    assert (small.read_step, small.written_step) == (0.01 * 1024, 0.01 * 2**20)
    assert (small.created, small.created_alone, small.deleted_alone) == (199, 100, 98)
    empty = pm.parse_report(POSTMARK_ENOSPC)
    assert empty is not None
    assert (empty.read_bytes, empty.written_bytes, empty.read) == (0.0, 0.0, 0)


def test_postmark_failed_run() -> None:
    assert pm.parse_report(POSTMARK_FAILED_STDOUT) is None
    failed = _tools.tool_failed(
        "postmark", result(-8, POSTMARK_FAILED_STDOUT, POSTMARK_FAILED_STDERR)
    )
    assert failed.message == (
        "postmark: Error: cannot open '/var/tmp/fsb-helper/mnt/nonexistent/1' for writing"
    )
    assert "Cannot delete" in failed.detail and "exit status -8" in failed.detail


def test_postmark_config() -> None:
    params = pm.PostmarkParams(
        files=500, transactions=8000, min_size="5K", max_size="512K", buffering=False
    )
    lines = pm.config(params, "/m/postmark").splitlines()
    assert lines[0] == "set location /m/postmark"
    assert "set size 5120 524288" in lines
    assert "set buffering false" in lines
    assert "set seed 42" in lines and "set read 512" in lines and "set write 512" in lines
    assert not any("subdirectories" in line for line in lines)  # postmark refuses 0
    assert lines[-2:] == ["run", "quit"]
    sub = pm.PostmarkParams(files=5, transactions=5, min_size=1, max_size=2, subdirectories=10)
    assert "set subdirectories 10" in pm.config(sub, "/x")
    with pytest.raises(ValueError, match="min_size"):
        pm.PostmarkParams(files=5, transactions=5, min_size=10, max_size=2)


def test_postmark_phases_and_rates() -> None:
    seen = {pm.CREATE: 10.0, pm.TRANSACT: 10.5, pm.DELETE: 12.5, pm.REPORT: 12.75}
    ph = pm.phases(seen)
    assert ph == pm.Phases(create=0.5, transactions=2.0, delete=0.25)
    assert pm.phases({pm.CREATE: 1.0}) is None
    rep = pm.parse_report(POSTMARK)
    assert rep is not None
    params = pm.PostmarkParams(files=200, transactions=1000, min_size="5K", max_size="512K")
    metrics = by_name(pm.metrics_from(params, rep, ph, 4.0))
    assert metrics["transactions_per_s"].value == 500.0
    assert metrics["files_created_per_s"].value == 698 / 4.0
    assert metrics["read_mb_per_s"].value == pytest.approx(157.40 * 2**20 / 4.0 / 1e6)
    assert metrics["write_mb_per_s"].unit == "MB/s"
    assert metrics["create_files_per_s"].value == 200 / 0.5
    assert metrics["delete_files_per_s"].value == 196 / 0.25
    assert metrics["transaction_seconds"].better == Better.LOWER
    # Counts step by one; amounts by postmark's 2 decimals; our own clock: no step.
    assert metrics["transactions"].resolution == metrics["files_created"].resolution == 1
    assert metrics["written_bytes"].resolution == 0.01 * 2**20
    assert metrics["transactions_per_s"].resolution == 0


# -- gzip and sqlite inputs ------------------------------------------------------------


def test_gzip_input_is_deterministic_and_half_compressible(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    gz.write_input(a, 4 * gz.CHUNK + 123, seed=0)
    gz.write_input(b, 4 * gz.CHUNK + 123, seed=0)
    gz.write_input(c, 4 * gz.CHUNK + 123, seed=1)
    data = a.read_bytes()
    assert len(data) == 4 * gz.CHUNK + 123
    assert data == b.read_bytes() and data != c.read_bytes()
    ratio = len(zlib.compress(data, 6)) / len(data)
    assert 0.55 < ratio < 0.8  # random chunks stay, text chunks shrink ~3:1
    text = data[gz.CHUNK : 2 * gz.CHUNK]
    assert len(zlib.compress(text, 6)) < 0.5 * len(text)
    assert gz.argv(gz.GzipParams(size="1M"), a) == ["gzip", "-c", "-6", str(a)]
    assert "--synchronous" in gz.argv(gz.GzipParams(size="1M", synchronous=True, level=1), a)


def test_gzip_not_cold_flag() -> None:
    params = gz.GzipParams(size="100M")
    expected = gz.Gzip().expected_read_bytes(params, {})
    assert expected == 100 << 20  # the whole input, read cold
    assert cold_read_shortfall(expected, 100 << 20) is None
    assert cold_read_shortfall(expected, 50 << 20) is None  # COLD_READ_FRACTION = 0.5
    detail = cold_read_shortfall(expected, 1 << 20)
    assert detail is not None and "1.0 MiB of the 100.0 MiB" in detail


def test_sqlite_rows_and_connection(tmp_path: Path) -> None:
    params = sq.SqliteParams(inserts=50, journal_mode="WAL", synchronous="NORMAL")
    rows = sq.rows(params)
    assert rows == sq.rows(params) and len(rows) == 50
    conn = sq.connect(tmp_path / "x.db", params)
    try:
        for statement in sq.SCHEMA:
            conn.execute(statement)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
        assert not conn.in_transaction
        conn.execute(sq.INSERT, rows[0])
        assert not conn.in_transaction  # autocommit: every insert is its own transaction
    finally:
        conn.close()
    assert sq.SqliteParams(inserts=1).journal_mode == "DELETE"
    assert sq.SqliteParams(inserts=1).synchronous == "FULL"
    assert sq.Sqlite.defaults(Scale.FULL) == {"inserts": 12500}


# -- process helpers -------------------------------------------------------------------

_MARKING = """\
import sys, time
print("start", flush=True)
time.sleep(0.3)
sys.stdout.write("phase-a..."); sys.stdout.flush()
time.sleep(0.3)
print("done"); print("phase-b", flush=True)
print(sys.stdin.read().upper(), end="")
print("oops", file=sys.stderr)
"""


def test_run_watching_times_markers_and_feeds_stdin() -> None:
    t0 = time.monotonic()
    res, seen = _tools.run_watching(
        [sys.executable, "-c", _MARKING],
        ["phase-a", "phase-b", "never"],
        input_text="set x 1\nrun\n",
        timeout=30,
    )
    assert res.ok, res
    assert res.stdout.endswith("SET X 1\nRUN\n")
    assert res.stderr == "oops\n"
    assert set(seen) == {"phase-a", "phase-b"}
    assert t0 + 0.25 < seen["phase-a"] < seen["phase-b"]
    assert seen["phase-b"] - seen["phase-a"] >= 0.25


def test_run_watching_timeout_and_missing_program() -> None:
    res, seen = _tools.run_watching(
        [sys.executable, "-c", "import time; print('x', flush=True); time.sleep(30)"],
        ["x"],
        timeout=0.5,
    )
    assert res.returncode == 124 and "timed out" in res.stderr and "x" in seen
    res, seen = _tools.run_watching(["/nonexistent/tool"], ["x"], timeout=5)
    assert res.returncode == 127 and seen == {}


def test_run_to_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = "import sys; sys.stdout.buffer.write(bytes(range(256))); print('warn', file=sys.stderr)"
    res = _tools.run_to_file([sys.executable, "-c", code], out, timeout=30)
    assert res.ok and res.stderr == "warn\n" and res.stdout == ""
    assert out.read_bytes() == bytes(range(256))
    assert _tools.run_to_file(["/nonexistent/tool"], out, timeout=5).returncode == 127


def test_first_error_line() -> None:
    assert (
        _tools.first_error_line(result(2, "", "usage: x\nERROR: bad thing\n")) == "ERROR: bad thing"
    )
    assert _tools.first_error_line(result(2, "all fine\n", "something\n")) == "something"
    assert _tools.first_error_line(result(3)) == "exit status 3"
    failed = _tools.tool_failed("gzip", result(1, "", "gzip: x: No such file or directory\n"))
    assert isinstance(failed, TrialFailed)
    assert failed.message == "gzip: gzip: x: No such file or directory"
    assert failed.detail.startswith("$ tool arg\nexit status 1\n--- stderr (tail)")
