"""How far a fleet run goes: the same tiny plan on 1, 4 and 16 loopback "hosts" (one sshd
on 127.0.0.2..17, each host its own workdir and loop image on this machine), measuring the
controller's overhead per host and how fast trials come into the store.

    python3 bench/fleet_scale.py [--hosts 1,4,16] [--store fetch|postgresql] [--poll 2]

What it measured is kept in bench/results/fleet_scale-<store>.json (with the machine
and the date; --no-save: not).

Per fleet size it prints: seconds from the controller's start to the first trial of each
host (median, max), seconds from the last trial's end to the controller's end, the
controller's total, trials stored, and trials merged per second (fetch mode: the merge of
the hosts' SQLite stores into the shared one, timed apart). It also prints how long each
of the controller's ansible-playbook calls took (start, every status poll, collect: the
controller's calls.jsonl), and from the polls of the smallest and largest fleet what one
more host adds to a poll. With --store postgresql (a cluster the bench starts, Unix socket
only, unless --db names one) the hosts write straight into PostgreSQL, and the peak number
of its client connections during the run is sampled (pg_stat_activity, every 0.2 s).

All hosts share this machine's cores (2 on the machine these numbers were first taken on),
with the controller: the trials themselves slow down with the fleet's size, and so does
Ansible; the overheads are the numbers that matter. Needs root, Debian's openssh-server
(and postgresql for --store postgresql). Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))

from fsbench.fleet.ansible import CALLS, read_calls  # noqa: E402
from fsbench.store.dburl import to_url  # noqa: E402
from fsbench.store.merge import merge_store  # noqa: E402
from fsbench.store.results import Store  # noqa: E402
from tests.pgcluster import cluster  # noqa: E402
from tests.sshd import sshd, write_inventory  # noqa: E402

sys.path.insert(0, str(REPO / "bench"))
from results_file import save, trial_conditions  # noqa: E402

PLAN = [
    "--fs",
    "ext4",
    "--workload",
    "alloc",
    "--set",
    "method=fallocate",
    "--set",
    "size=16M",
    "--scale",
    "tiny",
    "--image-size",
    "512M",
    "--reps",
    "2",
    "--warmup",
    "0",
]


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


class PeakConnections:
    """The most client connections PostgreSQL had at once (pg_stat_activity, this
    sampler's own left out), sampled in a thread while the fleet runs."""

    def __init__(self, url: str, every: float = 0.2) -> None:
        from sqlalchemy import create_engine

        self.engine = create_engine(to_url(url), pool_size=1)
        self.every, self.peak, self.samples = every, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        from sqlalchemy import text

        query = text(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
        )
        with self.engine.connect() as conn:
            while not self._stop.is_set():
                self.peak = max(self.peak, int(conn.execute(query).scalar_one()))
                self.samples += 1
                conn.rollback()
                self._stop.wait(self.every)

    @contextmanager
    def running(self) -> Iterator[PeakConnections]:
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join()
            self.engine.dispose()


def call_times(controller: Path) -> dict[str, Any]:
    """The controller's ansible-playbook calls of this run: seconds and controller CPU
    seconds of start and collect, and of the status polls (count, median)."""
    calls = [c for path in controller.glob(f"fleet-*/{CALLS}") for c in read_calls(path)]
    polls = [c for c in calls if c["playbook"] == "status"]

    def total(name: str, key: str) -> float:
        return float(sum(c[key] for c in calls if c["playbook"] == name))

    def median(key: str) -> float:
        return statistics.median(c[key] for c in polls) if polls else float("nan")

    return {
        "start_s": total("start", "seconds"),
        "start_cpu_s": total("start", "cpu_s"),
        "polls": len(polls),
        "poll_median_s": median("seconds"),
        "poll_cpu_median_s": median("cpu_s"),
        "collect_s": total("collect", "seconds"),
        "collect_cpu_s": total("collect", "cpu_s"),
    }


def one_size(n: int, base: Path, db: str, poll: float, pg: bool) -> dict[str, Any]:
    addresses = [f"127.0.0.{2 + i}" for i in range(n)]
    sampler = PeakConnections(db).running() if pg else nullcontext(None)
    with sshd(addresses) as server, sampler as peak:
        hosts = {
            f"h{i}": {
                "ansible_host": a,
                "fsbench_path": str(REPO),
                "fsbench_workdir": str(base / f"n{n}" / f"h{i}"),
            }
            for i, a in enumerate(addresses)
        }
        inventory = write_inventory(
            base / f"hosts-{n}.ini", server, hosts, {"all_hosts": list(hosts)}
        )
        t0 = time.time()
        res = subprocess.run(
            [
                sys.executable,
                "-m",
                "fsbench.cli",
                "fleet",
                "run",
                "--inventory",
                str(inventory),
                "--db",
                db,
                "--poll",
                str(poll),
                "--forks",
                str(max(n, 1)),
                "--controller-dir",
                str(base / f"controller-{n}"),
                *PLAN,
                "--json",
            ],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        )
        t1 = time.time()
    if res.returncode != 0:
        raise SystemExit(f"fleet of {n}: exit {res.returncode}: {res.stderr[-2000:]}")
    run_id = json.loads(res.stdout)["run"]
    store = Store(db)
    try:
        fleet = store.get_run(run_id)
        firsts, lasts, trials = [], [], 0
        for member in store.parts(fleet.uid):
            got = store.get_trials(member.id)
            trials += len(got)
            firsts.append(min(_ts(t.started_at) for t in got) - t0)
            lasts.append(max(_ts(t.finished_at) for t in got))
    finally:
        store.close()
    merged_per_s = float("nan")
    stores = sorted((base / f"controller-{n}").glob("fleet-*/stores/*.db"))
    times = call_times(base / f"controller-{n}")
    if stores:
        scratch = Store(base / f"merge-{n}.db")
        try:
            m0 = time.monotonic()
            for path in stores:
                src = Store(path)
                try:
                    merge_store(src, scratch)
                finally:
                    src.close()
            merged_per_s = trials / (time.monotonic() - m0)
        finally:
            scratch.close()
    return {
        "hosts": n,
        "first_trial_median_s": statistics.median(firsts),
        "first_trial_max_s": max(firsts),
        "after_last_s": t1 - max(lasts),
        "total_s": t1 - t0,
        "trials": trials,
        "merged_per_s": merged_per_s,
        **times,
        "peak_connections": peak.peak if peak is not None else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--hosts", default="1,4,16")
    ap.add_argument("--store", choices=("fetch", "postgresql"), default="fetch")
    ap.add_argument(
        "--db", help="a postgresql:// URL for --store postgresql (default: a cluster of its own)"
    )
    ap.add_argument("--poll", type=float, default=2.0)
    ap.add_argument("--no-save", action="store_true", help="no bench/results file")
    args = ap.parse_args()
    started = datetime.now(UTC)
    if os.geteuid() != 0:
        raise SystemExit("needs root (sshd as root, loop devices, mkfs)")
    pg = args.store == "postgresql"
    own_cluster = cluster() if pg and args.db is None else nullcontext(None)
    with (
        tempfile.TemporaryDirectory(prefix="fsbench-fleet-scale-", dir="/var/tmp") as tmp,
        own_cluster as made,
    ):
        base = Path(tmp)
        results = []
        for n in (int(x) for x in args.hosts.split(",")):
            if not pg:
                db = str(base / f"fleet-{n}.db")
            elif made is not None:
                db = made.createdb(f"fleet{n}")
            else:
                db = args.db
            with trial_conditions() as conditions:
                results.append(one_size(n, base, db, args.poll, pg))
            results[-1]["conditions"] = conditions
            r = results[-1]
            merged = f"{r['merged_per_s']:.0f}" if r["merged_per_s"] == r["merged_per_s"] else "-"
            print(
                f"{r['hosts']:>3} hosts: first trial after {r['first_trial_median_s']:.1f} s "
                f"(max {r['first_trial_max_s']:.1f}), controller done {r['after_last_s']:.1f} s "
                f"after the last trial, {r['total_s']:.1f} s in all, {r['trials']:.0f} trials, "
                f"merge {merged} trials/s; playbooks (seconds / controller CPU seconds): "
                f"start {r['start_s']:.1f} / {r['start_cpu_s']:.1f}, {r['polls']} polls of "
                f"{r['poll_median_s']:.2f} / {r['poll_cpu_median_s']:.2f} (median), collect "
                f"{r['collect_s']:.1f} / {r['collect_cpu_s']:.1f}"
                + (f"; peak {r['peak_connections']} PostgreSQL connections" if pg else ""),
                flush=True,
            )
        per_host: dict[str, float] = {}
        if len(results) > 1:
            small, large = results[0], results[-1]
            more = large["hosts"] - small["hosts"]
            for what, key in (
                ("seconds", "poll_median_s"),
                ("controller CPU s", "poll_cpu_median_s"),
            ):
                per_host[key] = (large[key] - small[key]) / more
                print(
                    f"a status poll, {what}: {small[key]:.2f} for {small['hosts']} host(s), "
                    f"{large[key]:.2f} for {large['hosts']}: "
                    f"+{per_host[key]:.3f} per host (forks = hosts)",
                    flush=True,
                )
        print(json.dumps(results, indent=1))
        if not args.no_save:
            kept = {
                "store": args.store,
                "poll_s": args.poll,
                "pipelining": os.environ.get("ANSIBLE_PIPELINING", "True"),
                "plan": PLAN,
                "sizes": [{k: _json(v) for k, v in r.items()} for r in results],
                "poll_added_per_host": per_host,
            }
            save(
                f"fleet_scale-{args.store}",
                kept,
                started,
                workloads=["alloc"],
                filesystems=["ext4"],
                commands={"ansible": ["ansible", "--version"]}
                | ({"postgresql": ["psql", "--version"]} if pg else {}),
            )


def _json(value: Any) -> Any:
    """NaN (no merge timed: nothing fetched) as null."""
    return None if isinstance(value, float) and value != value else value


if __name__ == "__main__":
    main()
