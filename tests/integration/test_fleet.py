"""Many machines for real: an OpenSSH server on loopback addresses (127.0.0.2, 127.0.0.3),
Ansible from the venv, each "host" its own workdir and loop image, one store: a real
PostgreSQL the tests start, or SQLite stores fetched and merged."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fsbench.store import Store
from tests.helpers import TEST_DATA_HOME, fsbench
from tests.sshd import SshServer, sshd, write_inventory

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
ALLOC = [
    "--fs",
    "ext4,xfs",
    "--workload",
    "alloc",
    "--set",
    "method=fallocate",
    "--set",
    "size=16M",
    "--scale",
    "tiny",
    "--image-size",
    "1G",
    "--reps",
    "2",
]


@pytest.fixture(scope="module")
def ssh() -> Iterator[SshServer]:
    with sshd(("127.0.0.2", "127.0.0.3")) as server:
        yield server


def _inventory(
    workdir: Path, ssh: SshServer, extra: dict[str, dict[str, str]] | None = None
) -> Path:
    hosts = {
        "h2": {"ansible_host": "127.0.0.2"},
        "h3": {"ansible_host": "127.0.0.3"},
        **(extra or {}),
    }
    for name, variables in hosts.items():
        variables.setdefault("fsbench_path", str(REPO))
        variables.setdefault("fsbench_workdir", str(workdir / "hosts" / name))
    groups = {"baseline": ["h2"], "dev": [n for n in hosts if n != "h2"]}
    return write_inventory(workdir / "hosts.ini", ssh, hosts, groups)


def _fleet(
    workdir: Path, inventory: Path, db: str, *args: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return fsbench(
        "fleet",
        "run",
        "--inventory",
        str(inventory),
        "--db",
        db,
        "--poll",
        "1",
        "--controller-dir",
        str(workdir / "controller"),
        *args,
        timeout=timeout,
    )


def test_two_hosts_into_postgresql_then_compare_by_host_and_group(
    workdir: Path, ssh: SshServer, pg_url: str, pg_password: str
) -> None:
    inventory = _inventory(workdir, ssh)
    res = _fleet(workdir, inventory, pg_url, *ALLOC, "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    rows = [r for r in doc["rows"] if r["metric"] == "seconds"]
    assert {(r["host"], r["config"]) for r in rows} == {
        (h, c) for h in ("h2", "h3") for c in ("ext4", "xfs")
    }
    assert all(r["n"] == 2 and r["status"] == "ok" for r in rows)
    run_id = str(doc["run"])
    for by, levels in (("host", ("h2", "h3")), ("group", ("baseline", "dev"))):
        cmp = fsbench("compare", run_id, "--by", by, "--db", pg_url)
        assert cmp.returncode == 0, cmp.stderr
        assert all(level in cmp.stdout for level in levels)
        assert "verdict" in cmp.stdout.lower() or "no clear difference" in cmp.stdout
    differs = fsbench("compare", run_id, "--by", "host", "--db", pg_url, "--format", "json")
    facts = json.loads(differs.stdout)
    assert "hosts" in facts and set(facts["hosts"]) >= {"h2", "h3"}
    for text in (res.stdout, res.stderr, cmp.stdout, cmp.stderr, differs.stdout):
        assert pg_password not in text
    assert not list((workdir / "hosts" / "h2").glob("pgpass"))  # forgotten after the run


def test_an_unreachable_host_fails_alone(workdir: Path, ssh: SshServer, tmp_path: Path) -> None:
    inventory = _inventory(workdir, ssh, {"gone": {"ansible_host": "127.0.0.4"}})
    db = workdir / "fleet.db"
    res = _fleet(workdir, inventory, str(db), *ALLOC)
    assert res.returncode == 4, res.stdout + res.stderr
    gone = [ln for ln in res.stderr.splitlines() if ln.startswith("host gone failed")]
    assert len(gone) == 1 and "unreachable" in gone[0]
    store = Store(db)
    run_id = store.latest_run_id() or 0
    report = json.loads(fsbench("report", str(run_id), "--db", str(db), "--format", "json").stdout)
    hosts = {r["host"] for r in report["rows"]}
    assert hosts == {"h2", "h3"}  # every trial of the others, fetched and merged
    seconds = [r for r in report["rows"] if r["metric"] == "seconds"]
    assert all(r["n"] == 2 for r in seconds)


def test_a_killed_host_is_resumed_alone(workdir: Path, ssh: SshServer) -> None:
    inventory = _inventory(workdir, ssh)
    db = workdir / "fleet.db"
    env = {**os.environ, "XDG_DATA_HOME": str(TEST_DATA_HOME)}
    controller = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fsbench",
            "fleet",
            "run",
            "--inventory",
            str(inventory),
            "--db",
            str(db),
            "--poll",
            "1",
            "--controller-dir",
            str(workdir / "controller"),
            *ALLOC[:-1],
            "4",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        progress = None
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and progress is None:
            for path in (workdir / "hosts" / "h3").glob("progress-*.json"):
                data = json.loads(path.read_text() or "{}")
                if data.get("done", 0) >= 3:
                    progress = data
            time.sleep(0.2)
        assert progress is not None, "h3 never got going"
        os.kill(int(progress["pid"]), signal.SIGKILL)  # kill -9 of h3's fsbench
        out, err = controller.communicate(timeout=600)
    finally:
        if controller.poll() is None:
            controller.kill()
            controller.wait()
    assert controller.returncode == 4, out + err
    assert any(ln.startswith("host h3 failed") for ln in err.splitlines()), err
    store = Store(db)
    run_id = store.latest_run_id() or 0
    res = _fleet(workdir, inventory, str(db), "--resume", str(run_id), "--json")
    assert res.returncode == 0, res.stderr
    rows = [r for r in json.loads(res.stdout)["rows"] if r["metric"] == "seconds"]
    assert {r["host"] for r in rows} == {"h2", "h3"}
    assert all(r["n"] == 4 for r in rows), [(r["host"], r["config"], r["n"]) for r in rows]
