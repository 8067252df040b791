"""The `command` workload through the real runner on a loop image (`Runner.run_cell`: the
mkfs, setup, settle, clock, flush and monitors of a run), and through the real CLI: a real
program compared on ext4 and xfs, its parsed metric in the report, a failing command
recorded while the run goes on, a time limit, what a command leaves running killed, no
shell unless the plan writes one."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from fsbench.execute.targets import stale
from fsbench.store.results import Store
from fsbench.system import contained
from tests.helpers import fsbench
from tests.runcell import Bench, loop_bench, metrics

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def bench() -> Iterator[Bench]:
    yield from loop_bench(1 << 30)


def running(marker: str) -> list[int]:
    """Processes whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "cmdline").read_text():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_the_command_is_timed_with_its_cpu_after_an_untimed_setup(bench: Bench) -> None:
    spin = "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; echo spun $i > spun.txt"
    m = bench.ok(
        "ext4",
        "command",
        setup_shell="mkdir work",
        cwd="work",
        run=["sh", "-c", spin],
    )
    assert m["seconds"].value > 0 and m["flush_seconds"].value >= 0
    # The shell's own loop: its CPU, counted by its group, of the command alone.
    assert m["command_user_s"].value > 0.05 and m["command_user_s"].unit == "s"
    assert m["command_user_s"].value <= m["cpu_user_s"].value + 0.05
    assert "device_write_bytes" in m
    with bench.mounted("ext4") as mnt:
        assert (mnt / "work" / "spun.txt").read_text() == "spun 100000\n"


def test_run_starts_no_shell_and_shell_does(bench: Bench) -> None:
    """`*` and `$(...)` mean something only to a shell: given as argv, expr sees `*` (and
    multiplies); in a shell line the substitution runs."""
    product = {"name": "product", "pattern": "^([0-9]+)$", "better": "higher"}
    # A file in the directory: a shell would glob `*` into its name and expr would fail.
    (record,) = bench.trial(
        "ext4", "command", setup=["touch", "a-file"], run=["expr", "6", "*", "7"], metric=product
    )
    assert record.status == "ok", f"{record.message}\n{record.detail}"
    assert metrics(record)["product"].value == 42
    assert record.provenance["command"]["argv"] == ["expr", "6", "*", "7"]
    assert record.provenance["headline"] == ["product", "seconds"]
    m = bench.ok("ext4", "command", shell="echo $(expr 6 '*' 7) > out && cat out", metric=product)
    assert m["product"].value == 42


def test_a_clean_environment_plus_env(bench: Bench) -> None:
    os.environ["FSBENCH_LEAK_CHECK"] = "leaked"
    try:
        check = (
            'test -z "$FSBENCH_LEAK_CHECK" && test "$GREETING" = hello && test -d "$HOME" '
            '&& test -z "$(ls -A "$HOME")" && test "$(pwd)" = "$(realpath .)" && echo ok=1'
        )
        m = bench.ok(
            "ext4",
            "command",
            run=["sh", "-c", check],
            env={"GREETING": "hello"},
            metric={"name": "ok", "pattern": "ok=([0-9])", "better": "higher"},
        )
    finally:
        del os.environ["FSBENCH_LEAK_CHECK"]
    assert m["ok"].value == 1


def test_a_failing_command_is_a_failed_trial_with_its_status_and_last_lines(
    bench: Bench,
) -> None:
    (record,) = bench.trial(
        "xfs", "command", shell="seq 1 50; echo 'make: *** [all] Error 1' >&2; exit 3"
    )
    assert record.status == "failed"
    assert record.message == "command: exit status 3: make: *** [all] Error 1"
    assert "$ /bin/sh -c seq 1 50;" in record.detail
    assert "--- stdout (last 20 lines)\n31\n32" in record.detail and "\n50" in record.detail
    assert "\n30\n" not in record.detail  # only the last lines
    (killed,) = bench.trial("xfs", "command", run=["sh", "-c", "kill -SEGV $$"])
    assert killed.status == "failed"
    assert killed.message == "command: killed by signal 11 (SIGSEGV)"
    (setup,) = bench.trial("xfs", "command", setup=["false"], run=["true"])
    assert (setup.status, setup.message) == ("failed", "setup: exit status 1")


def test_a_metric_its_pattern_does_not_find_fails_the_trial_naming_it(bench: Bench) -> None:
    (record,) = bench.trial(
        "ext4",
        "command",
        run=["echo", "latency 12 ms"],
        metric=[
            {"name": "latency", "pattern": "latency ([0-9]+) ms", "unit": "ms", "better": "lower"},
            {"name": "tps", "pattern": "tps = ([0-9.]+)", "unit": "tx/s", "better": "higher"},
        ],
    )
    assert record.status == "failed"
    assert record.message.startswith("metric tps: 'tps = ([0-9.]+)' matched nothing")
    assert "latency 12 ms" in record.detail


def test_the_time_limit_kills_the_command_whole_and_says_what_it_printed(
    bench: Bench,
) -> None:
    marker = "600.4917"
    runner = bench.runner(timeout=3)
    from fsbench.plan.model import Cell, FsConfig

    cell = Cell(
        FsConfig(type="ext4"),
        "command",
        {"shell": f"echo started; sleep {marker} & sleep {marker}"},
    )
    (record,) = runner.run_cell(1, 1, cell)
    assert record.status == "failed"
    assert record.message.startswith("timed out after 3 s")
    assert "started" in record.detail
    assert running(marker) == []


def test_what_the_command_leaves_running_is_killed_daemons_too(bench: Bench) -> None:
    marker = "600.7331"
    # A child in the background, and a daemon that left the command's session (setsid):
    # the cgroup holds both.
    shell = f"sleep {marker} & setsid sleep {marker} & echo left"
    (record,) = bench.trial("ext4", "command", shell=shell)
    assert record.status == "ok", f"{record.message}\n{record.detail}"
    facts = record.provenance["command"]
    assert facts["held_by"] == "cgroup" and facts["left_running"] == 2
    assert running(marker) == []


def test_cwd_may_not_leave_the_filesystem_by_a_link_the_setup_made(bench: Bench) -> None:
    (record,) = bench.trial("ext4", "command", setup=["ln", "-s", "/etc", "out"], cwd="out",
                            run=["true"])  # fmt: skip
    assert record.status == "failed"
    assert record.message == "cwd out: leaves the filesystem under test (to /etc)"
    (missing,) = bench.trial("ext4", "command", cwd="nowhere", run=["true"])
    assert missing.message == "cwd nowhere: no such directory in the filesystem under test"


@pytest.mark.alone  # another worker's cold trial drops the page cache the warm read counts on
def test_cache_and_flush_are_the_plans(bench: Bench) -> None:
    setup = ["dd", "if=/dev/urandom", "of=data", "bs=1M", "count=32", "status=none"]
    read = ["cat", "data"]
    cold = bench.ok("ext4", "command", setup=setup, run=read, cache="cold-remount")
    warm = bench.ok("ext4", "command", setup=setup, run=read, cache="warm", flush="none")
    assert cold["device_read_bytes"].value >= 32 << 20
    assert warm["device_read_bytes"].value < 4 << 20
    assert "flush_seconds" in cold and "flush_seconds" not in warm


# tar's own count of the bytes it read, on stderr: a metric as a plan or --set gives it.
TAR_BYTES = (
    '{ name = "tar_bytes", pattern = "Total bytes read: ([0-9]+)", unit = "B", better = "higher" }'
)
PLAN = """
name = "command-tar"
[[fs]]
type = "ext4"
[[fs]]
type = "xfs"

[[workload]]
name = "command"
[workload.params]
setup_shell = '''set -e
mkdir src
for i in $(seq 1 300); do seq 1 $i > src/f$i; done
tar cf archive.tar src
rm -r src'''
run = ["tar", "--totals", "-xf", "archive.tar"]
metric = TAR_BYTES

[[workload]]
name = "command"
params = { shell = "echo half way; echo 'no space left' >&2; exit 28" }
""".replace("TAR_BYTES", TAR_BYTES)


def test_a_real_program_compared_on_ext4_and_xfs_with_its_metric(workdir: Path) -> None:
    """tar extracting a tarball the setup made, ext4 against xfs: verdicts like any
    workload's, tar's own byte count (on stderr) a metric with its unit and direction; a
    command that fails beside it is a failed trial, and the run goes on."""
    (workdir / "plan.toml").write_text(PLAN)
    db = workdir / "r.db"
    res = fsbench(
        "run", str(workdir / "plan.toml"), "--scale", "tiny", "--reps", "3", "--warmup", "0",
        "--image-size", "1G", "--workdir", str(workdir / "work"), "--db", str(db),
    )  # fmt: skip
    assert res.returncode == 4, res.stderr  # some trials failed: the run went on
    doc = json.loads(fsbench("report", "--db", str(db), "--format", "json").stdout)
    rows = {(r["config"], r["metric"]): r for r in doc["rows"] if r["params"].get("run")}
    for fs in ("ext4", "xfs"):
        tar = rows[(fs, "tar_bytes")]
        assert (tar["unit"], tar["better"], tar["n"]) == ("B", "higher", 3)
        assert tar["mean"] > 300 * 1000  # the 300 files, read whole
        assert rows[(fs, "seconds")]["n"] == 3
    verdicts = {
        c["verdict"]["metric"]: c["verdict"]
        for c in doc["comparisons"]
        if c["workload"] == "command" and c["dims"].get("run")
    }
    assert {"seconds", "tar_bytes"} <= set(verdicts)
    assert all(v["text"] for v in verdicts.values())
    # The same bytes on both: exact counts, told apart by nothing.
    assert "ext4 = xfs" in verdicts["tar_bytes"]["text"]
    failed = [t for t in Store(db).get_trials(doc["run"]) if t.status == "failed"]
    assert len(failed) == 6 and {t.config for t in failed} == {"ext4", "xfs"}
    assert failed[0].message == "command: exit status 28: no space left"
    assert "half way" in failed[0].detail
    table = fsbench("report", "--db", str(db)).stdout
    assert "tar_bytes (bytes, higher is better)" in table
    # The same command again, given on the command line (a comma inside the metric's
    # braces stays in its value): its cells are the plan's, so compare and history pair
    # them with the first run's.
    setup = tomllib.loads(PLAN)["workload"][0]["params"]["setup_shell"]
    again = fsbench(
        "run", "--fs", "ext4", "--workload", "command", "--set", f"setup_shell={setup}",
        "--set", "run=tar --totals -xf archive.tar", "--set", f"metric={TAR_BYTES}",
        "--scale", "tiny", "--reps", "3", "--warmup", "0",
        "--image-size", "1G", "--workdir", str(workdir / "work"), "--db", str(db),
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    second = Store(db).list_runs()[-1].id
    res = fsbench("compare", str(doc["run"]), str(second), "--db", str(db), "--json")
    assert res.returncode == 0, res.stderr
    compared = {c["metric"]: c for c in json.loads(res.stdout)["cells"]}
    assert compared["tar_bytes"]["verdict"] == "equivalent"  # the same bytes, every time
    assert compared["seconds"]["config"] == "ext4" and compared["seconds"]["b"]["n"] == 3
    shown = fsbench("compare", str(doc["run"]), str(second), "--db", str(db)).stdout
    assert "run=tar --totals -xf archive.tar" in shown and "env=" not in shown
    res = fsbench("history", "--db", str(db), "--workload", "command", "--format", "json")
    assert res.returncode == 0, res.stderr
    series = {
        (s["config"], s["metric"]): [p["run"] for p in s["points"]]
        for s in json.loads(res.stdout)["series"]
    }
    assert series[("ext4", "tar_bytes")] == [doc["run"], second]
    assert series[("xfs", "tar_bytes")] == [doc["run"]]


def test_the_command_group_of_a_killed_run_is_released_with_what_it_held(
    workdir: Path,
) -> None:
    """fsbench killed (-9) while its command ran leaves the command's group and what is in
    it: the next run (or doctor) kills them and removes the group."""
    root = contained.v2_group_root()
    if root is None:
        pytest.skip("no cgroup v2 hierarchy to write")
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid no process has now: the dead run's
    group = root / f"{contained.GROUP_PREFIX}{gone.pid}-0123abcd"
    group.mkdir()
    marker = "600.2213"
    left = subprocess.Popen(
        ["sleep", marker],
        preexec_fn=lambda: (group / "cgroup.procs").write_text("0\n"),
        start_new_session=True,
    )
    try:
        lines = stale.release_stale(workdir)
        assert f"removed command cgroup {group} (pid {gone.pid} gone)" in lines
        assert left.wait(timeout=10) == -9 and not group.exists()
    finally:
        left.kill()
        left.wait()
        if group.exists():
            group.rmdir()
