"""How long the test suite takes and where the time goes: runs `make test` (or `make check`)
with FSBENCH_SUITE_RECORD set, so that the session's own report (tests/suitetime.py)
writes its breakdown, and keeps it with the wall time of the whole `make` (installs
included) in bench/results/suite_time.json (suite_time-check.json for `make check`), so
that the next change that adds minutes shows up against it.

    python3 bench/suite_time.py [--target test|check] [--caches warm|cold|fresh] [--clone]
                                [--note TEXT] [-o NAME]

`--caches` says what the suite finds cached: `warm`, the guest images, kernel builds and
the Debian source an earlier run left; `cold`, none, because they were removed (a fresh
machine); `fresh`, none, because this bench gives the run empty cache directories of its
own (FSBENCH_VM_CACHE, FSBENCH_KBUILD_CACHE: a cold suite on a machine whose own caches
other runs may be using; removed afterwards). `--clone` runs `make` in a fresh clone of
this checkout's commit (its own venv and engine build, as a new contributor's first
`make test`; removed afterwards); without it, in this checkout. The record says what the
machine had before: the Debian packages installed by the run (dpkg's list before and
after), and the sizes of the caches the run may use (fsbench's, pip's, cargo's, apt's).
Other work on the machine moves the numbers: say it with --note (the load average is kept
with them).

The summary: the make steps, the shared builds (built or reused), the time by family of
tests and by file, the slowest tests, each worker's tests and the idle tail after its
last one, the outcomes, and the machine's CPU time over the whole `make` (busy and idle
seconds of all CPUs, from /proc/stat: how well the workers kept the CPUs busy; other work
on the machine counts too). `--derive FILE` makes it again from a file's record.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_file import REPO, RESULTS, save, write  # noqa: E402

SLOWEST = 40
# The caches a cold suite builds (fsbench's, as the environment can move them; tests and
# fsbench read these variables: vm.cache.default_cache, vm.kbuild.kbuild_cache, whose
# defaults these are, checked by tests/unit/test_suite_time_bench.py; the bench runs
# before make has made a venv) and the download caches a fresh machine lacks too.
FSBENCH_CACHES = {
    "FSBENCH_VM_CACHE": Path("/var/tmp/fsbench/cache/vm"),
    "FSBENCH_KBUILD_CACHE": Path("/var/cache/fsbench/kbuild"),
}
DOWNLOAD_CACHES = {
    "pip": Path.home() / ".cache/pip",
    "cargo": Path.home() / ".cargo/registry",
    "apt": Path("/var/cache/apt/archives"),
}


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


def installed_packages() -> set[str]:
    """The Debian packages installed on this machine now."""
    out = subprocess.run(
        ["dpkg-query", "-W", "-f", "${db:Status-Abbrev} ${Package}\\n"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return {line.split()[1] for line in out.splitlines() if line.startswith("ii ")}


def size_of(path: Path) -> int | None:
    """Bytes under `path` (du), None when it does not exist."""
    if not path.exists():
        return None
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, check=False)
    return int(out.stdout.split()[0]) if out.stdout else None


def caches_before(env: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Each cache the run may use, where it is and how many bytes it held before."""
    places = {k: Path(env.get(k) or v) for k, v in FSBENCH_CACHES.items()}
    places |= DOWNLOAD_CACHES
    return {name: {"path": str(p), "bytes": size_of(p)} for name, p in places.items()}


@contextmanager
def workspace(clone: bool, fresh_caches: bool) -> Iterator[tuple[Path, Path, dict[str, str]]]:
    """A scratch directory, where make runs (this checkout, or a fresh clone of its commit
    in the scratch directory) and the variables that give the run empty caches of its own
    there; all removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="suite-time-", dir="/var/tmp") as tmp:
        where, env = REPO, {}
        if clone:
            where = Path(tmp) / "fsbench"
            subprocess.run(["git", "clone", "-q", str(REPO), str(where)], check=True)
        if fresh_caches:
            for name in FSBENCH_CACHES:
                (Path(tmp) / name).mkdir()
                env[name] = str(Path(tmp) / name)
        try:
            yield Path(tmp), where, env
        finally:
            # Guest images and kernels built there: nothing is left mounted or attached
            # under them (the suite checks it), so they go as files do.
            shutil.rmtree(tmp, ignore_errors=True)


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
        # Each worker's tests and its idle tail (records before 2026-12-06 lack it).
        "workers": record.get("workers"),
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
    ap.add_argument("--caches", choices=("warm", "cold", "fresh"), required=False)
    ap.add_argument("--clone", action="store_true", help="make in a fresh clone of HEAD")
    ap.add_argument("--note", default="")
    ap.add_argument("-o", "--output", help="file name under bench/results/")
    ap.add_argument("--derive", type=Path, help="make the summary again from this file")
    args = ap.parse_args()
    if args.derive:
        doc = json.loads(args.derive.read_text())
        kept = doc["results"]  # results_file's layout: the bench's own under "results"
        was = kept["summary"]
        kept["summary"] = summary(kept["record"], was["make_wall_s"], was.get("cpu"))
        # The record keeps no test list (the summary's slowest are all a file has of it).
        kept["summary"]["slowest"] = kept["summary"]["slowest"] or was.get("slowest", [])
        write(args.derive, doc)
        return
    if not args.caches:
        ap.error("--caches warm|cold|fresh: what the suite finds cached")
    started = datetime.now(UTC)
    with workspace(args.clone, args.caches == "fresh") as (scratch, where, cache_env):
        record_path = scratch / "record.json"
        env = {**os.environ, **cache_env, "FSBENCH_SUITE_RECORD": str(record_path)}
        machine_had = {"caches": caches_before(env), "packages": sorted(installed_packages())}
        commit = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        t0, cpu0 = time.monotonic(), cpu_seconds()
        res = subprocess.run(["make", "-C", str(where), args.target], env=env, check=False)
        wall, cpu = time.monotonic() - t0, cpu_used(cpu0, cpu_seconds())
        if not record_path.is_file():
            raise SystemExit(f"make {args.target} wrote no record (exit {res.returncode})")
        record = json.loads(record_path.read_text())
    installed = sorted(installed_packages() - set(machine_had["packages"]))
    name = args.output or ("suite_time" if args.target == "test" else f"suite_time-{args.target}")
    save(
        name.removesuffix(".json"),
        {
            "target": f"make {args.target}",
            "exit": res.returncode,
            "caches": args.caches,
            # make ran in a fresh clone of this commit (its own venv and engine build)
            "clone": commit if args.clone else None,
            "cache_dirs": cache_env,  # the run's own empty caches (--caches fresh)
            "caches_before": machine_had["caches"],  # bytes each held (None: absent)
            # Debian packages: how many the machine had, and those the run installed.
            "packages_before": len(machine_had["packages"]),
            "packages_installed": installed,
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
