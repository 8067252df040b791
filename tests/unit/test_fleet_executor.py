"""The fleet controller's state machine (fleet/executor.py) with a fake Ansible: each
host's answers to the start, status and collect playbooks are scripted, the clock is
simulated. The store is a real SQLite file; no root, SSH or Ansible run. The real SSH path
is tests/integration/test_fleet.py."""

from __future__ import annotations

import base64
import json
import re
import tarfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from fsbench.execute import loop as matrix
from fsbench.fleet.ansible import Ansible, Event
from fsbench.fleet.executor import FleetExecutor, HostRun, carried
from fsbench.fleet.inventory import FleetHost, hosts_of
from fsbench.plan import model as planning
from fsbench.plan.model import FsConfig, Plan, WorkloadSpec
from fsbench.reports.tables import run_header
from fsbench.store.results import Store
from fsbench.system.errors import FsbenchError
from fsbench.workloads.base import Scale

POLL_SECONDS = 10.0  # simulated time one status poll takes
REFUSED = "Failed to connect to the host via ssh: connect to host 127.0.0.9 port 22: refused"

Answer = list[Event]


def running(host: str, done: int, total: int = 4) -> Answer:
    progress = {"pid": 4242, "hostname": f"{host}.lab", "run_id": 7, "done": done}
    progress["total"] = total
    content = base64.b64encode(json.dumps(progress).encode()).decode()
    return [
        Event(host, "job", "ok", {"finished": 0, "started": 1}),
        Event(host, "progress", "ok", {"content": content}),
    ]


def finished(host: str, rc: int, stderr: str = "") -> Answer:
    return [Event(host, "job", "ok", {"finished": 1, "rc": rc, "stderr": stderr})]


def unreachable(host: str) -> Answer:
    return [Event(host, "job", "unreachable", {"msg": REFUSED, "unreachable": True})]


def started(host: str) -> Answer:
    return [
        Event(host, "workdir", "ok"),
        Event(host, "run", "ok", {"ansible_job_id": f"j-{host}", "started": 1}),
    ]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeAnsible(Ansible):
    """Answers each playbook from a script: `start[host]` once, `status[host]` one answer
    per poll (the last one again once the script runs out). A status poll lasts
    POLL_SECONDS of the simulated clock."""

    def __init__(
        self,
        workdir: Path,
        clock: Clock,
        status: dict[str, list[Answer]],
        start: dict[str, Answer] | None = None,
    ) -> None:
        super().__init__(Path("hosts.ini"), workdir)
        self.clock = clock
        self.status = {host: list(answers) for host, answers in status.items()}
        self.start = start or {}
        self.calls: list[tuple[str, list[str], dict[str, Any]]] = []
        self.closed = False

    def run(
        self,
        name: str,
        variables: dict[str, Any],
        limit: Sequence[str] | None = None,
        secret: str = "",
    ) -> list[Event]:
        hosts = list(limit or [])
        self.calls.append((name, hosts, variables))
        if name == "start":
            return [e for h in hosts for e in self.start.get(h, started(h))]
        if name == "status":
            self.clock.now += POLL_SECONDS
            out = []
            for h in hosts:
                script = self.status[h]
                out += script.pop(0) if len(script) > 1 else script[0]
            return out
        return []

    def close(self) -> None:
        self.closed = True

    def polls(self) -> list[list[str]]:
        return [hosts for name, hosts, _ in self.calls if name == "status"]

    def limit_of(self, playbook: str) -> list[str]:
        return next(hosts for name, hosts, _ in self.calls if name == playbook)


def _plan() -> Plan:
    return Plan(
        fs=[FsConfig(type="ext4")],
        workloads=[WorkloadSpec(name="alloc", params={"method": "fallocate"})],
        scale=Scale.TINY,
        reps=2,
        seed=3,
    )


def _hosts(*names: str) -> list[FleetHost]:
    # fsbench_path: an existing install, so that no source tarball is made.
    return [FleetHost(n, ("lab",), {"fsbench_path": "/opt/fsbench"}) for n in names]


def _executor(
    tmp_path: Path,
    status: dict[str, list[Answer]],
    start: dict[str, Answer] | None = None,
    unreachable_timeout: float = 900.0,
    store: Store | None = None,
) -> tuple[FleetExecutor, FakeAnsible, list[dict[str, str]]]:
    clock = Clock()
    ansible = FakeAnsible(tmp_path / "controller", clock, status, start)
    seen: list[dict[str, str]] = []

    def on_progress(hosts: list[HostRun]) -> None:
        seen.append({h.host.name: f"{h.state}: {h.error}" for h in hosts})

    plan = _plan()
    executor = FleetExecutor(
        plan,
        planning.expand(plan),
        hosts=_hosts(*status),
        inventory=Path("hosts.ini"),
        store=store or Store(tmp_path / "fleet.db"),
        uid="f00d",
        workdir=tmp_path / "controller",
        poll=0,
        unreachable_timeout=unreachable_timeout,
        on_progress=on_progress,
        ansible=ansible,
        clock=clock,
    )
    return executor, ansible, seen


def _drive(executor: FleetExecutor) -> dict[str, HostRun]:
    with executor:
        executor.run([], set(), lambda slot: None, lambda slot, records: None)
    return {h.host.name: h for h in executor.hosts}


def test_a_host_unreachable_for_a_while_then_back_goes_on(tmp_path: Path) -> None:
    script = [running("a", 1), *[unreachable("a")] * 3, running("a", 3), finished("a", 0)]
    executor, ansible, seen = _executor(tmp_path, {"a": script}, unreachable_timeout=45)
    hosts = _drive(executor)
    assert hosts["a"].state == "done" and hosts["a"].error == ""
    # While away it was polled again and said how long it had been away.
    assert [s["a"] for s in seen[2:5]] == [
        f"running: unreachable for {s} s: {REFUSED}" for s in (10, 20, 30)
    ]
    assert len(ansible.polls()) == 6
    assert executor.unfinished() == []


def test_a_host_unreachable_past_the_bound_fails_alone(tmp_path: Path) -> None:
    # a answers twice, then never again; b finishes after 8 polls.
    a = [running("a", 1), running("a", 2), unreachable("a")]
    b = [*[running("b", 1)] * 7, finished("b", 0)]
    executor, ansible, _ = _executor(tmp_path, {"a": a, "b": b}, unreachable_timeout=25)
    hosts = _drive(executor)
    # Counted from the last answer (the 2nd poll): away 30 s at the 5th poll, > 25 s.
    assert hosts["a"].state == "failed"
    assert hosts["a"].error == f"unreachable for 30 s (--unreachable-timeout 25): {REFUSED}"
    assert "\n" not in hosts["a"].error
    assert [p.count("a") for p in ansible.polls()] == [1] * 5 + [0] * 3  # not polled again
    assert hosts["b"].state == "done"
    assert executor.unfinished() == [f"host a failed: {hosts['a'].error}"]
    assert set(ansible.limit_of("collect")) == {"a", "b"}


def test_no_answer_at_all_counts_as_unreachable(tmp_path: Path) -> None:
    """ansible-playbook said nothing of the host (it crashed, its log says why): the
    host is not polled forever either."""
    executor, _, _ = _executor(tmp_path, {"a": [[]]}, unreachable_timeout=15)
    hosts = _drive(executor)
    assert hosts["a"].state == "failed"
    assert hosts["a"].error == "unreachable for 20 s (--unreachable-timeout 15): no answer"


@pytest.mark.parametrize(
    ("rc", "stderr", "state", "error"),
    [
        (0, "", "done", ""),
        (3, "", "done", ""),  # some cells unsupported: a result
        (4, "", "done", ""),  # some trials failed: stored as failed trials
        (
            2,
            "Traceback...\nfsbench: error: /dev/loop9: refusing to overwrite without "
            "--destroy-data\n",
            "failed",
            "/dev/loop9: refusing to overwrite without --destroy-data",
        ),
        (1, "Killed by something\nlast words\n", "failed", "last words"),
        (-9, "", "failed", "fsbench exited with -9"),
    ],
)
def test_the_job_exit_status_decides(
    tmp_path: Path, rc: int, stderr: str, state: str, error: str
) -> None:
    executor, _, _ = _executor(tmp_path, {"a": [running("a", 1), finished("a", rc, stderr)]})
    hosts = _drive(executor)
    assert (hosts["a"].state, hosts["a"].rc, hosts["a"].error) == (state, rc, error)
    assert executor.unfinished() == ([] if state == "done" else [f"host a failed: {error}"])


def test_a_job_ansible_cannot_find_fails_the_host(tmp_path: Path) -> None:
    """async_status of a job whose record is gone (the host rebooted, its ~/.ansible_async
    was emptied): finished, no exit status."""
    gone = Event("a", "job", "ok", {"finished": 1, "started": 1, "msg": "could not find job"})
    executor, _, _ = _executor(tmp_path, {"a": [running("a", 1), [gone]]})
    hosts = _drive(executor)
    assert (hosts["a"].state, hosts["a"].rc, hosts["a"].error) == (
        "failed",
        None,
        "could not find job",
    )


def test_progress_is_read_from_the_hosts_progress_file(tmp_path: Path) -> None:
    broken = [Event("a", "job", "ok", {"finished": 0}), Event("a", "progress", "ok")]
    broken.append(Event("a", "progress", "ok", {"content": "bm90IGpzb24="}))  # "not json"
    executor, _, _ = _executor(tmp_path, {"a": [running("a", 3, 5), broken, finished("a", 0)]})
    hosts = _drive(executor)
    assert (hosts["a"].done, hosts["a"].total) == (3, 5)  # the unreadable one changed nothing
    described = executor.describe()["hosts"]["a"]
    assert described["hostname"] == "a.lab" and described["member_run"] == 7
    assert described["state"] == "done" and described["groups"] == ["lab"]


def test_status_polls_only_running_hosts_with_their_jobs(tmp_path: Path) -> None:
    status = {"a": [finished("a", 0)], "b": [running("b", 1), running("b", 2), finished("b", 0)]}
    executor, ansible, _ = _executor(tmp_path, status)
    _drive(executor)
    assert ansible.polls() == [["a", "b"], ["b"], ["b"]]
    jobs = [v["fsbench_jobs"] for name, _, v in ansible.calls if name == "status"]
    assert jobs[0] == {"a": "j-a", "b": "j-b"}
    assert ansible.closed


def test_hosts_that_fail_before_their_job_are_collected_too(tmp_path: Path) -> None:
    """They may hold the password file: collect forgets it on every host it started."""
    earlier = "fsbench pid 4242 of an earlier start still runs this host's part in /w/b"
    start = {
        "b": [Event("b", "one fsbench per host", "failed", {"msg": earlier})],
        "c": [Event("c", "run", "failed", {"msg": "could not create the async directory"})],
        "d": [Event("d", "workdir", "unreachable", {"msg": REFUSED})],
        "e": [Event("e", "run", "ok", {})],  # no job id
    }
    status = {h: [finished(h, 0)] for h in "abcde"}
    executor, ansible, _ = _executor(tmp_path, status, start)
    hosts = _drive(executor)
    assert hosts["a"].state == "done"
    assert {h: hosts[h].error for h in "bcde"} == {
        "b": f"failed at one fsbench per host: {earlier}",
        "c": "failed at run: could not create the async directory",
        "d": f"unreachable at workdir: {REFUSED}",
        "e": "the run did not start (see ansible.log)",
    }
    assert ansible.polls() == [["a"]]
    assert sorted(ansible.limit_of("collect")) == list("abcde")


def test_a_fleet_with_a_failed_host_is_stored_incomplete_and_resumed_on_it(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "fleet.db")
    status = {"a": [running("a", 1), finished("a", 0)], "b": [unreachable("b")]}
    executor, _, _ = _executor(tmp_path, status, unreachable_timeout=5, store=store)
    plan = executor.plan
    outcome = matrix.run(
        plan,
        executor.cells,
        store,
        argv=["fsbench"],
        overrides={},
        executor=executor,
        kind="fleet",
        uid="f00d",
    )
    assert store.get_run(outcome.run_id).status == "incomplete"
    # a's part is finished in the store (its fsbench made it): a resume starts b alone.
    member = store.create_run(
        name="p",
        fsbench_version="0",
        argv=[],
        plan={},
        overrides={},
        schedule=[],
        host={},
        target={},
        part_of="f00d",
        part_host="a",
    )
    store.finish_run(member, "finished")
    again, ansible, _ = _executor(tmp_path, {"a": [[]], "b": [finished("b", 0)]}, store=store)
    resumed = matrix.run(
        plan,
        again.cells,
        store,
        argv=["fsbench"],
        overrides={},
        executor=again,
        kind="fleet",
        uid="f00d",
        resume_run=outcome.run_id,
    )
    assert ansible.limit_of("start") == ["b"]
    assert store.get_run(resumed.run_id).status == "finished"


def test_the_report_header_of_a_fleet_run_names_its_hosts_not_the_controller(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "fleet.db")
    status = {h: [finished(h, 0)] for h in ("h2", "h3", "gone")}
    executor, _, _ = _executor(tmp_path, status, store=store)
    outcome = matrix.run(
        executor.plan,
        executor.cells,
        store,
        argv=["fsbench"],
        overrides={},
        executor=executor,
        kind="fleet",
        uid="f00d",
    )
    run = store.get_run(outcome.run_id)
    header = run_header(run)
    assert header[1] == (
        "hosts: 3 hosts (h2, h3, gone), each its own machine (compare --by host says what differs)"
    )
    assert not any(line.startswith("host:") for line in header)
    assert header[2].startswith("target: fleet of 3 hosts from hosts.ini")
    many = replace(run, target={"hosts": {f"n{i}": {} for i in range(12)}})
    assert run_header(many)[1].startswith(
        "hosts: 12 hosts (n0, n1, n2, n3, n4, n5, n6, n7, n8, n9 and 2 more),"
    )


def test_the_source_hosts_install_from_is_the_whole_package_without_build_output(
    tmp_path: Path,
) -> None:
    executor, _, _ = _executor(tmp_path, {"a": [finished("a", 0)]})
    executor.hosts[0] = HostRun(FleetHost("a"))  # no fsbench_path: it installs
    with executor, tarfile.open(executor._vars()["fsbench_source_tar"]) as tar:
        names = tar.getnames()
    assert {"src/Makefile", "src/pyproject.toml", "src/README.md"} <= set(names)
    assert "src/src/fsbench/execute/targets/loop.py" in names  # not taken for cargo's target/
    assert "src/src/fsbench/fleet/playbooks/start.yml" in names
    assert "src/engine/Cargo.toml" in names
    assert not [n for n in names if n.startswith("src/engine/target") or "__pycache__" in n]


@pytest.mark.parametrize(
    ("variables", "error"),
    [
        ({"fsbench_store": "both"}, "host a: fsbench_store is direct or fetch, not 'both'"),
        ({"fsbench_store": "direct"}, "host a: fsbench_store=direct writes into a PostgreSQL"),
    ],
)
def test_a_hosts_store_mode_is_checked_before_anything_runs(
    tmp_path: Path, variables: dict[str, str], error: str
) -> None:
    executor, ansible, _ = _executor(tmp_path, {"a": [finished("a", 0)]})
    executor.hosts[0] = HostRun(FleetHost("a", (), {"fsbench_path": "/opt/f", **variables}))
    with pytest.raises(FsbenchError, match=re.escape(error)):
        executor.preflight()
    assert ansible.calls == []


def test_an_unknown_fsbench_host_variable_is_refused() -> None:
    """A misspelt fsbench_device would otherwise run on a loop image in silence."""
    listed: dict[str, Any] = {
        "_meta": {"hostvars": {"a": {"fsbench_dev": "/dev/sdb", "ansible_host": "10.0.0.1"}}},
        "all": {"children": ["ungrouped"]},
        "ungrouped": {"hosts": ["a"]},
    }
    with pytest.raises(FsbenchError, match=r"^host a: unknown host variable fsbench_dev \("):
        hosts_of(listed)
    listed["_meta"]["hostvars"]["a"] = {"fsbench_device": "/dev/sdb", "ansible_user": "root"}
    assert hosts_of(listed) == [FleetHost("a", (), {"fsbench_device": "/dev/sdb"})]


def test_the_fleet_is_the_executor_its_target_kind_names(tmp_path: Path) -> None:
    """A plan whose target kind is fleet gets the fleet executor from the one registry,
    made from the target's own fields, and bound to its run like any executor: the run's
    store and uid, and a per-host display where the hooks offer one."""
    from fsbench.execute.executors import Binding, for_plan
    from fsbench.execute.hooks import Hooks
    from fsbench.fleet.target import FleetTargetSpec

    inventory = tmp_path / "hosts.ini"
    inventory.write_text("[dev]\nh2 ansible_host=127.0.0.2\nh3 ansible_host=127.0.0.3\n")
    plan = Plan.model_validate(
        {
            "fs": [{"type": "ext4"}],
            "workload": [{"name": "alloc"}],
            "target": {"kind": "fleet", "inventory": str(inventory), "poll": 0.5, "forks": 3},
        }
    )
    assert isinstance(plan.target, FleetTargetSpec)
    assert plan.model_dump()["target"]["inventory"] == inventory  # dumped with its own fields
    executor = for_plan(plan, planning.expand(plan))
    assert isinstance(executor, FleetExecutor)
    assert [h.host.name for h in executor.hosts] == ["h2", "h3"]
    assert (executor.poll, executor.forks) == (0.5, 3)

    seen: list[list[HostRun]] = []

    class Display(Hooks):
        def hosts(self, hosts: list[HostRun]) -> None:
            seen.append(hosts)

    display = Display()
    executor.bind(Binding(Store(str(tmp_path / "s.db")), "ab" * 16, display))
    assert executor.uid == "ab" * 16 and executor.dir.name == f"fleet-{'ab' * 16}"
    executor.on_progress(executor.hosts)
    assert seen == [executor.hosts]
    # What each host is given runs on its own loop image, the fleet target's size.
    assert plan.target.for_hosts().kind == "loop"
    assert plan.target.for_hosts().image_size == plan.target.image_size


def test_the_hosts_plan_names_each_input_file_by_its_copy(tmp_path: Path) -> None:
    """A replay's traces (a sweep of two, one of them relative) are named in the hosts'
    plan by their copies under inputs/, the same for every host; the files to copy are
    the controller's, by absolute path; a command's parameters are left as given."""
    plan = Plan(
        name="inputs",
        fs=[FsConfig(type="ext4")],
        workloads=[
            WorkloadSpec(name="replay", params={"trace": [str(tmp_path / "a.gz"), "b.gz"]}),
            WorkloadSpec(name="command", params={"run": ["cat", "b.gz"]}),
        ],
    )
    hosts_plan, files = carried(plan, planning.expand(plan))
    assert files == [
        {"src": str(tmp_path / "a.gz"), "dest": "inputs/0-a.gz"},
        {"src": str(Path("b.gz").resolve()), "dest": "inputs/1-b.gz"},
    ]
    replay, command = hosts_plan.workloads
    assert replay.params == {"trace": ["inputs/0-a.gz", "inputs/1-b.gz"]}
    assert command.params == {"run": ["cat", "b.gz"]}
    assert carried(hosts_plan.model_copy(update={"workloads": [command]}), []) == (
        hosts_plan.model_copy(update={"workloads": [command]}),
        [],
    )
