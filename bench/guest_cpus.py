"""Guests side by side under TCG: one vCPU each or two? `make test` runs two tests at once
on a 2-core machine, and many of its tests boot QEMU guests. This bench runs the same small
guest run (one power cut of ext4 under fsync-append, the crash workload at scale tiny) alone
and two at once, with --guest-cpus 1 and 2, and records each fsbench run's wall seconds.

    .venv/bin/python bench/guest_cpus.py [--rounds 1]

Writes bench/results/guest_cpus.json: per setting, every run's seconds, and the slowdown of
two at once against alone (`results.summary`).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_file import save, trial_conditions  # noqa: E402

FSBENCH = str(Path(sys.executable).with_name("fsbench"))
RUN = ["run", "--target", "vm", "--fs", "ext4", "--workload", "crash", "--scale", "tiny"]
RUN += ["--set", "pattern=fsync-append", "--set", "crashes=1", "--set", "seed=1"]
RUN += ["--reps", "1", "--warmup", "0", "--guest-ram", "1024", "--image-size", "2G"]
RUN += ["--no-report"]


def argv(cpus: int, where: Path) -> list[str]:
    run_dir = ["--workdir", str(where / "work"), "--db", str(where / "r.db")]
    return [FSBENCH, *RUN, "--guest-cpus", str(cpus), *run_dir]


def side_by_side(cpus: int, at_once: int, scratch: Path) -> list[float]:
    """Start `at_once` runs together; each one's wall seconds."""
    procs = []
    for k in range(at_once):
        where = Path(tempfile.mkdtemp(prefix=f"g{cpus}-{at_once}-{k}-", dir=scratch))
        procs.append(
            (
                time.monotonic(),
                subprocess.Popen(
                    argv(cpus, where), text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
                ),
            )
        )
    out = []
    for began, p in procs:
        _, err = p.communicate(timeout=1800)
        if p.returncode != 0:
            raise SystemExit(f"fsbench run failed ({p.returncode}): {err[-2000:]}")
        out.append(round(time.monotonic() - began, 2))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=1, help="times each setting is run")
    args = ap.parse_args()
    settings = [(cpus, at_once) for at_once in (1, 2) for cpus in (1, 2)]
    trials: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="guest-cpus-", dir="/var/tmp") as tmp:
        for _ in range(args.rounds):
            for cpus, at_once in settings:
                with trial_conditions() as conditions:
                    seconds = side_by_side(cpus, at_once, Path(tmp))
                trials.append(
                    {"guest_cpus": cpus, "at_once": at_once, "seconds": seconds, **conditions}
                )
                print(f"{cpus} vCPU, {at_once} at once: {seconds} s", file=sys.stderr)
    mean = {
        (c, a): statistics.fmean(
            s for t in trials if (t["guest_cpus"], t["at_once"]) == (c, a) for s in t["seconds"]
        )
        for c, a in settings
    }
    summary = {
        f"cpus_{c}": {
            "alone_s": round(mean[(c, 1)], 1),
            "two_at_once_s": round(mean[(c, 2)], 1),
            "slowdown": round(mean[(c, 2)] / mean[(c, 1)], 2),
        }
        for c in (1, 2)
    }
    summary["two_at_once_2_over_1"] = round(mean[(2, 2)] / mean[(1, 2)], 2)
    save("guest_cpus", {"command": RUN, "trials": trials, "summary": summary})
    return 0


if __name__ == "__main__":
    sys.exit(main())
