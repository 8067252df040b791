"""How long the test suite takes and where the time goes: runs `make test` (or `make check`)
in this checkout with FSBENCH_SUITE_RECORD set, so that the session's own report
(tests/suitetime.py) writes its breakdown, and keeps it with the wall time of the whole
`make` (installs included) in bench/results/suite_time.json (suite_time-check.json for
`make check`), so that the next change that adds minutes shows up against it.

    .venv/bin/python bench/suite_time.py [--target test|check] [--caches warm|cold]
                                         [--note TEXT] [-o NAME]

`--caches` says what the machine had before the run (the bench empties nothing itself):
`warm` when the guest images, kernel builds and the Debian source were cached by an
earlier run, `cold` when they had been removed (a fresh machine). Other work on the
machine moves the numbers: say it with --note (the load average is kept with them).

The summary: the make steps, the shared builds (built or reused), the time by family of
tests and by file, the slowest tests, the outcomes, and the machine's CPU time over the
whole `make` (busy and idle seconds of all CPUs, from /proc/stat: how well the workers
kept the CPUs busy; other work on the machine counts too). `--derive FILE` makes it again
from a file's record.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_file import REPO, RESULTS, save, write  # noqa: E402

SLOWEST = 40


def cpu_seconds() -> dict[str, float]:
    """The machine's CPU time since boot, all CPUs: busy (user, nice, system, irq, softirq,
    steal) and idle (idle, iowait) seconds."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = fields
    tick = os.sysconf("SC_CLK_TCK")
    return {
        "busy_s": (user + nice + system + irq + softirq + steal) / tick,
        "idle_s": (idle + iowait) / tick,
    }


def cpu_used(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    busy, idle = (after[k] - before[k] for k in ("busy_s", "idle_s"))
    return {
        "busy_s": round(busy, 1),
        "idle_s": round(idle, 1),
        "busy": round(busy / (busy + idle), 3),
    }


def summary(
    record: dict[str, Any], wall_s: float, cpu: dict[str, float] | None = None
) -> dict[str, Any]:
    tests = record.get("tests", {})
    slowest = sorted(tests.items(), key=lambda kv: -kv[1]["seconds"])[:SLOWEST]
    return {
        "make_wall_s": round(wall_s, 1),
        "cpu": cpu,  # over the whole make; records before 2026-11-29 lack it
        "pytest_wall_s": record["wall_s"],
        "test_s": record["test_s"],
        "waited_s": record.get("waited_s"),  # of test_s; records before 2026-11-29 lack it
        "tests": sum(record["outcomes"].values()),
        "outcomes": record["outcomes"],
        "make_steps": record["make_steps"],
        "builds": record["builds"],
        "build_s": round(sum(b["seconds"] for b in record["builds"]), 1),
        "families": record["families"],
        "files": record["files"],
        "slowest": [{"test": k, **v} for k, v in slowest],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", choices=("test", "check"), default="test")
    ap.add_argument("--caches", choices=("warm", "cold"), required=False)
    ap.add_argument("--note", default="")
    ap.add_argument("-o", "--output", help="file name under bench/results/")
    ap.add_argument("--derive", type=Path, help="make the summary again from this file")
    args = ap.parse_args()
    if args.derive:
        doc = json.loads(args.derive.read_text())
        was = doc["summary"]
        doc["summary"] = summary(doc["record"], was["make_wall_s"], was.get("cpu"))
        write(args.derive, doc)
        return
    if not args.caches:
        ap.error("--caches warm|cold: what the machine had cached before this run")
    started = datetime.now(UTC)
    with tempfile.TemporaryDirectory() as tmp:
        record_path = Path(tmp) / "record.json"
        env = {**os.environ, "FSBENCH_SUITE_RECORD": str(record_path)}
        t0, cpu0 = time.monotonic(), cpu_seconds()
        res = subprocess.run(["make", "-C", str(REPO), args.target], env=env, check=False)
        wall, cpu = time.monotonic() - t0, cpu_used(cpu0, cpu_seconds())
        if not record_path.is_file():
            raise SystemExit(f"make {args.target} wrote no record (exit {res.returncode})")
        record = json.loads(record_path.read_text())
    name = args.output or ("suite_time" if args.target == "test" else f"suite_time-{args.target}")
    save(
        name.removesuffix(".json"),
        {
            "target": f"make {args.target}",
            "exit": res.returncode,
            "caches": args.caches,
            "note": args.note,
            # pytest's arguments when the environment set them (None: the Makefile's own)
            "pytest_args": os.environ.get("PYTEST_ARGS"),
            "summary": summary(record, wall, cpu),
            "record": {k: v for k, v in record.items() if k != "tests"},
        },
        started,
        path=RESULTS / f"{name.removesuffix('.json')}.json",
    )


if __name__ == "__main__":
    main()
