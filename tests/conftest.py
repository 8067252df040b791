"""Shared fixtures. Integration fixtures make real sparse images and loop devices under
/var/tmp and release them (mounts first, then loop devices) even when a test fails."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest

from fsbench.system import filesystems, fsops
from fsbench.vm import ensure_image
from fsbench.vm.images import GuestImage
from tests.helpers import VM_CACHE

# A real PostgreSQL, started once per session; where the suite's time goes (printed at
# the end, and kept by bench/suite_time.py); the planted Linux history every test that
# builds a kernel shares.
pytest_plugins = ["tests.pgcluster", "tests.suitetime", "tests.plantedlinux"]

TEST_ROOT = Path("/var/tmp/fsbench-tests")
CORE_FS = ("ext2", "ext3", "ext4", "xfs", "btrfs")


def available_fs() -> list[str]:
    kernel = filesystems.kernel_filesystems()
    return [
        name
        for name in CORE_FS
        if filesystems.availability(filesystems.get(name), kernel).available
    ]


def _release(mountpoints: list[Path], loop: str | None, image: Path | None) -> None:
    for mnt in reversed(mountpoints):
        if fsops.is_mounted(mnt):
            subprocess.run(["umount", str(mnt)], check=False)
            if fsops.is_mounted(mnt):
                subprocess.run(["umount", "-l", str(mnt)], check=False)
    if loop:
        subprocess.run(["losetup", "-d", loop], check=False, capture_output=True)
    if image and image.exists():
        image.unlink()


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A private directory under /var/tmp (a real disk filesystem, not tmpfs)."""
    path = TEST_ROOT / uuid.uuid4().hex[:12]
    path.mkdir(parents=True)
    try:
        yield path
    finally:
        # Whatever a killed fsbench left under it (a test that SIGKILLs a run and then
        # fails before the run is resumed): mounts first, then loop devices.
        _release_under(path)
        subprocess.run(["rm", "-rf", "--one-file-system", str(path)], check=False)


def _release_under(path: Path) -> None:
    top = str(path)
    for entry in sorted(fsops.mount_entries(), key=lambda e: -len(e.mountpoint)):
        if entry.mountpoint.startswith(top):
            subprocess.run(["umount", "-l", entry.mountpoint], check=False)
    out = subprocess.run(["losetup", "-J", "--list"], capture_output=True, text=True).stdout
    for dev in json.loads(out or '{"loopdevices": []}').get("loopdevices", []):
        if str(dev.get("back-file") or "").startswith(top):
            subprocess.run(["losetup", "-d", dev["name"]], check=False)


@pytest.fixture
def loopdev(workdir: Path) -> Iterator[str]:
    """A 1 GiB sparse image attached with direct I/O: big enough for xfs and btrfs."""
    if os.geteuid() != 0:
        pytest.skip("needs root for loop devices")
    image = workdir / "disk.img"
    with image.open("wb") as f:
        f.truncate(1 << 30)
    loop = subprocess.run(
        ["losetup", "--direct-io=on", "--find", "--show", str(image)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    mounts_before = {e.mountpoint for e in fsops.mount_entries()}
    try:
        yield loop
    finally:
        stray = [
            Path(e.mountpoint)
            for e in fsops.mount_entries()
            if e.source == loop and e.mountpoint not in mounts_before
        ]
        _release(stray, loop, image)


MountFactory = Callable[..., Path]


@pytest.fixture
def make_fs(loopdev: str, workdir: Path) -> Iterator[MountFactory]:
    """make_fs("ext4", mkfs=["-I", "256"], mount="noatime") -> mounted path on the loop device."""
    made: list[Path] = []

    def factory(fs_name: str, mkfs: list[str] | None = None, mount: str = "") -> Path:
        fs = filesystems.get(fs_name)
        fsops.mkfs(fs, mkfs or [], loopdev)
        mnt = workdir / f"mnt{len(made)}"
        made.append(mnt)
        fsops.mount(fs, loopdev, mnt, mount)
        return mnt

    try:
        yield factory
    finally:
        _release(made, None, None)


# -- what the suite builds once and shares --------------------------------------------------
# Each is built at most once per session (a session fixture; under pytest-xdist, the
# cache's own lock makes the second worker wait for the first and reuse its build) and
# across sessions while its inputs are unchanged (the cache's content key, the artefact
# checked before it is reused: fsbench.vm.cache.damaged). Each build is timed by name in
# the session's report (tests/suitetime.py).


@pytest.fixture(scope="session")
def guest_images() -> Callable[[str | None], GuestImage]:
    """guest_images(None | "6.1" | "6.12") -> the cached guest image of that kernel."""
    from tests.suitetime import build  # a plugin of this conftest's (pytest_plugins)

    made: dict[str | None, GuestImage] = {}

    def image(kernel: str | None = None) -> GuestImage:
        if kernel not in made:
            with build(f"guest image, kernel {kernel or 'default'}") as log:
                made[kernel] = ensure_image(kernel, VM_CACHE, log)
        return made[kernel]

    return image


@pytest.fixture(scope="session")
def guest_image(guest_images: Callable[[str | None], GuestImage]) -> GuestImage:
    """The default kernel's guest image (debootstrap + kernel + initrd the first time)."""
    return guest_images(None)


# -- workers (pytest-xdist, `make test`: three) ---------------------------------------------
# Tests that share something run on one worker, one after the other (xdist_group, with
# --dist loadgroup): the QEMU guests (at most two TCG guests at a time, one per chain of
# guests: each would take both CPUs), the bisection's kernel tree, the fleet's sshd, the
# machine's sysctls (two runs that set and restore vm.dirty_ratio at once would leave each
# other's value behind). A test whose
# assertions time the machine (a 10 Hz sampler, CPU seconds, an A/A test that must find no
# winner, a race) is marked `alone`: it waits for the other workers' tests to end and the
# others wait for it (a readers-writer lock on two files); so is a test whose
# assertion counts on the page cache (another worker's cold trial drops every cache of the
# machine), and a test that makes a
# mount namespace (`unshare --mount` copies every mount of the machine, and the copy keeps
# another worker's filesystem busy after that test unmounts it: its next blkdiscard
# fails with EBUSY). An `alone` test outside the groups joins the QEMU group's chain,
# after its guests: elsewhere it waited for a guest test of minutes on the other worker to
# end, with one CPU idle (a warm make test spent a fifth of its CPU time idle). The
# longest chains are handed out first, one to each worker (--no-loadscope-reorder keeps
# this order).
GROUPS: dict[str, tuple[str, ...]] = {
    "qemu": (
        "tests/integration/test_vm.py",
        "tests/integration/test_crash.py",
        "tests/integration/test_tune_safe.py",
    ),
    "bisect": ("tests/integration/test_bisect.py",),
    "boots": ("tests/integration/test_vm_boot.py",),
    "fleet": ("tests/integration/test_fleet.py",),
    "sysctls": (
        "tests/integration/test_knobs_restore.py",
        "tests/integration/test_cli.py::test_knobs_are_dimensions_and_restored",
        "tests/integration/test_memcap.py",
    ),
}
# The chains, longest first; each group's tests run in this order within its chain.
FIRST = ("qemu", "bisect", "boots", "fleet")
ALONE_AFTER = "qemu"  # the group an `alone` test outside the groups joins, at its end
# Groups that run at the end of another's chain, on its worker: the sysctls group holds an
# `alone` test (test_memcap's page-cache read) that on the other worker waited for a guest
# test to end: 102.4 s for a test of seconds in a warm make test (its entry in
# bench/results/history/suite_time-2026-11-29-fc4.json). The guests that boot kernels
# (boots) follow the bisection's, on its worker: one QEMU chain held all four files of
# guests, 1,850 s of a 2,008 s CI run, while the other workers ran out of tests (issue 47);
# the bisection's chain (a few hundred seconds warm, its kernels' builds cold) takes some
# of them, and still no more than two guests run at once. The race's crash tests
# (test_tune_safe) stay with the other crash tests: a cold bisection is the longest chain.
# Joined, the bisection's chain is no longer two tests: xdist gives a worker its next unit
# as soon as two tests or fewer are left to it, and the fleet's chain would have queued
# behind them.
JOINS = {"sysctls": ALONE_AFTER, "boots": "bisect"}

# `make check` leaves these out (marked slow): the QEMU guests, the kernel builds, the
# fleet, the database servers, every other test that took more than 8 s on this machine
# on two workers (bench/results/suite_time-two-workers.json), and the files whose tests
# took more than 18 s together in `make check` (bench/results/history/
# suite_time-check-2026-11-28.json: 456 s of make with them, in a fresh clone); what
# remains runs in a few minutes.
SLOW = (
    *GROUPS["qemu"],
    *GROUPS["bisect"],
    *GROUPS["boots"],
    *GROUPS["fleet"],
    "tests/integration/test_store_backends.py",  # PostgreSQL
    "tests/integration/test_pgbench.py",  # PostgreSQL
    "tests/integration/test_store_outage.py",  # PostgreSQL stopped mid-run, a store disk filled
    "tests/unit/test_decide_simulated.py",  # the decide loop's simulations, 90 s
    "tests/unit/test_tune_race.py",  # the race's simulations, 50 s
    # docs/tune.md's race levels one digit off: the same simulations
    "tests/unit/test_figures_mutation.py::test_the_race_levels_table_fails_one_digit_off",
    "tests/integration/test_knobs_restore.py",
    "tests/integration/test_fio_sysbench.py",
    "tests/integration/test_cpu_bound_check.py",
    "tests/integration/test_runner_clock.py",
    "tests/integration/test_history_loop.py",
    "tests/integration/test_history_explain.py",  # 8 runs, 2 passes with bpftrace: minutes
    "tests/integration/test_memcap.py",
    "tests/integration/test_sysbench_oltp.py",
    "tests/integration/test_reps_auto_all.py",
    # record a program, replay it on two loop devices: 30 s under load
    "tests/integration/test_replay.py::test_a_recorded_program_replays_its_calls_on_ext4_and_xfs",
    "tests/integration/test_calibrate.py",
    "tests/integration/test_campaign.py",
    "tests/integration/test_decide_run.py",
    "tests/integration/test_html_report.py",
    "tests/integration/test_explain.py",  # 12 trials, 9 with bpftrace: minutes
    "tests/integration/test_explain_budget.py",  # a decided run, 6 trials with bpftrace: 90 s
    # a race, then 6 trials with bpftrace: a minute
    "tests/integration/test_tune.py::test_tune_explain_runs_the_pass_for_the_winner_against_the_runner_up",
    "tests/integration/test_aging.py::test_aging_curves_aged_and_clean_at_every_stage",
    "tests/integration/test_aging.py::test_any_workload_on_an_aged_filesystem",
    "tests/integration/test_cli.py::test_hanging_tool_hits_the_trial_timeout_and_the_run_goes_on",
    "tests/integration/test_cli.py::test_reports_read_while_a_run_writes",
    "tests/integration/test_cli.py::test_run_json_rows",
    "tests/integration/test_cli.py::test_killed_run_resumes_and_keeps_every_trial_once",
    "tests/integration/test_tune.py::test_a_race_prints_its_space_drops_the_slow_config_and_names_the_winner",
    "tests/integration/test_cli.py::test_write_amplification_for_every_write_workload",
    "tests/integration/test_engine_workloads.py::test_fileserver_thread_sweep_gives_ops_and_percentiles",
    "tests/integration/test_engine_workloads.py::test_an_engine_killed_mid_trial_is_a_failed_trial_and_the_run_goes_on",
    "tests/integration/test_series.py::test_scale_to_mem_sweeps_the_working_set_across_the_cap",
    "tests/integration/test_trees.py::test_kernel_build_of_a_small_target",
    "tests/integration/test_command.py::test_a_real_program_compared_on_ext4_and_xfs_with_its_metric",
)


def _under(nodeid: str, prefixes: tuple[str, ...]) -> bool:
    """nodeid is one of prefixes (a file, or a test with all its parameters) or in one."""
    return any(nodeid == p or nodeid.startswith((p + "::", p + "[")) for p in prefixes)


def _group_of(nodeid: str) -> str | None:
    return next((name for name, prefixes in GROUPS.items() if _under(nodeid, prefixes)), None)


def chain_of(nodeid: str, alone: bool) -> str | None:
    """The xdist group a test runs in: its group's, or the one its group joins; an `alone`
    test outside the groups joins ALONE_AFTER's (ranked after the group's own tests: its
    end)."""
    group = _group_of(nodeid) or (ALONE_AFTER if alone else None)
    return JOINS.get(group, group) if group else None


def _module_fixture_group(item: pytest.Item) -> str | None:
    """A module's tests that share a module-scoped fixture go to one worker: split over
    two, each worker would set it up once (two 90 s runs of test_reps_auto_all in CI)."""
    info = getattr(item, "_fixtureinfo", None)  # pytest's own record of what item uses
    if info is None:
        return None
    for defs in info.name2fixturedefs.values():
        if defs and defs[-1].scope == "module":
            return f"module:{item.nodeid.split('::')[0]}"
    return None


# tryfirst: pytest-xdist reads the xdist_group marks in its own hook of the same name (on
# each worker, naming each test's group in its node id); without it that hook runs before
# this one and sees none, and every group is silently split over both workers.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        group = chain_of(item.nodeid, _alone(item)) or _module_fixture_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
        if _under(item.nodeid, SLOW):
            item.add_marker(pytest.mark.slow)

    def rank(item: pytest.Item) -> int:
        group = _group_of(item.nodeid)
        return FIRST.index(group) if group in FIRST else len(FIRST)

    items.sort(key=rank)  # stable: the rest keep their order


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: object, ids: list[str]) -> None:
    """On the xdist controller, from each worker's collection: a grouped test's node id
    names its group (`...::test@qemu`), or the groups are not in force (pytest 9.2 ignores
    the renaming: pytest-xdist#1386) and the suite stops instead of running a group's tests
    side by side on both workers."""
    split = [i for i in ids if "@" not in i and _group_of(i) is not None]
    if split:
        pytest.exit(
            f"pytest-xdist's groups are not in force: {split[0]} has no @group in its node id "
            f"(pytest {pytest.__version__}; see pytest-xdist#1386 and pyproject.toml's pin)",
            returncode=3,
        )


@contextmanager
def _flock(path: Path, mode: int) -> Iterator[None]:
    with path.open("a") as fh:
        fcntl.flock(fh, mode)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _share_files(config: pytest.Config) -> tuple[Path, Path] | None:
    """The session's turnstile and lock (None without xdist's workers)."""
    uid = getattr(config, "workerinput", {}).get("testrunuid") or getattr(
        config.option, "testrunuid", None
    )
    if not uid:
        return None
    return TEST_ROOT / f"share-{uid}.turnstile", TEST_ROOT / f"share-{uid}.lock"


def pytest_configure(config: pytest.Config) -> None:
    # The controller names the session (xdist passes it to every worker) to find its
    # lock files again when it ends.
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        config.option.testrunuid = config.option.testrunuid or uuid.uuid4().hex


def pytest_unconfigure(config: pytest.Config) -> None:
    files = _share_files(config)
    if files is not None and not hasattr(config, "workerinput"):
        for path in files:
            path.unlink(missing_ok=True)


# Whether the next test this worker runs is `alone` too (pytest_runtest_protocol knows it).
_NEXT_ALONE = pytest.StashKey[bool]()
# This worker's hold of the machine, kept from one `alone` test to the next: released
# between them, the other worker starts a test of its own (sysbench's, 30 s) and the next
# `alone` test waits for it to end (8 tests of test_runner_clock waited about 29 s each
# in a warm make test: waited_s in bench/results/history/suite_time-2026-11-29-fc5.json).
_held: list[IO[str]] = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    item.stash[_NEXT_ALONE] = nextitem is not None and _alone(nextitem)
    return (yield)


def _alone(item: pytest.Item) -> bool:
    return item.get_closest_marker("alone") is not None


def _release_held() -> None:
    while _held:
        held = _held.pop()
        fcntl.flock(held, fcntl.LOCK_UN)
        held.close()


@pytest.fixture(autouse=True)
def _share_the_machine(request: pytest.FixtureRequest) -> Iterator[None]:
    """Under xdist: every test holds the session's lock shared, an `alone` test holds it
    exclusive (and keeps it for the next test when that one is `alone` too). A writer takes
    the turnstile while it waits, so that readers queue behind it instead of passing it
    by."""
    files = _share_files(request.config)
    if files is None or not hasattr(request.config, "workerinput"):
        yield  # one process: nothing runs beside the test
        return
    from tests.suitetime import waited  # a plugin of this conftest's (pytest_plugins)

    turnstile, lock = files
    TEST_ROOT.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    if _alone(request.node):
        if not _held:
            with _flock(turnstile, fcntl.LOCK_EX):
                held = lock.open("a")
                fcntl.flock(held, fcntl.LOCK_EX)  # once the tests running now have ended
            _held.append(held)
        waited(request.node, time.monotonic() - began)
        try:
            yield
        finally:
            if not request.node.stash.get(_NEXT_ALONE, False):
                _release_held()
    else:
        # Still held: the `alone` test meant to come next was skipped before its setup.
        # Released first, or this process's shared lock would wait for its own.
        _release_held()
        with _flock(turnstile, fcntl.LOCK_EX):
            pass
        with _flock(lock, fcntl.LOCK_SH):
            waited(request.node, time.monotonic() - began)
            yield
