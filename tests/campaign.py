"""The reliability campaign: kill -9 fsbench at random points of a multi-trial run, again
and again, resume, and prove that every finished trial is kept exactly once and nothing
is left mounted or attached. Used by tests/integration/test_campaign.py (a few rounds in
`make test`) and bench/crash_campaign.py (the full 20)."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from fsbench.store.results import Store
from tests.helpers import fsbench, ours
from tests.safety import root_disk

RUN_ARGS = [
    "--fs",
    "ext4,xfs",
    "--workload",
    "alloc",
    "--set",
    "method=fallocate,write-4k",
    "--set",
    "size=16M",
    "--reps",
    "3",
    "--scale",
    "tiny",
    "--image-size",
    "1G",
    "--no-report",
]


@dataclass
class Summary:
    attempts: int = 0
    refusals: int = 0
    crashes: int = 0
    trials_lost: int = 0
    duplicates: int = 0
    leaked: list[str] = field(default_factory=list)
    finished_runs: int = 0

    def line(self) -> str:
        return (
            f"campaign: attempts {self.attempts}, refusals {self.refusals}, crashes survived "
            f"{self.crashes}, trials lost {self.trials_lost}, duplicates {self.duplicates}, "
            f"resources leaked {len(self.leaked)}, runs finished {self.finished_runs}"
        )


def _snapshot(db: Path) -> set[tuple[int, int, int, str]]:
    if not db.exists():
        return set()
    store = Store(db)
    try:
        return {
            (rid, t.seq, t.step, t.started_at)
            for rid in [r.id for r in store.list_runs()]
            for t in store.get_trials(rid)
        }
    finally:
        store.close()


def _unfinished(db: Path) -> bool:
    if not db.exists():
        return False
    store = Store(db)
    try:
        return any(r.status != "finished" for r in store.list_runs())
    finally:
        store.close()


def run_campaign(workdir: Path, attempts: int, seed: int = 1) -> Summary:
    rng = random.Random(seed)
    db, work = workdir / "results.db", workdir / "work"
    common = ["--db", str(db), "--workdir", str(work)]
    summary = Summary()
    seen: set[tuple[int, int, int, str]] = set()
    # Refusals first: nothing may be written to a device fsbench must not touch.
    root = root_disk()  # found, never assumed (tests/safety.py)
    for argv in (
        *([["--device", root, "--destroy-data"]] if root else []),
        ["--device", "/etc/passwd", "--destroy-data"],
    ):
        summary.attempts += 1
        res = fsbench("run", *RUN_ARGS, *common, *argv)
        if res.returncode == 2 and "Traceback" not in res.stderr:
            summary.refusals += 1
    for _ in range(attempts):
        summary.attempts += 1
        argv = ["run", "--resume", *common] if _unfinished(db) else ["run", *RUN_ARGS, *common]
        child = subprocess.Popen(
            [sys.executable, "-m", "fsbench.cli", *argv],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        # Anywhere: stale cleanup, mkfs, mount, the workload, sync/umount, the store write.
        time.sleep(rng.uniform(0.5, 8.0))
        if child.poll() is None:
            child.kill()
            summary.crashes += 1
        child.wait()
        now = _snapshot(db)
        summary.trials_lost += len(seen - now)
        seen |= now
    # What a user does next: doctor releases what the dead runs left, resume finishes.
    fsbench("doctor", *common)
    for _ in range(3):
        if _unfinished(db):
            fsbench("run", "--resume", *common)
        elif not _snapshot(db):  # every kill came before the first trial was stored
            fsbench("run", *RUN_ARGS, *common)
        else:
            break
    final = _snapshot(db)
    summary.trials_lost += len(seen - final)
    store = Store(db)
    try:
        for rid in [r.id for r in store.list_runs()]:
            trials = store.get_trials(rid)
            slots = [(t.seq, t.step) for t in trials]
            summary.duplicates += len(slots) - len(set(slots))
            run = store.get_run(rid)
            # Every planned slot (the warm-up round and the counted reps) stored once;
            # a resumed run adds a warm-up after the schedule where it restarted.
            planned = {seq for seq, _ in slots if seq < len(run.schedule)}
            added = [t for t in trials if t.seq >= len(run.schedule)]
            assert all(t.warmup for t in added), "only warm-ups are added to a schedule"
            if run.status == "finished" and len(planned) == len(run.schedule):
                summary.finished_runs += 1
    finally:
        store.close()
    loops, mounts = ours(workdir)
    summary.leaked = loops + mounts
    return summary
