"""Many machines for real: an OpenSSH server on loopback addresses (127.0.0.2, 127.0.0.3),
Ansible from the venv, each "host" its own workdir and loop image (or a loop device as its
real disk), one store: a real PostgreSQL the tests start, or SQLite stores fetched and
merged. Several inventory hosts may share an address: each is its own part of the run."""

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
    workdir: Path,
    ssh: SshServer,
    extra: dict[str, dict[str, str | None]] | None = None,
    groups: dict[str, list[str]] | None = None,
) -> Path:
    """h2 (group baseline) and h3 (dev) and the `extra` hosts (dev, unless `groups` says
    otherwise), each using this checkout's fsbench and its own workdir; a variable given
    as None is left out (fsbench_path: None makes the host install fsbench)."""
    given: dict[str, dict[str, str | None]] = {
        "h2": {"ansible_host": "127.0.0.2"},
        "h3": {"ansible_host": "127.0.0.3"},
        **(extra or {}),
    }
    hosts: dict[str, dict[str, str]] = {}
    for name, variables in given.items():
        variables.setdefault("fsbench_path", str(REPO))
        variables.setdefault("fsbench_workdir", str(workdir / "hosts" / name))
        hosts[name] = {k: v for k, v in variables.items() if v is not None}
    groups = groups or {"baseline": ["h2"], "dev": [n for n in hosts if n != "h2"]}
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


def test_into_postgresql_beside_a_fetched_host_that_installs_fsbench_then_compare(
    workdir: Path, ssh: SshServer, pg_url: str, pg_password: str
) -> None:
    """h2 writes into PostgreSQL; h3 keeps its own SQLite store (fetched and merged) and
    has no fsbench_path: it installs fsbench from the source with the README's `make
    install`; nojob fails before its job starts (its Ansible async directory cannot be
    made) after it was given the password file. Every trial ends in PostgreSQL, the
    password nowhere else, and compare --by host/group judges every metric."""
    inventory = _inventory(
        workdir,
        ssh,
        {
            "h3": {"ansible_host": "127.0.0.3", "fsbench_store": "fetch", "fsbench_path": None},
            "nojob": {"ansible_host": "127.0.0.2", "ansible_async_dir": "/proc/no-async-dir"},
        },
    )
    res = _fleet(workdir, inventory, pg_url, *ALLOC, "--json")
    assert res.returncode == 4, res.stderr
    failed = [ln for ln in res.stderr.splitlines() if ln.startswith("host ")]
    assert len(failed) == 1 and failed[0].startswith("host nojob failed: failed at run: "), failed
    doc = json.loads(res.stdout)
    rows = [r for r in doc["rows"] if r["metric"] == "seconds"]
    assert {(r["host"], r["config"]) for r in rows} == {
        (h, c) for h in ("h2", "h3") for c in ("ext4", "xfs")
    }
    assert all(r["n"] == 2 and r["status"] == "ok" for r in rows)
    run_id = str(doc["run"])

    # Every scheduled trial of both hosts is in PostgreSQL (h3's fetched and merged), and
    # h3's were made by the fsbench it installed.
    store = Store(pg_url)
    try:
        members = {m.fleet_host: m for m in store.fleet_members(store.get_run(int(run_id)).uid)}
        assert set(members) == {"h2", "h3"}
        for member in members.values():
            trials = store.get_trials(member.id)
            assert member.status == "finished"
            assert sorted(t.seq for t in trials) == list(range(len(member.schedule)))
            assert all(t.status == "ok" for t in trials)
        installed = workdir / "hosts" / "h3" / "src" / ".venv" / "bin" / "fsbench"
        assert members["h3"].argv[0] == str(installed)
        assert members["h2"].argv[0] == str(REPO / ".venv" / "bin" / "fsbench")
    finally:
        store.close()

    _check_compare(run_id, pg_url)
    _check_no_password(workdir, pg_url, pg_password, [res.stdout, res.stderr])
    # nojob had the password file (given before its job failed to start): forgotten too.
    log = _ansible_log(workdir)
    given = log.split("TASK [database password]", 1)[1].split("TASK [", 1)[0]
    assert "changed: [nojob]" in given
    for host in ("h2", "h3", "nojob"):
        assert not (workdir / "hosts" / host / "pgpass").exists(), host


def _ansible_log(workdir: Path) -> str:
    (fleet,) = (workdir / "controller").glob("fleet-*")
    return (fleet / "ansible.log").read_text()


# The facts "what differs between these hosts" has for every host (README, reports/hosts);
# the device's model and rotational flag are "?" where the kernel does not say.
HOST_FACTS = ("kernel", "cpu", "memory", "device model", "rotational", "fsbench", "python")
ALWAYS_KNOWN = ("hostname", "kernel", "cpu", "memory", "fsbench", "python")


def _check_compare(run_id: str, db: str) -> None:
    """compare --by host and --by group: one verdict per metric compared, the same in the
    table and in JSON; the JSON's hosts each with every documented fact."""
    for by, levels in (("host", ("h2", "h3")), ("group", ("baseline", "dev"))):
        shown = fsbench("compare", run_id, "--by", by, "--db", db)
        assert shown.returncode == 0, shown.stderr
        got = fsbench("compare", run_id, "--by", by, "--db", db, "--format", "json")
        assert got.returncode == 0, got.stderr
        doc = json.loads(got.stdout)
        cells = doc["cells"]
        # Each config's headline metrics, judged once each.
        metrics = {
            c["config"]: sorted(x["metric"] for x in cells if x["config"] == c["config"])
            for c in cells
        }
        assert set(metrics) == {"ext4", "xfs"} and metrics["ext4"] == metrics["xfs"], metrics
        assert len(cells) == sum(len(m) for m in metrics.values()) > 0
        lines = shown.stdout.splitlines()
        for cell in cells:
            assert cell["verdict"] in ("better", "worse", "no clear difference"), cell
            mine = [
                ln
                for ln in lines
                if ln.strip().startswith(cell["config"] + " ") and f" {cell['metric']} " in ln
            ]
            assert len(mine) == 1, (cell["config"], cell["metric"], shown.stdout)
            assert mine[0].rstrip().endswith(cell["text"]), mine[0]
        assert "what differs between these hosts" in shown.stdout
        hosts = doc["hosts"]
        assert set(hosts) >= set(levels if by == "host" else ("h2", "h3"))
        for name, facts in hosts.items():
            assert all(f in facts for f in HOST_FACTS), (name, facts)
            unknown = [f for f in ALWAYS_KNOWN if facts[f] in ("", "?") or "?" in facts[f]]
            assert not unknown, (name, unknown, facts)
            assert any(k.startswith("tool ") for k in facts), (name, facts)
        assert all(len(set(v.values())) > 1 for v in doc["differences"].values())


def _check_no_password(workdir: Path, db: str, password: str, outputs: list[str]) -> None:
    """Not in the output, the controller's directory (ansible.log, events and vars files,
    fetched stores), the hosts' workdirs, Ansible's job records and temporary files on the
    hosts, nor any row of the store."""
    for text in outputs:
        assert password not in text
    secret = password.encode()
    places = [workdir / "controller", workdir / "hosts", Path.home() / ".ansible_async"]
    places.append(Path.home() / ".ansible" / "tmp")
    for place in places:
        for path in place.rglob("*") if place.exists() else []:
            if path.is_file() and not path.is_symlink():
                assert secret not in path.read_bytes(), path
    from sqlalchemy import MetaData, create_engine

    from fsbench.dburl import to_url

    engine = create_engine(to_url(db))
    try:
        tables = MetaData()
        tables.reflect(engine)
        with engine.connect() as conn:
            for table in tables.sorted_tables:
                for row in conn.execute(table.select()):
                    assert password not in repr(tuple(row)), table.name
    finally:
        engine.dispose()


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
