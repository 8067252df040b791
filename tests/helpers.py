"""Helpers for tests that run the `fsbench` command as a user would."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from fsbench.analysis.rows import Row
from fsbench.execute.context import Context
from fsbench.reports import export, run_report
from fsbench.reports.source import RunReport
from fsbench.store.records import RunRecord
from fsbench.system import filesystems, fsops
from fsbench.vm.cache import DEFAULT_CACHE
from fsbench.workloads.base import Scale

# The user's ~/.local/share/fsbench (default store, saved feature tables) stays theirs;
# each pytest-xdist worker has its own, as a serial run has one.
TEST_DATA_HOME = Path(
    "/var/tmp/fsbench-tests/xdg-data"
    + (f"-{w}" if (w := os.environ.get("PYTEST_XDIST_WORKER")) else "")
)

# The VM tests: the guest image cache they share (built once), and when they can run.
VM_CACHE = DEFAULT_CACHE  # FSBENCH_VM_CACHE when set: a cold run's own, empty
# The guest every VM test asks for: 1 GiB and one vCPU. The suite runs two tests at once on
# a 2-core machine, and under TCG two guests at once with two vCPUs each run far slower than
# two with one (bench/results/guest_cpus.json); no VM test asserts anything of a second vCPU.
GUEST = ("--guest-ram", "1024", "--guest-cpus", "1")
VM_MARKS = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="the VM target needs root"),
    pytest.mark.skipif(
        shutil.which("qemu-system-x86_64") is None or shutil.which("qemu-img") is None,
        reason="no QEMU (apt-get install qemu-system-x86 qemu-utils)",
    ),
    pytest.mark.skipif(
        shutil.which("debootstrap") is None, reason="no debootstrap (apt-get install debootstrap)"
    ),
]


def fsbench(
    *args: str, timeout: float = 300, report: bool = False, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the CLI (in `cwd`, else here). `fsbench run` writes no HTML report unless asked
    (charts take seconds; tests/integration/test_html_report.py covers them)."""
    return subprocess.run(
        [sys.executable, "-m", "fsbench.cli", *cli_args(*args, report=report)],
        cwd=cwd,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def crash_run_args(workdir: Path, db: Path, *args: str) -> list[str]:
    """`fsbench run ARGS` as the crash tests give it: the tiny scale, the test guest, a
    2 GiB scratch disk, the test's work directory and store."""
    return [
        "run",
        *args,
        *["--scale", "tiny", *GUEST, "--image-size", "2G"],
        *["--workdir", str(workdir / "work"), "--db", str(db)],
    ]


def replayed_case(
    case: dict[str, Any], workdir: Path, db: Path, timeout: float = 1500
) -> dict[str, Any]:
    """A kept crash case's own replay command, run as a user would paste it (with the
    crash tests' flags): its JSON report."""
    argv = shlex.split(case["replay"])
    assert argv[:2] == ["fsbench", "run"] and f"replay={case['seed']}" in argv
    res = fsbench(*crash_run_args(workdir, db, *argv[2:]), "--json", timeout=timeout)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout)  # type: ignore[no-any-return]


def cli_args(*args: str, report: bool = False) -> list[str]:
    """The argv `fsbench()` gives the CLI: `run` without its HTML report unless asked."""
    argv = list(args)
    if argv and argv[0] == "run" and not report and "--no-report" not in argv:
        argv.append("--no-report")
    return argv


def cli_env() -> dict[str, str]:
    """The environment `fsbench()` gives the CLI: the tests' own XDG_DATA_HOME."""
    return {**os.environ, "XDG_DATA_HOME": str(TEST_DATA_HOME)}


def default_interrupts() -> None:
    """preexec_fn for a child that a test will interrupt: SIGINT and SIGHUP back to their
    defaults. A shell that starts the suite in the background (`nohup make test &`) hands
    both down ignored, and fsbench rightly leaves an ignored signal ignored (nohup), so the
    child would never see the test's Ctrl-C or hang-up."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def ours(workdir: Path) -> tuple[list[str], list[str]]:
    """Loop devices backed by files in workdir, and mounts under it."""
    out = subprocess.run(["losetup", "-J", "--list"], capture_output=True, text=True).stdout
    loops = [
        d["name"]
        for d in json.loads(out or '{"loopdevices": []}')["loopdevices"]
        if str(d.get("back-file") or "").startswith(str(workdir))
    ]
    mounts = [e.mountpoint for e in fsops.mount_entries() if e.mountpoint.startswith(str(workdir))]
    return loops, mounts


def context(fs_name: str, device: str, mountpoint: Path, cache_dir: Path | None = None) -> Context:
    """The runner's own TrialContext for a workload test: the filesystem is already mounted
    at mountpoint (by the make_fs fixture), except for `raw`."""
    ctx = Context(
        fs=filesystems.get(fs_name),
        device=device,
        mountpoint=mountpoint,
        mount_options="",
        cache_dir=cache_dir or mountpoint.parent / "cache",
        scale=Scale.TINY,
    )
    ctx.mounted = fs_name != "raw" and fsops.is_mounted(mountpoint)
    return ctx


def assert_every_slot_once(trials: Sequence[Any], planned: int, restarts: int = 1) -> None:
    """A resumed run kept every planned slot exactly once; beyond them, only the warm-ups
    a restart adds (one per restart at most: the first trial after it is not counted)."""
    from fsbench.execute.schedule import WARMUP_REP

    assert sorted(t.seq for t in trials if t.seq < planned) == list(range(planned))
    extra = [t for t in trials if t.seq >= planned]
    assert all(t.rep == WARMUP_REP for t in extra), [(t.seq, t.rep) for t in extra]
    assert len(extra) <= restarts


def assert_intervals_agree(comparisons: Sequence[dict[str, Any]]) -> int:
    """Every pair of a JSON report's comparisons agrees with the interval printed beside
    it: a tested pair whose interval excludes 1 is an order or, inside the margin, an
    equivalence; an undecided pair's interval holds 1; a timing below n = 3 has no interval.
    The pairs with an interval."""
    checked = 0
    for comparison in comparisons:
        for pair in comparison["verdict"]["pairs"]:
            ci, kind = pair["ci"], pair["kind"]
            if pair["test"] == "Welch" and min(pair["n"]) < 3:
                assert ci is None, pair
            if ci is None or pair["test"] != "Welch":
                continue
            checked += 1
            excludes = ci[0] > 1 or ci[1] < 1
            if kind == "equivalent":
                # Equivalence is its interval inside the margin: it may exclude 1 (a
                # difference real but too small to matter), never reach past the margin.
                margin = comparison["verdict"].get("margin") or 0.05
                assert 1 - margin <= ci[0] and ci[1] <= 1 + margin, (
                    comparison["verdict"]["text"], pair
                )  # fmt: skip
            elif excludes:
                assert kind == "order", (comparison["verdict"]["text"], pair)
            if kind == "undecided":
                assert ci[0] <= 1 <= ci[1], (comparison["verdict"]["text"], pair)
    return checked


def not_ok_trials(db: Path | str, run_id: int | None = None) -> str:
    """For a failure message: the trials of run `run_id` (the latest by default) that did
    not end ok, each with its host, config, status, message and detail's tail (a guest's
    console, a tool's output); "" when there is no such store or run."""
    from fsbench.store.results import Store

    if isinstance(db, Path) and not db.is_file():
        return ""
    store = Store(db)
    run_id = store.latest_run_id() if run_id is None else run_id
    if run_id is None:
        return ""
    return "".join(
        f"\n{t.host} {t.config} {t.workload} seq {t.seq}: {t.status}: {t.message}\n"
        f"{t.detail[-3000:]}"
        for t in store.run_trials(store.get_run(run_id))
        if t.status != "ok"
    )


def report_as(
    fmt: str,
    run: RunRecord,
    rows: Sequence[Row],
    calibration_run: int | None = None,
    all_metrics: bool = False,
) -> str:
    """What `fsbench report --format FMT` writes of a run and its rows (records in memory,
    not read from a store)."""
    report = RunReport(run, [], list(rows), calibration_run=calibration_run)
    return export.write(run_report.of(report, all_metrics), fmt)


# The user's own workloads in one plan: a shell line making files in the filesystem under
# test, their count parsed as a metric (50); and a trace recorded on this host, replayed,
# named as people name it: relative to the directory fsbench starts in.
YOUR_OWN_PLAN = """
name = "your-own"
[[fs]]
type = "ext4"

[[workload]]
name = "command"
[workload.params]
shell = "mkdir made && for i in $(seq 1 50); do echo $i > made/f$i; done && ls made | wc -l"
metric = { name = "files_made", pattern = "^([0-9]+)$", unit = "files", better = "higher" }

[[workload]]
name = "replay"
params = { trace = "TRACE" }
"""


def your_own_plan(workdir: Path) -> tuple[Path, Path]:
    """YOUR_OWN_PLAN in workdir, its trace recorded there (a tree made, written, renamed,
    removed) and named relative to workdir: the plan's path and the trace's."""
    tree = workdir / "tree"
    tree.mkdir()
    trace = workdir / "made.fsbt.gz"
    program = "mkdir a && echo hello > a/x && cat a/x > a/y && mv a/y a/z && rm a/x && sync"
    res = fsbench("record", "-o", str(trace), "--dir", str(tree), "--", "sh", "-c", program)
    assert res.returncode == 0, res.stderr
    plan = workdir / "plan.toml"
    plan.write_text(YOUR_OWN_PLAN.replace("TRACE", trace.name))
    return plan, trace
