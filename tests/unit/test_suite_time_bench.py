"""bench/suite_time.py's CPU accounting: the machine's busy and idle seconds over a span,
read from /proc/stat, and their share, as the suite's record keeps them."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from fsbench.vm.cache import VM_CACHE_ENV, default_cache
from fsbench.vm.kbuild import KBUILD_CACHE_ENV, kbuild_cache

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import suite_time  # noqa: E402


def test_busy_and_idle_seconds_and_their_share() -> None:
    before = {"busy_s": 100.0, "idle_s": 50.0}
    after = {"busy_s": 190.0, "idle_s": 80.0}
    assert suite_time.cpu_used(before, after) == {"busy_s": 90.0, "idle_s": 30.0, "busy": 0.75}


def test_the_machine_counts_a_busy_loop_as_busy() -> None:
    before = suite_time.cpu_seconds()
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass
    used = suite_time.cpu_used(before, suite_time.cpu_seconds())
    assert used["busy_s"] >= 0.25  # this process's 0.3 s at least, whatever else ran
    assert 0 < used["busy"] <= 1


def test_the_caches_the_bench_moves_are_fsbenchs_own() -> None:
    assert suite_time.FSBENCH_CACHES == {
        VM_CACHE_ENV: default_cache({}),
        KBUILD_CACHE_ENV: kbuild_cache({}),
    }
    assert kbuild_cache({KBUILD_CACHE_ENV: "/srv/kb"}) == Path("/srv/kb")


def test_fresh_caches_are_empty_directories_of_the_runs_own_removed_afterwards() -> None:
    with suite_time.workspace(clone=False, fresh_caches=True) as (scratch, where, env):
        assert where == suite_time.REPO  # no clone: make runs in this checkout
        assert set(env) == {"FSBENCH_VM_CACHE", "FSBENCH_KBUILD_CACHE"}
        for path in env.values():
            assert Path(path).is_dir() and not any(Path(path).iterdir())
            assert Path(path).is_relative_to(scratch)
        # The record says where they were and what they held (fsbench takes its caches
        # from these variables: test_vm_accel, kbuild.KBUILD_CACHE_ENV).
        assert suite_time.caches_before(env)["FSBENCH_VM_CACHE"]["path"] == env["FSBENCH_VM_CACHE"]
    assert not scratch.exists()
