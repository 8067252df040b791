"""How far a fleet run goes: the same tiny plan on 1, 4 and 16 loopback "hosts" (one sshd
on 127.0.0.2..17, each host its own workdir and loop image on this machine), measuring the
controller's overhead per host and how fast trials come into the store.

    python3 bench/fleet_scale.py [--hosts 1,4,16] [--store fetch|postgresql] [--poll 2]

Per fleet size it prints: seconds from the controller's start to the first trial of each
host (median, max), seconds from the last trial's end to the controller's end, the
controller's total, trials stored, and trials merged per second (fetch mode: the merge of
the hosts' SQLite stores into the shared one, timed apart). All hosts share this machine's
cores, so the trials themselves slow down with the fleet's size; the overheads are the
numbers that matter. Needs root, Debian's openssh-server (and postgresql for
--store postgresql). Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))

from fsbench.merge import merge_store  # noqa: E402
from fsbench.store import Store  # noqa: E402
from tests.sshd import sshd, write_inventory  # noqa: E402

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


def one_size(n: int, base: Path, db: str, poll: float) -> dict[str, float]:
    addresses = [f"127.0.0.{2 + i}" for i in range(n)]
    with sshd(addresses) as server:
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
                "fsbench",
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
    fleet = store.get_run(run_id)
    firsts, lasts, trials = [], [], 0
    for member in store.fleet_members(fleet.uid):
        got = store.get_trials(member.id)
        trials += len(got)
        firsts.append(min(_ts(t.started_at) for t in got) - t0)
        lasts.append(max(_ts(t.finished_at) for t in got))
    merged_per_s = float("nan")
    stores = sorted((base / f"controller-{n}").glob("fleet-*/stores/*.db"))
    if stores:
        scratch = Store(base / f"merge-{n}.db")
        m0 = time.monotonic()
        for path in stores:
            merge_store(Store(path), scratch)
        merged_per_s = trials / (time.monotonic() - m0)
    return {
        "hosts": n,
        "first_trial_median_s": statistics.median(firsts),
        "first_trial_max_s": max(firsts),
        "after_last_s": t1 - max(lasts),
        "total_s": t1 - t0,
        "trials": trials,
        "merged_per_s": merged_per_s,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--hosts", default="1,4,16")
    ap.add_argument("--store", choices=("fetch", "postgresql"), default="fetch")
    ap.add_argument("--db", help="a postgresql:// URL for --store postgresql")
    ap.add_argument("--poll", type=float, default=2.0)
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root (sshd as root, loop devices, mkfs)")
    with tempfile.TemporaryDirectory(prefix="fsbench-fleet-scale-", dir="/var/tmp") as tmp:
        base = Path(tmp)
        results = []
        for n in (int(x) for x in args.hosts.split(",")):
            db = args.db if args.store == "postgresql" else str(base / f"fleet-{n}.db")
            if db is None:
                raise SystemExit("--store postgresql needs --db postgresql://...")
            results.append(one_size(n, base, db, args.poll))
            r = results[-1]
            print(
                f"{r['hosts']:>3} hosts: first trial after {r['first_trial_median_s']:.1f} s "
                f"(max {r['first_trial_max_s']:.1f}), controller done {r['after_last_s']:.1f} s "
                f"after the last trial, {r['total_s']:.1f} s in all, {r['trials']:.0f} trials, "
                f"merge {r['merged_per_s']:.0f} trials/s",
                flush=True,
            )
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
