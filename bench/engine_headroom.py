"""Headroom of fsbench-engine's hot loop: 4 KiB random reads of one file held in the page
cache, one thread, engine against fio's psync engine on the very same file for the same
duration. The engine passes when its ops/s are at least 95% of fio's.

    python3 bench/engine_headroom.py [--engine PATH] [--dir /var/tmp] [--size-mib 512]
                                     [--seconds 5] [--reps 3]

Builds the engine (cargo build --release) unless --engine is given. Needs fio. Not part of
the test run. The file is read into the cache before every run and its residency checked
after it (fincore): a run during which something dropped the caches (a concurrent test
suite writing /proc/sys/vm/drop_caches) is discarded and done again. A tmpfs --dir
(/dev/shm) is immune to that.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
THRESHOLD = 0.95


def build_engine() -> Path:
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo/bin/cargo")
    subprocess.run([cargo, "build", "--release", "--quiet"], cwd=REPO / "engine", check=True)
    return REPO / "engine/target/release/fsbench-engine"


def spec(directory: Path, size: int, seconds: float, reuse: bool) -> dict[str, object]:
    return {
        "schema": 1,
        "name": "headroom",
        "dir": str(directory),
        "seed": 1,
        "warmup_s": 0,
        "stop": {"duration_s": seconds},
        "filesets": [
            {
                "name": "headroom",
                "count": 1,
                "dirwidth": 1,
                "size": {"type": "fixed", "size": size},
                "prealloc_pct": 100,
                "reuse": reuse,
            }
        ],
        "groups": [
            {
                "name": "reader",
                "threads": 1,
                "flowops": [
                    {"op": "randread", "name": "read4k", "fileset": "headroom", "iosize": 4096}
                ],
            }
        ],
    }


def run_engine(engine: Path, command: str, the_spec: dict[str, object]) -> dict[str, object]:
    out = subprocess.run(
        [str(engine), command, "-"],
        input=json.dumps(the_spec),
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        sys.exit(f"engine failed: {out.stderr.strip()}")
    result: dict[str, object] = json.loads(out.stdout)
    return result


def engine_iops(engine: Path, the_spec: dict[str, object]) -> float:
    r = run_engine(engine, "run", the_spec)
    total = r["total"]
    assert isinstance(total, dict)
    return float(total["ops_per_s"])


def fio_iops(path: Path, seconds: float, lean: bool) -> float:
    """fio psync; lean drops its random map (as the engine has none) for its best case."""
    argv = [
        "fio",
        "--name=headroom",
        f"--filename={path}",
        "--rw=randread",
        "--bs=4k",
        "--ioengine=psync",
        "--numjobs=1",
        "--time_based",
        f"--runtime={seconds}s",
        "--invalidate=0",  # keep the page cache: that is the point
        "--output-format=json",
    ]
    if lean:
        argv += ["--norandommap", "--randrepeat=0"]
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
    return float(json.loads(out.stdout)["jobs"][0]["read"]["iops"])


def warm(path: Path) -> None:
    with path.open("rb") as f:
        while f.read(1 << 20):
            pass


def resident(path: Path) -> float:
    """Fraction of the file in the page cache (1.0 when fincore is missing)."""
    if shutil.which("fincore") is None:
        return 1.0
    out = subprocess.run(
        ["fincore", "--bytes", "--noheadings", "--output", "RES,SIZE", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    res, size = (int(x) for x in out.stdout.split())
    return res / size if size else 1.0


def cached_run(path: Path, measure: Callable[[], float], what: str) -> float | None:
    """measure() with the file warm before and still cached after; None after 5 tries."""
    for _ in range(5):
        warm(path)
        value = measure()
        if resident(path) >= 0.999:
            return value
        print(f"  ({what} discarded: the file left the page cache during the run)")
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--engine", type=Path, help="the fsbench-engine binary (default: build it)")
    ap.add_argument("--dir", type=Path, default=Path("/var/tmp"))
    ap.add_argument("--size-mib", type=int, default=512)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    if shutil.which("fio") is None:
        sys.exit("fio is not installed")
    engine: Path = args.engine or build_engine()
    size = args.size_mib << 20

    with tempfile.TemporaryDirectory(dir=args.dir, prefix="fsbench-headroom-") as tmp:
        directory = Path(tmp)
        prep = run_engine(engine, "prepare", spec(directory, size, args.seconds, reuse=False))
        stats = prep["prepare"]
        assert isinstance(stats, dict)
        path = Path(stats["filesets"][0]["path"]) / "f0"
        fio: list[float] = []
        lean: list[float] = []
        eng: list[float] = []
        the_spec = spec(directory, size, args.seconds, reuse=True)
        for rep in range(args.reps):  # interleaved, so drift hits both alike
            runs = (
                cached_run(path, lambda: fio_iops(path, args.seconds, False), "fio"),
                cached_run(path, lambda: fio_iops(path, args.seconds, True), "fio"),
                cached_run(path, lambda: engine_iops(engine, the_spec), "engine"),
            )
            if None in runs:
                print(f"stopped after {rep} reps: the file keeps leaving the page cache")
                break
            fio.append(runs[0] or 0.0)
            lean.append(runs[1] or 0.0)
            eng.append(runs[2] or 0.0)
            print(
                f"rep {rep + 1}: fio psync {fio[-1]:,.0f} ops/s, "
                f"fio psync --norandommap {lean[-1]:,.0f} ops/s, engine {eng[-1]:,.0f} ops/s"
            )
    if not eng:
        sys.exit("no complete rep (caches dropped by something else?); try --dir /dev/shm")
    f, fl, e = statistics.median(fio), statistics.median(lean), statistics.median(eng)
    ratio = e / max(f, fl)
    print(
        f"4 KiB random read, 1 thread, {args.size_mib} MiB file in the page cache "
        f"({args.dir}), {args.seconds:g} s x {len(eng)}, medians: "
        f"fio psync {f:,.0f} ops/s, fio psync --norandommap {fl:,.0f} ops/s, "
        f"engine {e:,.0f} ops/s; engine / fio {e / f:.3f}, engine / lean fio {e / fl:.3f}: "
        f"{'PASS' if ratio >= THRESHOLD else 'FAIL'} (needs >= {THRESHOLD} of the faster fio)"
    )
    sys.exit(0 if ratio >= THRESHOLD else 1)


if __name__ == "__main__":
    main()
