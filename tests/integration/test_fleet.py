"""Many machines for real: an OpenSSH server on loopback addresses (127.0.0.2, 127.0.0.3),
Ansible from the venv, each "host" its own workdir and loop image (or a loop device as its
real disk), one store: a real PostgreSQL the tests start, or SQLite stores fetched and
merged. Several inventory hosts may share an address: each is its own part of the run."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fsbench.store.results import Store
from fsbench.system import engine as _engine
from tests.fakeansible import spy
from tests.helpers import (
    TEST_DATA_HOME,
    default_interrupts,
    fsbench,
    not_ok_trials,
    your_own_plan,
)
from tests.pgcluster import cluster
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
ALLOC_EXT4 = ["--fs", "ext4", *ALLOC[2:]]


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
    workdir: Path,
    inventory: Path,
    db: str,
    *args: str,
    timeout: float = 600,
    cwd: Path | None = None,
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
        cwd=cwd,
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
        members = {m.part_host: m for m in store.parts(store.get_run(int(run_id)).uid)}
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
            assert cell["verdict"] in ("better", "worse", "equivalent", "undecided"), cell
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


def _check_no_password(
    workdir: Path, db: str, password: str, outputs: list[str], since: float | None = None
) -> None:
    """Not in the output, the controller's directory (ansible.log, events and vars files,
    fetched stores), the hosts' workdirs, Ansible's job records, temporary files and caches
    on the hosts and the controller (~/.ansible: tmp/, any fact cache), the fleet's default
    directories, nor any row of the store; with `since`, nor any file changed since then
    in /tmp or /dev/shm (a temporary directory that ignored TMPDIR)."""
    for text in outputs:
        assert password not in text
    places = [workdir / "controller", workdir / "hosts", Path.home() / ".ansible_async"]
    places += [Path.home() / ".ansible", *DEFAULT_FLEET_DIRS]
    held = _holding(password.encode(), places)
    if since is not None:
        held += _holding(password.encode(), [Path("/tmp"), Path("/dev/shm")], since)
    if held:  # every path, in full (an assertion's own message is shortened)
        raise AssertionError("\n".join(["the password is in:", *map(str, held)]))
    from sqlalchemy import MetaData, create_engine

    from fsbench.store.dburl import to_url

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


# Where a fleet's controller and hosts keep their files when not told otherwise
# (docs/fleet.md): the tests tell them, so anything here is a leftover to check too.
DEFAULT_FLEET_DIRS = (Path("/var/tmp/fsbench-fleet-controller"), Path("/var/tmp/fsbench-fleet"))
SCAN_LIMIT = 64 << 20  # a file changed since the test began and larger than this is skipped


def _holding(secret: bytes, places: list[Path], since: float | None = None) -> list[Path]:
    """The regular files under `places` (changed since `since`, if given) that hold
    `secret`. A file that vanishes meanwhile (another run's Ansible temporary files) is
    skipped; one that cannot be read is an error, except with `since` (other work's
    temporary files)."""
    held = []
    for place in places:
        for root, _, names in os.walk(place):
            for name in names:
                path = Path(root) / name
                try:
                    st = path.lstat()
                    if not stat.S_ISREG(st.st_mode):
                        continue
                    if since is not None and (
                        max(st.st_mtime, st.st_ctime) < since or st.st_size > SCAN_LIMIT
                    ):
                        continue
                    if secret in path.read_bytes():
                        held.append(path)
                except FileNotFoundError:
                    continue
                except OSError:
                    if since is None:
                        raise
    return held


def _controller(workdir: Path, inventory: Path, db: str, *args: str) -> subprocess.Popen[str]:
    """`fsbench fleet run` in the background, for a test that acts on a host meanwhile."""
    env = {**os.environ, "XDG_DATA_HOME": str(TEST_DATA_HOME)}
    argv = [sys.executable, "-m", "fsbench.cli", "fleet", "run", "--inventory", str(inventory)]
    argv += ["--db", db, "--poll", "1", "--controller-dir", str(workdir / "controller"), *args]
    return subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_interrupts,  # a test may Ctrl-C it
    )


def _progress(hostdir: Path, done: int, timeout: float = 300) -> dict[str, int]:
    """The host's progress file once it counts `done` trials."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for path in hostdir.glob("progress-*.json"):
            data = json.loads(path.read_text() or "{}")
            if data.get("done", 0) >= done:
                return dict(data)
        time.sleep(0.2)
    raise AssertionError(f"{hostdir.name} never got to {done} trials")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in _state(pid)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return "gone"


def _failed_lines(stderr: str) -> dict[str, str]:
    out = {}
    for line in stderr.splitlines():
        if line.startswith("host ") and " failed: " in line:
            name, _, error = line.removeprefix("host ").partition(" failed: ")
            out[name] = error
    return out


def _report(db: Path, run_id: int) -> list[dict[str, object]]:
    res = fsbench("report", str(run_id), "--db", str(db), "--format", "json")
    assert res.returncode == 0, res.stderr
    return [r for r in json.loads(res.stdout)["rows"] if r["metric"] == "seconds"]


def test_hosts_unreachable_at_start_or_later_fail_alone_and_resume_finishes(
    workdir: Path, ssh: SshServer
) -> None:
    """gone never answers; lost answers, starts, then drops off the network (its sshd and
    every session end) while its fsbench goes on there (stopped, to keep it running): it
    fails alone past --unreachable-timeout. Back on the network with that fsbench still
    running, a resume refuses to start a second one on it; once it ended, a resume finishes
    the run."""
    with sshd(("127.0.0.5",)) as away:
        lost = dict(away.host_vars("127.0.0.5"))
        db = workdir / "fleet.db"
        inventory = _inventory(
            workdir, ssh, {"gone": {"ansible_host": "127.0.0.4"}, "lost": {**lost}}
        )
        controller = _controller(workdir, inventory, str(db), *ALLOC, "--unreachable-timeout", "4")
        pid = 0
        try:
            pid = int(_progress(workdir / "hosts" / "lost", done=1)["pid"])
            os.kill(pid, signal.SIGSTOP)
            away.drop()
            out, err = controller.communicate(timeout=600)
            assert controller.returncode == 4, out + err
            failed = _failed_lines(err)
            assert set(failed) == {"gone", "lost"}, err
            assert failed["gone"].startswith("unreachable at workdir: "), failed
            assert re.fullmatch(
                r"unreachable for \d+ s \(--unreachable-timeout 4\): .+", failed["lost"]
            )
            assert _alive(pid)  # the controller gave up on lost, not lost on its run
            run_id = Store(db).latest_run_id() or 0
            assert Store(db).get_run(run_id).status == "incomplete"
            rows = _report(db, run_id)
            assert {(r["host"], r["n"]) for r in rows} >= {("h2", 2), ("h3", 2)}

            # lost is back, gone is dropped from the inventory; lost's fsbench still runs.
            away.start()
            inventory = _inventory(workdir, ssh, {"lost": {**lost}})
            res = _fleet(workdir, inventory, str(db), "--resume", str(run_id))
            assert res.returncode == 4, res.stdout + res.stderr
            failed = _failed_lines(res.stderr)
            assert list(failed) == ["lost"], res.stderr
            assert failed["lost"].startswith(
                f"failed at one fsbench per host: fsbench pid {pid} of an earlier start still "
                "runs this host's part in "
            ), failed
            assert _alive(pid)
            started = list((workdir / "hosts" / "lost").glob("progress-*.json"))
            assert [json.loads(p.read_text())["pid"] for p in started] == [pid]  # no second

            os.kill(pid, signal.SIGCONT)
            deadline = time.monotonic() + 300
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            res = _fleet(workdir, inventory, str(db), "--resume", str(run_id), "--json")
            assert res.returncode == 0, res.stdout + res.stderr
            rows = [r for r in json.loads(res.stdout)["rows"] if r["metric"] == "seconds"]
            assert {r["host"] for r in rows} == {"h2", "h3", "lost"}
            assert all(r["n"] == 2 for r in rows), [(r["host"], r["config"], r["n"]) for r in rows]
        finally:
            if controller.poll() is None:
                controller.kill()
                controller.wait()
            if pid and _alive(pid):
                os.kill(pid, signal.SIGCONT)


def test_a_killed_host_is_resumed_alone(workdir: Path, ssh: SshServer) -> None:
    inventory = _inventory(workdir, ssh)
    db = workdir / "fleet.db"
    controller = _controller(workdir, inventory, str(db), *ALLOC[:-1], "4")
    try:
        progress = _progress(workdir / "hosts" / "h3", done=3)
        os.kill(int(progress["pid"]), signal.SIGKILL)  # kill -9 of h3's fsbench
        out, err = controller.communicate(timeout=600)
    finally:
        if controller.poll() is None:
            controller.kill()
            controller.wait()
    assert controller.returncode == 4, out + err
    assert list(_failed_lines(err)) == ["h3"], err
    store = Store(db)
    run_id = store.latest_run_id() or 0
    res = _fleet(workdir, inventory, str(db), "--resume", str(run_id), "--json")
    assert res.returncode == 0, res.stderr + not_ok_trials(db, run_id)
    rows = [r for r in json.loads(res.stdout)["rows"] if r["metric"] == "seconds"]
    assert {r["host"] for r in rows} == {"h2", "h3"}
    assert all(r["n"] == 4 for r in rows), [(r["host"], r["config"], r["n"]) for r in rows]


def test_a_postgresql_restart_is_waited_out_by_the_host_writing_it_and_fails_no_host(
    workdir: Path, ssh: SshServer
) -> None:
    """h2 writes into the fleet's PostgreSQL, h3 into its own SQLite store (fetched): the
    server stopped while h2 runs and started again 8 s later, h2 waits it out, h3 never
    notices, and every trial of both is in the store once."""
    with cluster() as own:
        url = own.url()
        inventory = _inventory(
            workdir, ssh, {"h3": {"ansible_host": "127.0.0.3", "fsbench_store": "fetch"}}
        )
        controller = _controller(workdir, inventory, url, *ALLOC[:-1], "3")
        try:
            _progress(workdir / "hosts" / "h2", done=2)
            own.stop("fast")
            time.sleep(8)
            own.start()
            out, err = controller.communicate(timeout=900)
        finally:
            if controller.poll() is None:
                controller.kill()
                controller.wait()
        assert controller.returncode == 0, out + err
        assert list(_failed_lines(err)) == [], err
        store = Store(url)
        try:
            run = store.get_run(store.latest_run_id() or 0)
            members = {m.part_host: m for m in store.parts(run.uid)}
            assert set(members) == {"h2", "h3"}
            for member in members.values():
                trials = store.get_trials(member.id)
                assert member.status == "finished", member.part_host
                assert sorted(t.seq for t in trials) == list(range(len(member.schedule)))
        finally:
            store.close()
        assert own.password not in out + err


def test_ctrl_c_on_the_controller_ends_every_hosts_run_and_keeps_their_trials(
    workdir: Path, ssh: SshServer
) -> None:
    """Ctrl-C: stop.yml ends each host's fsbench like Ctrl-C (SIGTERM to the pid its
    progress file names), the controller collects what they stored and exits 130."""
    inventory = _inventory(workdir, ssh)
    db = workdir / "fleet.db"
    # 50 reps: a tiny trial lasts ~0.2 s here, the hosts must still run when stop.yml comes.
    controller = _controller(workdir, inventory, str(db), *ALLOC[:-1], "50")
    try:
        pids = [int(_progress(workdir / "hosts" / h, done=2)["pid"]) for h in ("h2", "h3")]
        controller.send_signal(signal.SIGINT)
        out, err = controller.communicate(timeout=300)
    finally:
        if controller.poll() is None:
            controller.kill()
            controller.wait()
    assert controller.returncode == 130, out + err
    assert not [pid for pid in pids if _alive(pid)]  # ended, not left running
    store = Store(db)
    run_id = store.latest_run_id() or 0
    assert f"`fsbench resume {run_id}` goes on with it" in err
    assert store.get_run(run_id).status == "interrupted"
    members = store.parts(store.get_run(run_id).uid)
    assert {m.part_host for m in members} == {"h2", "h3"}
    assert all(m.status == "interrupted" for m in members), [m.status for m in members]
    assert all(2 <= len(store.get_trials(m.id)) < len(m.schedule) for m in members)


def _loop_device(workdir: Path, name: str) -> str:
    """A 1 GiB loop device of the test's own (released with the workdir)."""
    image = workdir / f"{name}.img"
    with image.open("wb") as f:
        f.truncate(1 << 30)
    return subprocess.run(
        ["losetup", "--find", "--show", str(image)], check=True, capture_output=True, text=True
    ).stdout.strip()


def _blkid(device: str) -> str:
    res = subprocess.run(
        ["blkid", "-p", "-o", "export", device], capture_output=True, text=True, check=False
    )
    return res.stdout


def test_limit_and_each_hosts_own_device_with_its_safety_checks(
    workdir: Path, ssh: SshServer
) -> None:
    """--limit disks runs the three hosts of group disks only. Each names its own real disk
    (a loop device here): without fsbench_destroy_data it is refused; with it, it is used;
    one that carries a filesystem fsbench did not make is refused all the same."""
    blank, used, foreign = (_loop_device(workdir, n) for n in ("blank", "used", "foreign"))
    subprocess.run(["mkfs.ext4", "-q", "-L", "data", foreign], check=True)
    disks: dict[str, dict[str, str | None]] = {
        "refused": {"ansible_host": "127.0.0.2", "fsbench_device": blank},
        "used": {"ansible_host": "127.0.0.3", "fsbench_device": used},
        "foreign": {"ansible_host": "127.0.0.2", "fsbench_device": foreign},
    }
    for name in ("used", "foreign"):
        disks[name]["fsbench_destroy_data"] = "true"
    groups = {"baseline": ["h2"], "dev": ["h3"], "disks": list(disks)}
    inventory = _inventory(workdir, ssh, dict(disks), groups)
    db = workdir / "fleet.db"
    res = _fleet(workdir, inventory, str(db), *ALLOC_EXT4, "--limit", "disks")
    assert res.returncode == 4, res.stdout + res.stderr
    failed = _failed_lines(res.stderr)
    assert set(failed) == {"refused", "foreign"}, res.stderr
    assert failed["refused"] == f"--device needs --destroy-data: every byte on {blank} is lost"
    assert failed["foreign"].startswith(
        f"{foreign} carries a signature (ext4 labelled 'data'); fsbench only overwrites"
    ), failed
    store = Store(db)
    run_id = store.latest_run_id() or 0
    assert set(store.get_run(run_id).target["hosts"]) == set(disks)  # --limit: no h2, h3
    members = store.parts(store.get_run(run_id).uid)
    assert [m.part_host for m in members] == ["used"]
    assert members[0].target["kind"] == "device"
    assert members[0].target["path"] == os.path.realpath(used)
    assert {(r["host"], r["n"]) for r in _report(db, run_id)} == {("used", 2)}
    assert not (workdir / "hosts" / "h2").exists() and not (workdir / "hosts" / "h3").exists()
    assert _blkid(blank) == ""  # refused devices are as they were
    assert "LABEL=data" in _blkid(foreign) and "TYPE=ext4" in _blkid(foreign)


# The controller with tests/fakeansible/spy.py in front of ansible-playbook.
SPY_CONTROLLER = REPO / "tests" / "fakeansible" / "controller.py"


def _spy_env(workdir: Path, password: str, blind: bool = False) -> dict[str, str]:
    """The environment of a controller run through SPY_CONTROLLER: its temporary files
    in the workdir, the spy told the password (hex; not when `blind`: then it checks
    nothing and lets every call through) and where to log each call."""
    (workdir / "spy").mkdir(exist_ok=True)
    (workdir / "tmp").mkdir(exist_ok=True)
    env = {
        **os.environ,
        "XDG_DATA_HOME": str(TEST_DATA_HOME),
        "TMPDIR": str(workdir / "tmp"),
        spy.LOG: str(workdir / "spy" / "calls.jsonl"),
    }
    if not blind:
        env[spy.SECRET_HEX] = password.encode().hex()
    return env


def _spy_calls(workdir: Path) -> list[dict[str, Any]]:
    """The spy's record of every ansible-playbook call, in order."""
    path = workdir / "spy" / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@dataclass
class KilledInStart:
    vars_file: Path  # the vars file of the start call the kill interrupted
    out: Path  # the controller's stdout and stderr
    since: float  # when the controller started


@contextmanager
def _killed_in_start(
    workdir: Path,
    inventory: Path,
    db: str,
    password: str,
    *args: str,
    leak: str = "",
    blind: bool = False,
) -> Iterator[KilledInStart]:
    """`fsbench fleet run ARGS` through the spy, kill -9 of its process group while its
    start call (the one call that carries the password) is in flight. Not a race: the
    spy's callback holds start's ansible-playbook at the end of its play (every host given
    its password file and its job started, Ansible's temporary files not yet removed), or
    the spy holds a call it refused, and says so in a file; the controller is killed once
    that file exists, start's vars file still on disk and the password's memfd still open
    in ansible-playbook. `leak` makes the controller leak on purpose (controller.py), and
    `blind` keeps the spy from checking anything (a leaking start then runs). On
    every path, ends what the test started that still runs there: the controller, the
    hosts' fsbench and async wrappers, the SSH masters the controller kept open."""
    env = {**_spy_env(workdir, password, blind), spy.BLOCK: "start"}
    ready = workdir / "spy" / "ready"
    env[spy.READY] = str(ready)
    if leak:
        env["FSBENCH_SPY_LEAK"] = leak
    argv = [sys.executable, str(SPY_CONTROLLER), "fleet", "run", "--inventory", str(inventory)]
    argv += ["--db", db, "--poll", "1", "--controller-dir", str(workdir / "controller"), *args]
    out = workdir / "controller.out"
    since = time.time()
    with out.open("wb") as sink:
        controller = subprocess.Popen(
            argv, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 300
        while not ready.exists():
            assert controller.poll() is None, out.read_text(errors="replace")
            assert time.monotonic() < deadline, "start never got to its end"
            time.sleep(0.1)
        held_by = int(json.loads(ready.read_text())["pid"])
        assert json.loads(ready.read_text())["playbook"] == "start"
        # In flight: the controller waits on start's ansible-playbook, which still holds
        # the password's memfd, and start's vars file is on disk.
        assert controller.poll() is None
        fds = _open_files(held_by)
        assert any(fd.startswith("/memfd:fsbench-secret") for fd in fds), fds
        (vars_file,) = (workdir / "controller").glob("fleet-*/start-*.json")
        os.killpg(controller.pid, signal.SIGKILL)
        controller.wait(timeout=30)
        deadline = time.monotonic() + 30
        while _alive(held_by) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(held_by)
        yield KilledInStart(vars_file, out, since)
    finally:
        if controller.poll() is None:
            os.killpg(controller.pid, signal.SIGKILL)
            controller.wait()
        for pid in _started_under(workdir):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        # The SSH masters the killed controller left (ControlPersist) end now.
        for sock in (workdir / "tmp").glob("fsb-cp-*/*"):
            subprocess.run(
                ["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "fsbench-fleet"],
                capture_output=True,
                timeout=30,
                check=False,
            )


def _open_files(pid: int) -> list[str]:
    """What the descriptors of process `pid` point to."""
    out = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            out.append(os.readlink(fd))
        except FileNotFoundError:
            continue  # closed meanwhile
    return out


def _started_under(workdir: Path) -> list[int]:
    """Live processes whose command line names `workdir`: what this test started there
    (the hosts' fsbench, the SSH masters of a killed controller), never this process."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if str(workdir).encode() in cmdline and _alive(int(entry.name)):
            pids.append(int(entry.name))
    return pids


def test_a_controller_killed_with_9_during_start_leaves_no_password_on_disk(
    workdir: Path, ssh: SshServer, pg_url: str, pg_password: str
) -> None:
    """kill -9 of the controller and everything it started (its process group) while its
    start call is in flight, the one call that carries the password. The spy saw the
    password come to start as the memfd alone. Nothing on disk holds it afterwards: not
    start's vars file (still there: nothing removed it), the controller's directory
    (ansible.log, events files, Ansible's local temporary files) or its temporary
    directory, not the hosts' workdirs (each host's fsbench took its password file when it
    started), not Ansible's temporary files, caches or job records, not a file changed in
    /tmp or /dev/shm meanwhile. The hosts' runs go on without the controller and store
    every trial into PostgreSQL; the fleet run, left unfinished by the dead controller, is
    finished by `fsbench fleet run --resume` (docs/fleet.md) with no host started again,
    and still nothing holds the password."""
    inventory = _inventory(workdir, ssh)
    with _killed_in_start(workdir, inventory, pg_url, pg_password, *ALLOC[:-1], "12") as killed:
        calls = _spy_calls(workdir)
        assert [(c["playbook"], c["secret_via"], c["violations"]) for c in calls] == [
            ("start", "memfd", [])
        ]
        assert calls[0]["hosts"] == ["h2", "h3"]
        assert killed.vars_file.exists()  # left by the kill, scanned below
        pids = [int(_progress(workdir / "hosts" / h, done=1)["pid"]) for h in ("h2", "h3")]
        for h in ("h2", "h3"):
            assert not (workdir / "hosts" / h / "pgpass").exists(), h  # taken at its start
        deadline = time.monotonic() + 600
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not any(_alive(p) for p in pids), "the hosts' runs did not end"
        output = killed.out.read_text(errors="replace")
        _check_no_password(workdir, pg_url, pg_password, [output], since=killed.since)
        for path in workdir.rglob("*"):
            if path.is_file() and not path.is_symlink():
                assert pg_password.encode() not in path.read_bytes(), path
    store = Store(pg_url)
    try:
        run = store.get_run(store.latest_run_id() or 0)
        assert run.status == "running"  # nobody said otherwise: the controller died
        members = store.parts(run.uid)
        assert {m.part_host: m.status for m in members} == {"h2": "finished", "h3": "finished"}
        for member in members:
            assert len({t.seq for t in store.get_trials(member.id)}) == len(member.schedule)
        stored = {m.part_host: len(store.get_trials(m.id)) for m in members}
    finally:
        store.close()

    since = time.time()
    resume = [sys.executable, str(SPY_CONTROLLER), "fleet", "run", "--resume", str(run.id)]
    resume += ["--inventory", str(inventory), "--db", pg_url, "--poll", "1"]
    resume += ["--controller-dir", str(workdir / "controller")]
    res = subprocess.run(
        resume,
        env=_spy_env(workdir, pg_password),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    again = _spy_calls(workdir)[len(calls) :]
    assert [(c["playbook"], c["violations"]) for c in again] == [("collect", [])]
    store = Store(pg_url)
    try:
        assert store.get_run(run.id).status == "finished"
        members = store.parts(run.uid)
        assert {m.part_host: len(store.get_trials(m.id)) for m in members} == stored
    finally:
        store.close()
    _check_no_password(workdir, pg_url, pg_password, [res.stdout, res.stderr], since=since)


@pytest.mark.parametrize("blind", [False, True], ids=["spy-refuses", "spy-blind"])
def test_the_kill_in_start_catches_a_password_in_starts_vars_file(
    workdir: Path, ssh: SshServer, pg_url: str, pg_password: str, blind: bool
) -> None:
    """Must fire: the same kill, of a controller that leaks on purpose: the function that
    builds the playbooks' variables puts the libpq password line in them (as the
    controller before the memfd did). The spy names start's vars file and refuses the call
    (no host is given anything); with the spy blind, the real Ansible runs that start and
    is held at its end. Either way, after the kill that file is still on disk, and the scan
    the test above passes names it."""
    inventory = _inventory(workdir, ssh)
    with _killed_in_start(
        workdir, inventory, pg_url, pg_password, *ALLOC_EXT4, leak="start-vars", blind=blind
    ) as killed:
        (call,) = _spy_calls(workdir)
        assert call["playbook"] == "start"
        named = f"start: the password is in {killed.vars_file}, a file it was given"
        assert (named in call["violations"]) != blind, call["violations"]
        assert pg_password not in json.dumps(call)
        with pytest.raises(AssertionError) as caught:
            _check_no_password(workdir, pg_url, pg_password, [], since=killed.since)
        assert str(killed.vars_file) in str(caught.value).splitlines()
        if blind:  # start ran: let the hosts' short runs end before the workdir goes
            pids = [int(_progress(workdir / "hosts" / h, done=0)["pid"]) for h in ("h2", "h3")]
            deadline = time.monotonic() + 600
            while any(_alive(p) for p in pids) and time.monotonic() < deadline:
                time.sleep(0.5)
    assert (workdir / "hosts").exists() == blind  # refused: no host was reached


def test_your_own_command_and_a_replay_on_a_host(workdir: Path, ssh: SshServer) -> None:
    """A command runs on the host as given; the trace, on the controller and named relative
    to the controller's directory, is copied to the host by Ansible (start.yml) and the
    host's plan names the copy, relative to its fsbench_dir: the replay makes every
    recorded call there, none unlike the recording."""
    plan, trace = your_own_plan(workdir)
    recorded = _engine.trace_summary(trace)
    host = workdir / "hosts" / "h2"
    given = {"ansible_host": "127.0.0.2", "fsbench_path": str(REPO), "fsbench_workdir": str(host)}
    inventory = write_inventory(workdir / "hosts.ini", ssh, {"h2": given}, {"dev": ["h2"]})
    db = workdir / "fleet.db"
    args = [str(plan), "--scale", "tiny", "--reps", "2", "--warmup", "0", "--image-size", "1G"]
    res = _fleet(workdir, inventory, str(db), *args, "--json", cwd=workdir)
    assert res.returncode == 0, res.stderr + not_ok_trials(db, Store(db).latest_run_id() or 0)
    rows = {(r["workload"], r["metric"]): r for r in json.loads(res.stdout)["rows"]}
    assert rows[("command", "files_made")]["n"] == 2
    assert rows[("command", "files_made")]["mean"] == 50
    assert rows[("replay", "calls")]["mean"] == recorded["calls"] > 0
    assert rows[("replay", "mismatches")]["mean"] == 0
    assert rows[("replay", "calls_not_replayed")]["mean"] == 0
    copy = "inputs/0-made.fsbt.gz"
    assert rows[("replay", "calls")]["params"]["trace"] == copy
    assert (host / copy).read_bytes() == trace.read_bytes()
