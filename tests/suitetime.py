"""Where the suite's time goes: what it builds once and shares (guest images, kernels, the
Debian source and its git history, the engine), each build named and timed by the fixture
that makes it, printed at the end of the session after the slowest tests; and, when
FSBENCH_SUITE_RECORD names a file, the whole breakdown written there as JSON (every
test's time, by file and by family; the builds; `make`'s own steps), which
bench/suite_time.py keeps in bench/results/suite_time.json.

A fixture times its build with `build(NAME)`, a context that gives the builder's LogFn: a
builder says what it makes and says nothing when its cache already has it, so a build
that said nothing is "reused" (its time is the check of the cache). A step timed
elsewhere (a kernel build inside `fsbench bisect`, reported in its JSON) is added with
`record`. `make test` times its own steps (the venv, the engine, cargo test) into the
file FSBENCH_MAKE_STEPS names; they are printed with the builds.

Under pytest-xdist each worker keeps its own list and hands it to the controller when it
ends (workeroutput), so the report covers every worker."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

_BUILDS: list[dict[str, Any]] = []
_TESTS: dict[str, dict[str, Any]] = {}
_STARTED = time.monotonic()
_STARTED_EPOCH = time.time()  # a report's start is on the wall clock
WORKER_KEY = "fsbench_builds"
WAITED = "waited_s"  # a test's seconds waiting for the machine (tests/conftest.py's lock)

# Families: a test file's first matching pattern names the family it is counted in.
FAMILIES = (
    ("unit", r"^tests/unit/"),
    ("vm: guests under QEMU", r"test_(vm|vm_boot|crash|tune_safe)\.py$"),
    ("vm: bisect (kernel builds)", r"test_bisect\.py$"),
    ("fleet (sshd, Ansible)", r"test_fleet\.py$"),
    ("bad input (CLI refusals)", r"test_bad_input\.py$"),
    (
        "databases (PostgreSQL, MariaDB)",
        r"test_(pgbench|sysbench_oltp|store_backends|store_outage)\.py$",
    ),
    ("decisions (calibrate, tune, decide)", r"test_(calibrate|tune|decide_run|reps_auto_all)"),
    ("aging", r"test_aging\.py$"),
    ("other integration (loop devices, mkfs)", r"^tests/integration/"),
)


def family(path: str) -> str:
    for name, pattern in FAMILIES:
        if re.search(pattern, path):
            return name
    return "other"


@contextmanager
def build(name: str) -> Iterator[Callable[[str], None]]:
    """Time the build of `name`; the LogFn it gives marks it built (not reused)."""
    said: list[str] = []
    t0 = time.monotonic()
    try:
        yield said.append
    finally:
        record(name, time.monotonic() - t0, built=bool(said), detail=said[-1] if said else "")


def record(name: str, seconds: float, built: bool = True, detail: str = "") -> None:
    _BUILDS.append({"name": name, "seconds": round(seconds, 1), "built": built, "detail": detail})


def make_steps() -> list[dict[str, Any]]:
    """The steps `make test` timed before pytest started (FSBENCH_MAKE_STEPS)."""
    path = os.environ.get("FSBENCH_MAKE_STEPS")
    if not path or not Path(path).is_file():
        return []
    out = []
    for line in Path(path).read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def plain_nodeid(nodeid: str) -> str:
    """The test's node id without the group pytest-xdist appends (`...::test@qemu`), so a
    test keeps one name from record to record; an `@` inside a parameter's id stays."""
    at = nodeid.rfind("@")
    return nodeid[:at] if at > nodeid.rfind("]") else nodeid


def waited(item: pytest.Item, seconds: float) -> None:
    """Note how long the test waited for the machine before it began (the other worker's
    tests to end, for an `alone` test; an `alone` test's end, for the others): it travels
    with the setup's report to the controller (user_properties)."""
    item.user_properties.append((WAITED, round(seconds, 2)))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    entry = _TESTS.setdefault(
        plain_nodeid(report.nodeid), {"seconds": 0.0, "outcome": "passed", WAITED: 0.0}
    )
    entry["seconds"] += report.duration
    if report.when == "setup":  # the later phases' reports carry the same list
        entry[WAITED] += sum(v for k, v in report.user_properties if k == WAITED)
        # When and where it began: the suite's timeline, worker by worker.
        entry["began_s"] = round(report.start - _STARTED_EPOCH, 1)
        gateway = getattr(getattr(report, "node", None), "gateway", None)  # xdist's worker
        entry["worker"] = getattr(gateway, "id", "")
    if report.failed:
        entry["outcome"] = "failed" if report.when == "call" else "error"
    elif report.skipped and entry["outcome"] == "passed":
        entry["outcome"] = "skipped"


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller reports
        workeroutput[WORKER_KEY] = json.dumps(_BUILDS)


class _FromWorkers:
    """Registered on the xdist controller: each worker's builds, when it ends."""

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        data = getattr(node, "workeroutput", {}).get(WORKER_KEY)
        if data:
            worker = node.workerinput.get("workerid", "?")
            _BUILDS.extend({**b, "worker": worker} for b in json.loads(data))


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_FromWorkers(), "fsbench-suitetime-workers")


def workers(tests: dict[str, dict[str, Any]], wall_s: float) -> dict[str, dict[str, float]]:
    """Each worker's timeline: its tests, their seconds, when its last test ended and how
    long it then sat idle until the session ended (`idle_end_s`: the tail the order of the
    tests should leave short, where the other workers are still busy and it has nothing
    left to take)."""
    out: dict[str, dict[str, float]] = {}
    for t in tests.values():
        if "began_s" not in t:
            continue
        w = out.setdefault(t.get("worker") or "main", {"tests": 0, "busy_s": 0.0, "end_s": 0.0})
        w["tests"] += 1
        w["busy_s"] += t["seconds"]
        w["end_s"] = max(w["end_s"], t["began_s"] + t["seconds"])
    return {
        name: {
            "tests": w["tests"],
            "busy_s": round(w["busy_s"], 1),
            "end_s": round(w["end_s"], 1),
            "idle_end_s": round(max(wall_s - w["end_s"], 0.0), 1),
        }
        for name, w in sorted(out.items())
    }


def _summary() -> dict[str, Any]:
    files: dict[str, float] = {}
    families: dict[str, float] = {}
    outcomes: dict[str, int] = {}
    for nodeid, t in _TESTS.items():
        path = nodeid.split("::", 1)[0]
        files[path] = files.get(path, 0.0) + t["seconds"]
        fam = family(path)
        families[fam] = families.get(fam, 0.0) + t["seconds"]
        outcomes[t["outcome"]] = outcomes.get(t["outcome"], 0) + 1
    wall_s = round(time.monotonic() - _STARTED, 1)
    return {
        "wall_s": wall_s,
        "test_s": round(sum(t["seconds"] for t in _TESTS.values()), 1),
        # Of test_s: waiting for the machine, one worker idle (an `alone` test and the rest).
        WAITED: round(sum(t[WAITED] for t in _TESTS.values()), 1),
        "outcomes": outcomes,
        "workers": workers(_TESTS, wall_s),
        "families": {k: round(v, 1) for k, v in sorted(families.items(), key=lambda kv: -kv[1])},
        "files": {k: round(v, 1) for k, v in sorted(files.items(), key=lambda kv: -kv[1])},
        "builds": _BUILDS,
        "make_steps": make_steps(),
        "tests": {
            k: {**v, "seconds": round(v["seconds"], 2), WAITED: round(v[WAITED], 2)}
            for k, v in sorted(_TESTS.items())
        },
    }


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    doc = _summary()
    tr = terminalreporter
    steps = doc["make_steps"] + doc["builds"]
    if steps or doc["families"]:
        tr.write_sep("=", "where the time went")
    for step in doc["make_steps"]:
        tr.write_line(f"{step['seconds']:8.1f} s  make: {step['name']}")
    for b in doc["builds"]:
        how = "built" if b["built"] else "reused (checked)"
        where = f" [{b['worker']}]" if "worker" in b else ""
        tr.write_line(f"{b['seconds']:8.1f} s  {b['name']}: {how}{where}")
    if doc["families"]:
        tr.write_line(f"tests by family (sum of their times; wall {doc['wall_s']:.0f} s):")
        for name, seconds in doc["families"].items():
            tr.write_line(f"{seconds:8.1f} s  {name}")
        tr.write_line(
            f"{doc[WAITED]:8.1f} s  of them waiting for the machine (tests marked alone, and "
            "the tests behind them)"
        )
    if len(doc["workers"]) > 1:
        tr.write_line("workers (their tests' seconds; idle from their last test's end):")
        for name, w in doc["workers"].items():
            tr.write_line(
                f"{w['busy_s']:8.1f} s  {name}: {w['tests']} tests, the last ended at "
                f"{w['end_s']:.0f} s, then idle {w['idle_end_s']:.0f} s"
            )
    path = os.environ.get("FSBENCH_SUITE_RECORD")
    if path:
        Path(path).write_text(json.dumps(doc, indent=1) + "\n")
        tr.write_line(f"breakdown: {path}")
