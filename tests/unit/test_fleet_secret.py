"""How the database password travels from the fleet controller to ansible-playbook
(docs/fleet.md): the real executor and the real `Ansible.run` against
tests/fakeansible/spy.py in ansible-playbook's place, which refuses the password anywhere
but the memfd start.yml reads. No root, SSH, Ansible or PostgreSQL: the store is a stand-in
with a PostgreSQL URL. Each leaking variant is a controller that hands the password over
another way, and the spy must catch it (a check that cannot fail proves nothing)."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest

from fsbench.fleet import ansible
from fsbench.fleet.executor import FleetExecutor, HostRun
from fsbench.fleet.inventory import FleetHost
from fsbench.plan import model as planning
from fsbench.plan.model import FsConfig, Plan, WorkloadSpec
from fsbench.store.results import Store
from fsbench.workloads.base import Scale
from tests.fakeansible import spy

SPY = Path(spy.__file__).resolve()


class PostgresStore:
    """What the fleet controller asks of a PostgreSQL store, without a server."""

    def __init__(self, password: str) -> None:
        self.secret_url = f"postgresql://fsbench:{password}@db.lab:5432/fsbench"
        self.postgresql = True

    def part(self, uid: str, host: str) -> None:
        return None


def _fleet(tmp_path: Path, password: str) -> FleetExecutor:
    plan = Plan(
        fs=[FsConfig(type="ext4")],
        workloads=[WorkloadSpec(name="alloc", params={"method": "fallocate"})],
        scale=Scale.TINY,
        reps=2,
        seed=3,
    )
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("a ansible_host=10.0.0.1\nb ansible_host=10.0.0.2\n")
    hosts = [FleetHost(n, ("lab",), {"fsbench_path": "/opt/fsbench"}) for n in ("a", "b")]
    return FleetExecutor(
        plan,
        planning.expand(plan),
        hosts=hosts,
        inventory=inventory,
        store=cast(Store, PostgresStore(password)),
        uid="f00d",
        workdir=tmp_path / "controller",
        poll=0,
    )


def _drive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, password: str
) -> tuple[dict[str, HostRun], list[dict[str, Any]]]:
    """The fleet's whole life (start, status polls, collect) with the spy as
    ansible-playbook; each host's state and the spy's record of every call."""
    log = tmp_path / "spy.jsonl"
    monkeypatch.setenv(spy.SECRET_HEX, password.encode().hex())
    monkeypatch.setenv(spy.LOG, str(log))
    monkeypatch.delenv(spy.REAL, raising=False)
    real = ansible.binary
    monkeypatch.setattr(
        ansible, "binary", lambda name: str(SPY) if name == "ansible-playbook" else real(name)
    )
    executor = _fleet(tmp_path, password)
    with executor:
        executor.run([], set(), lambda slot: None, lambda slot, records: None)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    return {h.host.name: h for h in executor.hosts}, calls


def test_only_start_gets_the_password_and_only_as_a_memfd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Must not fire on the real controller: the spy saw every call, none broke a rule,
    start got the password as the memfd (and it held the password), no other call got it."""
    password = "pw-" + secrets.token_hex(8)
    hosts, calls = _drive(tmp_path, monkeypatch, password)
    assert {h.state for h in hosts.values()} == {"done"}, {n: h.error for n, h in hosts.items()}
    assert [c["playbook"] for c in calls] == ["start", "status", "collect"]
    assert [c["violations"] for c in calls] == [[], [], []]
    assert [c["secret_via"] for c in calls] == ["memfd", None, None]
    assert calls[0]["hosts"] == ["a", "b"]


def _in_vars(monkeypatch: pytest.MonkeyPatch, password: str, tmp: Path) -> None:
    """The controller before the memfd: the password line in the vars file."""
    built = FleetExecutor._vars

    def leaking(self: FleetExecutor) -> dict[str, Any]:
        return {**built(self), "fsbench_pgpass": f"db.lab:5432:fsbench:fsbench:{password}"}

    monkeypatch.setattr(FleetExecutor, "_vars", leaking)


def _on_argv(monkeypatch: pytest.MonkeyPatch, password: str, tmp: Path) -> None:
    """An extra var on ansible-playbook's command line."""
    run = subprocess.run

    def leaking(argv: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(argv, list) and argv and argv[0] == str(SPY):
            argv = [*argv, "-e", f"fsbench_db_password={password}"]
        return run(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", leaking)


def _in_environment(monkeypatch: pytest.MonkeyPatch, password: str, tmp: Path) -> None:
    """libpq's PGPASSWORD in ansible-playbook's environment."""
    env = ansible.Ansible._env

    def leaking(self: ansible.Ansible, events: Path) -> dict[str, str]:
        return {**env(self, events), "PGPASSWORD": password}

    monkeypatch.setattr(ansible.Ansible, "_env", leaking)


def _in_a_file_on_disk(monkeypatch: pytest.MonkeyPatch, password: str, tmp: Path) -> None:
    """The descriptor start.yml reads is a temporary file, not a memfd (a kill -9 would
    leave it there)."""

    def leaking(secret: str) -> int:
        fd, _ = tempfile.mkstemp(prefix="secret-", dir=tmp)
        os.write(fd, secret.encode())
        return fd

    monkeypatch.setattr(ansible, "_memfd", leaking)


Leak = Callable[[pytest.MonkeyPatch, str, Path], None]


@pytest.mark.parametrize(
    ("leak", "violation"),
    [
        (_in_vars, r"start: the password is in /\S+/start-\w+\.json, a file it was given"),
        (_on_argv, r"start: the password is on the command line \(argument \d+\)"),
        (_in_environment, r"start: the password is in the environment \(PGPASSWORD\)"),
        (
            _in_a_file_on_disk,
            r"start: fsbench_secret_fd \d+ is /\S+/secret-\w+, a file on disk, not a memfd",
        ),
    ],
    ids=["vars-file", "argv", "environment", "file-on-disk"],
)
def test_a_controller_that_hands_the_password_over_another_way_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, leak: Leak, violation: str
) -> None:
    """Must fire: the spy names the way the password came, in its record and on stderr
    (ansible.log), without quoting it; it refuses the call (the real Ansible would never
    run it), so no host starts."""
    password = "pw-" + secrets.token_hex(8)
    leak(monkeypatch, password, tmp_path)
    hosts, calls = _drive(tmp_path, monkeypatch, password)
    start = calls[0]
    assert start["playbook"] == "start"
    assert any(re.fullmatch(violation, v) for v in start["violations"]), start["violations"]
    assert password not in json.dumps(calls)
    assert {h.error for h in hosts.values()} == {"the run did not start (see ansible.log)"}
    (log,) = (tmp_path / "controller").glob("fleet-*/ansible.log")
    assert "fake ansible-playbook: REFUSED: start: " in log.read_text()
