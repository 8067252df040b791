"""The suite's own check that pytest-xdist keeps each group on one worker: it stops the
run when a grouped test comes back without its group in its node id (pytest 9.2 with
xdist 3.8, pytest-xdist#1386), and lets it go on when the group is there."""

from __future__ import annotations

from pathlib import Path

import pytest

import conftest
from tests import suitetime
from tests.suitetime import plain_nodeid

GUEST_TEST = "tests/integration/test_vm.py::test_alloc_in_vm"


def test_a_grouped_test_without_its_group_stops_the_suite() -> None:
    with pytest.raises(pytest.exit.Exception, match="groups are not in force"):
        conftest.pytest_xdist_node_collection_finished(None, [GUEST_TEST])


def test_grouped_and_ungrouped_tests_named_as_xdist_names_them_pass() -> None:
    ids = [f"{GUEST_TEST}@qemu", "tests/unit/test_stats.py::test_mean"]
    conftest.pytest_xdist_node_collection_finished(None, ids)  # no exit


def test_the_record_names_a_test_without_its_group() -> None:
    assert plain_nodeid(f"{GUEST_TEST}@qemu") == GUEST_TEST
    assert plain_nodeid("tests/x.py::t[a@b]") == "tests/x.py::t[a@b]"  # a parameter's @


def test_the_record_counts_a_tests_wait_for_the_machine_once() -> None:
    nodeid = "tests/x.py::test_waited_for_the_machine@qemu"
    phases = (("setup", 3.0), ("call", 1.0), ("teardown", 0.5))
    try:
        for when, seconds in phases:  # every phase's report carries the setup's note
            report = pytest.TestReport(
                nodeid, ("x", 0, "t"), {}, "passed", None, when, duration=seconds,
                user_properties=[(suitetime.WAITED, 2.5)],
            )  # fmt: skip
            suitetime.pytest_runtest_logreport(report)
        entry = suitetime._TESTS[plain_nodeid(nodeid)]
        assert entry["seconds"] == 4.5 and entry[suitetime.WAITED] == 2.5
    finally:
        suitetime._TESTS.pop(plain_nodeid(nodeid), None)  # not a test of this session's


def test_each_workers_idle_tail_is_the_session_end_less_its_last_tests_end() -> None:
    tests = {
        "a": {"seconds": 100.0, "began_s": 10.0, "worker": "gw0"},
        "b": {"seconds": 50.0, "began_s": 110.0, "worker": "gw0"},
        "c": {"seconds": 30.0, "began_s": 10.0, "worker": "gw1"},
        "d": {"seconds": 0.5},  # never set up (collected, deselected): no timeline
    }
    assert suitetime.workers(tests, wall_s=200.0) == {
        "gw0": {"tests": 2, "busy_s": 150.0, "end_s": 160.0, "idle_end_s": 40.0},
        "gw1": {"tests": 1, "busy_s": 30.0, "end_s": 40.0, "idle_end_s": 160.0},
    }


def test_the_chains_of_guests_start_at_once_one_per_worker() -> None:
    """The QEMU guests are two chains (the crash tests, the tune race's among them; the
    bisection, then the boots), each longer than two tests so that xdist hands out the fleet's chain
    to the third worker instead of queueing it behind one of them."""
    chains = [conftest.chain_of(f"{path}::t", alone=False) for g in conftest.FIRST
              for path in conftest.GROUPS[g]]  # fmt: skip
    assert list(dict.fromkeys(chains)) == ["qemu", "bisect", "fleet"]  # -n 3: one each
    tests = dict.fromkeys(chains, 0)
    for g in conftest.FIRST:
        for path in conftest.GROUPS[g]:
            tests[conftest.chain_of(path, alone=False)] += (
                Path(path).read_text().count("\ndef test_")
            )
    assert min(tests.values()) > 2, tests
    assert conftest.chain_of("tests/integration/test_tune_safe.py::t", alone=False) == "qemu"
    assert conftest.chain_of("tests/integration/test_vm_boot.py::t[ext4]", alone=False) == (
        "bisect"
    )
    # `alone` tests and the sysctls end the crash tests' chain; the rest go where they may.
    assert conftest.chain_of("tests/integration/test_runner_clock.py::t", alone=True) == "qemu"
    assert conftest.chain_of("tests/integration/test_memcap.py::t", alone=False) == "qemu"
    assert conftest.chain_of("tests/unit/test_stats.py::test_mean", alone=False) is None
