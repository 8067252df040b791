"""pgbench on a real PostgreSQL (Debian's) whose data directory is on real ext4 and xfs
loop filesystems, through the real runner (`Runner.run_cell`) and the `fsbench` command:
the metrics, the series and steady state, the server's settings as it ran, and the server
stopped on every path, by the run itself or, after a kill -9, by `fsbench doctor`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import available_fs
from fsbench.store.records import TrialRecord
from fsbench.system import servers
from fsbench.workloads import get
from tests.helpers import TEST_DATA_HOME, fsbench, ours
from tests.runcell import Bench, flags, loop_bench, metrics

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(get("pgbench").missing() is not None, reason="no PostgreSQL"),
]

FS = [fs for fs in ("ext4", "xfs") if fs in available_fs()]


@pytest.fixture(scope="module")
def bench() -> Iterator[Bench]:
    yield from loop_bench()  # 2 GiB: a tiny database and room for its WAL


def _processes(comm: str, under: Path) -> list[int]:
    """Processes named `comm` whose working directory is under `under`: PostgreSQL's
    server and every backend work in their data directory."""
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() != comm:
                continue
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if cwd.startswith(str(under)):
            found.append(int(pid))
    return found


def postgres_under(path: Path) -> list[int]:
    return _processes("postgres", path)


def clients_of(path: Path) -> list[int]:
    """pgbench clients whose command line names a socket under `path`."""
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "pgbench" in cmdline.split("\0")[0] and str(path) in cmdline:
            found.append(int(pid))
    return found


def assert_ok(record: TrialRecord) -> None:
    assert record.status == "ok", f"{record.message}\n{record.detail}"


def assert_left_nothing(workdir: Path) -> None:
    assert postgres_under(workdir) == []
    assert list(workdir.glob("server-*.json")) == []  # the note goes with the server
    assert list(workdir.glob("scratch-*")) == []


@pytest.mark.parametrize(("fs_name", "full_page_writes"), [(fs, fs != "ext4") for fs in FS], ids=FS)
def test_read_write_trial(bench: Bench, fs_name: str, full_page_writes: bool) -> None:
    """The tiny default (tpcb-like, 2 clients, 5 s): pgbench's TPS, latency percentiles
    from its log in order, the per-second series and their steady state in provenance,
    full_page_writes as asked and in force; the database on the filesystem under test."""
    (record,) = bench.trial(fs_name, "pgbench", full_page_writes=full_page_writes)
    assert_ok(record)
    m = metrics(record)
    assert m["tps"].value > 0 and m["tps"].unit == "tx/s" and m["tps"].better == "higher"
    p50, p95, p99 = (m[f"lat_p{p}_ms"].value for p in (50, 95, 99))
    assert 0 < p50 <= p95 <= p99 and m["lat_mean_ms"].value > 0
    assert m["transactions"].value > 0 and m["failed_transactions"].value == 0
    # pgbench's TPS and its transaction count over -T agree (connection time aside).
    assert m["tps"].value == pytest.approx(m["transactions"].value / 5, rel=0.2)
    prov = record.provenance
    assert prov["headline"][:2] == ["tps", "lat_p99_ms"]
    tps, lat = prov["series"]["tps"], prov["series"]["lat_p99_ms"]
    assert tps["unit"] == "tx/s" and tps["better"] == "higher" and lat["unit"] == "ms"
    assert len(tps["t"]) == len(tps["v"]) >= 3 and tps["t"][:2] == [0.0, 1.0]
    assert sum(tps["v"]) <= m["transactions"].value and all(v > 0 for v in tps["v"])
    assert len(lat["t"]) == len(lat["v"]) and all(v > 0 for v in lat["v"])
    steady = prov["steady"]
    assert steady["series"] == "tps" and steady.get("judged", True)
    assert ("steady_tps" in m) == steady["reached"] == ("not-steady" not in flags(record))
    facts = prov["pgbench"]
    want = "on" if full_page_writes else "off"
    assert facts["set"]["full_page_writes"] == facts["in_force"]["full_page_writes"] == want
    assert facts["in_force"]["listen_addresses"] == ""  # no TCP
    assert facts["in_force"]["unix_socket_directories"].startswith(str(bench.workdir))
    assert facts["scale"] == 1 and facts["db_bytes"] > 20e6
    assert_left_nothing(bench.workdir)
    with bench.mounted(fs_name) as mnt:
        assert (mnt / "pgdata" / "PG_VERSION").is_file()


def test_read_only_at_a_fixed_rate(bench: Bench) -> None:
    """select-only under -R 200: the rate is what the run did, and the schedule lag (the
    part of the latency spent waiting for the server) is reported."""
    (record,) = bench.trial(FS[-1], "pgbench", mode="read-only", rate=200)
    assert_ok(record)
    m = metrics(record)
    assert m["tps"].value == pytest.approx(200, rel=0.25)
    assert m["schedule_lag_ms"].value >= 0
    assert m["lat_p50_ms"].value <= m["lat_p95_ms"].value <= m["lat_p99_ms"].value
    assert "select-only" in record.provenance["pgbench"]["argv"]
    assert_left_nothing(bench.workdir)


def test_a_server_that_does_not_start_fails_the_trial_in_its_words(bench: Bench) -> None:
    """A setting the server refuses (max_connections past its 262143, for 300,000
    clients): the trial fails with the server's own words from its log, nothing left."""
    (record,) = bench.trial(FS[0], "pgbench", clients=300_000, threads=1)
    assert record.status == "failed"
    assert record.message.startswith("postgresql did not start"), record.message
    assert "max_connections" in record.message and "262143" in record.message
    assert_left_nothing(bench.workdir)


def test_cli_run_gives_tps_and_latency_per_config(workdir: Path) -> None:
    """The issue's check: `fsbench run --fs ext4,xfs --workload pgbench --scale tiny
    --reps 2 --json` gives TPS and latency percentiles per config, and no PostgreSQL of
    fsbench's is left."""
    work = workdir / "work"
    res = fsbench(
        "run",
        "--fs",
        ",".join(FS),
        "--workload",
        "pgbench",
        "--scale",
        "tiny",
        "--reps",
        "2",
        "--warmup",
        "0",  # the command but for the warm-up repetition: 4 trials, not 6
        "--json",
        "--workdir",
        str(work),
        "--db",
        str(workdir / "r.db"),
        "--image-size",
        "2G",
        timeout=600,
    )
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)["rows"]
    for fs in FS:
        for metric in ("tps", "lat_p50_ms", "lat_p95_ms", "lat_p99_ms"):
            row = next(r for r in rows if r["config"] == fs and r["metric"] == metric)
            assert row["status"] == "ok" and row["n"] == 2 and row["mean"] > 0, row
    assert postgres_under(workdir) == []
    assert ours(workdir) == ([], [])
    # The HTML report of the run draws the per-second TPS and the latency over time.
    page = fsbench("report", "--db", str(workdir / "r.db"), "--format", "html")
    assert page.returncode == 0, page.stderr
    assert "Over time: throughput and latency percentiles per second" in page.stdout
    assert 'alt="pgbench: per second' in page.stdout


def test_too_small_an_image_is_refused_in_one_line(workdir: Path) -> None:
    res = fsbench(
        "run",
        "--fs",
        "ext4",
        "--workload",
        "pgbench",
        "--scale",
        "tiny",
        "--workdir",
        str(workdir / "work"),
        "--db",
        str(workdir / "r.db"),
        "--image-size",
        "1G",
    )
    assert res.returncode == 2, res.stdout + res.stderr
    assert "pgbench" in res.stderr and "use a larger --image-size" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_a_killed_run_leaves_the_server_to_doctor(workdir: Path) -> None:
    """kill -9 of `fsbench run` in the timed phase: the server (the postgres user's, which
    no parent-death signal reaches) keeps running and holds the mount; the client dies
    with fsbench. `fsbench doctor` stops the server from the run's note, then releases
    the mount and the loop device."""
    work = workdir / "work"
    env = {**os.environ, "XDG_DATA_HOME": str(TEST_DATA_HOME)}
    argv = [sys.executable, "-m", "fsbench.cli", "run", "--fs", FS[0], "--workload", "pgbench"]
    argv += ["--set", "duration=120", "--reps", "1", "--warmup", "0", "--scale", "tiny"]
    argv += ["--image-size", "2G", "--workdir", str(work), "--db", str(workdir / "r.db")]
    argv += ["--no-report"]
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    note = servers.note_path(work, pid=child.pid)
    txlog = servers.socket_dir(work, "pgbench-log", pid=child.pid)
    try:
        deadline = time.monotonic() + 120
        while not (note.exists() and txlog.is_dir() and clients_of(work)):
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            assert time.monotonic() < deadline, "the run never reached its timed phase"
            time.sleep(0.1)
    finally:
        child.kill()
        child.wait()
    assert postgres_under(work) != []  # left running, as the note expects
    deadline = time.monotonic() + 15
    while clients_of(work) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert clients_of(work) == []  # the client died with its parent
    res = subprocess.run(
        [sys.executable, "-m", "fsbench.cli", "doctor", "--workdir", str(work), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert postgres_under(work) == [], res.stdout + res.stderr
    assert not note.exists()
    assert ours(work) == ([], []), res.stdout + res.stderr
    assert any("stopped postgresql" in line for line in json.loads(res.stdout)["released"])
