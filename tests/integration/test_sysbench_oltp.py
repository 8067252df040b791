"""sysbench-oltp at tiny scale through the real runner, on real ext4 and xfs loop
filesystems with a real MariaDB (fsbench's own mariadbd, its data on the filesystem under
test): metrics, series and steady state; InnoDB's settings in force as the server itself
reports them; a setting MariaDB refuses; no server left on any path, also after kill -9
of `fsbench run` (the next `fsbench doctor` stops it before it releases the mount)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import available_fs
from fsbench.execute import runner
from fsbench.plan.model import Cell, FsConfig
from fsbench.store.records import TrialRecord
from fsbench.system import servers
from fsbench.workloads import get
from fsbench.workloads.base import Scale
from tests.helpers import TEST_DATA_HOME, ours
from tests.runcell import Bench, flags, loop_bench, metrics

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(get("sysbench-oltp").missing() is not None, reason="make install"),
]

FS = [fs for fs in ("ext4", "xfs") if fs in available_fs()]
WORKLOAD = "sysbench-oltp"


@pytest.fixture(scope="module")
def bench() -> Iterator[Bench]:
    yield from loop_bench()


def processes(name: str, under: Path, arg: str | None = None) -> list[int]:
    """Pids of `name` whose command line names a path under `under` (fsbench's own), and
    has `arg` among its arguments if given."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = [
                a.decode(errors="replace") for a in (entry / "cmdline").read_bytes().split(b"\0")
            ]
        except OSError:
            continue
        if argv and Path(argv[0]).name == name and any(str(under) in a for a in argv):
            if arg is None or arg in argv:
                found.append(int(entry.name))
    return found


def trial(bench: Bench, fs: str, **params: object) -> TrialRecord:
    (record,) = bench.trial(fs, WORKLOAD, **params)
    assert processes("mariadbd", bench.workdir) == [], "a server was left running"
    assert not servers.note_path(bench.workdir).exists()
    assert not servers.socket_dir(bench.workdir, "mariadb").exists()
    return record


def trial_ok(bench: Bench, fs: str, **params: object) -> TrialRecord:
    record = trial(bench, fs, **params)
    assert record.status == "ok", f"{record.message}\n{record.detail}"
    return record


@pytest.mark.parametrize("fs_name", FS)
def test_tiny_trial(bench: Bench, fs_name: str) -> None:
    record = trial_ok(bench, fs_name)
    m = metrics(record)
    assert m["tps"].value > 0 and m["qps"].value > m["tps"].value
    p50, p95, p99 = (m[f"lat_p{p}_ms"].value for p in (50, 95, 99))
    assert 0 < p50 <= p95 <= p99 <= m["lat_max_ms"].value + 0.01
    assert m["lat_avg_ms"].value > 0 and m["reconnects"].value == 0
    prov = record.provenance
    assert prov["headline"] == ["tps", "lat_p99_ms"]
    # The per-second series, one point a second of the run.
    series = prov["series"]
    assert set(series) == {"tps", "lat_p95_ms"}
    duration = get(WORKLOAD).defaults(Scale.TINY)["duration"]
    assert len(series["tps"]["v"]) >= duration - 1 and min(series["tps"]["v"]) > 0
    assert series["tps"]["t"] == series["lat_p95_ms"]["t"]
    # Steady state judged on tps, and its mean stored where it held.
    assert prov["steady"]["series"] == "tps"
    assert ("steady_tps" in m) == prov["steady"]["reached"]
    # What the server itself said was in force; its data on the filesystem under test.
    variables = prov["mariadb"]["variables"]
    assert variables["innodb_doublewrite"] == "ON" and variables["innodb_page_size"] == "16384"
    assert variables["innodb_flush_method"] == "O_DIRECT"
    assert variables["skip_networking"] == "ON"
    mnt = runner.mount_root(bench.workdir)
    assert variables["datadir"] == f"{mnt}/mariadb/"
    assert variables["pid_file"] == prov["mariadb"]["pid_file"]
    # Its own tmpdir beside its pid file, never the machine's /tmp (where a server starting
    # deletes the #sql* files of every other one).
    assert Path(variables["tmpdir"]) == Path(variables["pid_file"]).parent / "tmp"
    with bench.mounted(fs_name) as look:
        assert (look / "mariadb" / "sbtest" / "sbtest1.ibd").stat().st_size > 1 << 20
    assert set(flags(record)) <= {"cpu-bound", "not-steady"}, flags(record)


@pytest.mark.parametrize("doublewrite", [True, False])
def test_doublewrite_in_force(bench: Bench, doublewrite: bool) -> None:
    """With 64k pages a 32M buffer pool holds 512 pages: the run writes pages out, through
    the doublewrite buffer only when it is on."""
    record = trial_ok(bench, FS[0], doublewrite=doublewrite, page_size="64k")
    variables = record.provenance["mariadb"]["variables"]
    assert variables["innodb_doublewrite"] == ("ON" if doublewrite else "OFF")
    assert variables["innodb_page_size"] == "65536"
    m = metrics(record)
    assert m["innodb_bytes_written"].value > 0
    if doublewrite:
        assert m["doublewrite_pages"].value > 0
    else:
        assert m["doublewrite_pages"].value == 0


@pytest.mark.parametrize("fs_name", FS)
def test_4k_pages(bench: Bench, fs_name: str) -> None:
    record = trial_ok(bench, fs_name, page_size="4k")
    assert record.provenance["mariadb"]["variables"]["innodb_page_size"] == "4096"
    assert metrics(record)["tps"].value > 0


def test_a_setting_mariadb_refuses_is_unsupported(bench: Bench) -> None:
    record = trial(bench, FS[0], page_size="64k", buffer_pool="16M")
    assert record.status == "unsupported", record.message
    assert "innodb_page_size=65536 requires innodb_buffer_pool_size >= 21 MiB" in record.message


def test_a_timed_out_trial_stops_its_server(bench: Bench) -> None:
    """The per-trial limit fires in the middle of sysbench's run: `release` stops the
    server and the runner unmounts."""
    defaults = {
        k: v[0] if isinstance(v, list) else v for k, v in get(WORKLOAD).defaults(Scale.TINY).items()
    }
    cell = Cell(FsConfig(type=FS[0]), WORKLOAD, {**defaults, "duration": 120})
    (record,) = bench.runner(Scale.TINY, timeout=15).run_cell(1, 1, cell)
    assert record.status == "failed" and "timed out" in record.message
    assert processes("mariadbd", bench.workdir) == []
    assert processes("sysbench", bench.workdir) == []
    assert ours(bench.workdir)[1] == []  # nothing mounted


def _wait(what: str, done: Callable[[], bool], child: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while not done():
        assert child.poll() is None, log.read_text()
        assert time.monotonic() < deadline, f"{what} never happened"
        time.sleep(0.1)


def test_a_killed_run_leaves_no_server(workdir: Path) -> None:
    """kill -9 of `fsbench run` in the middle of sysbench's run: the server (another
    user's: no parent-death signal reaches it) keeps running and holding the mount until
    the next `fsbench doctor` stops it, releases the mount and the loop device; the
    sysbench client dies with fsbench."""
    work = workdir / "work"
    log = workdir / "run.log"
    env = {**os.environ, "XDG_DATA_HOME": str(TEST_DATA_HOME)}
    argv = [sys.executable, "-m", "fsbench.cli", "run", "--fs", "ext4", "--workload", WORKLOAD]
    argv += ["--set", "duration=120", "--reps", "1", "--warmup", "0", "--scale", "tiny"]
    argv += ["--image-size", "1G", "--workdir", str(work), "--db", str(workdir / "r.db")]
    argv += ["--no-report"]
    with log.open("wb") as out:
        child = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
    note = servers.note_path(work, pid=child.pid)
    try:
        _wait(
            "sysbench's timed run",
            lambda: note.exists() and processes("sysbench", work, "run") != [],
            child,
            log,
        )
    finally:
        child.kill()
        child.wait()
    deadline = time.monotonic() + 30
    while processes("sysbench", work) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes("sysbench", work) == []  # its parent-death signal
    assert processes("mariadbd", work) != []  # left for the doctor
    assert ours(work)[1] != []
    res = subprocess.run(
        [sys.executable, "-m", "fsbench.cli", "doctor", "--workdir", str(work), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert processes("mariadbd", work) == [], res.stdout + res.stderr
    assert not note.exists()
    assert ours(work) == ([], []), res.stdout + res.stderr
