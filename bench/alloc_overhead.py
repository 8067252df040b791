"""How much of alloc's write-4k time is Python: the same 4 KiB write loop against
`dd if=/dev/zero bs=4k` on tmpfs, where no disk or allocator cost hides the per-call cost.

    PYTHONPATH=src python3 bench/alloc_overhead.py [--size 512M] [--dir /dev/shm] [--reps 3]

Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from fsbench.system.units import format_size, parse_size
from fsbench.workloads.alloc import _by_write


def python_loop(path: Path, size: int, chunk: int) -> float:
    buf = memoryview(os.urandom(1 << 20))
    t0 = time.monotonic()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        _by_write(fd, size, chunk, buf)
    finally:
        os.close(fd)
    return time.monotonic() - t0


def dd_loop(path: Path, size: int, chunk: int) -> float:
    argv = ["dd", "if=/dev/zero", f"of={path}", f"bs={chunk}", f"count={size // chunk}"]
    t0 = time.monotonic()
    subprocess.run(argv, check=True, capture_output=True)
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--size", default="512M", type=parse_size)
    ap.add_argument("--dir", default="/dev/shm", type=Path, help="a tmpfs directory")
    ap.add_argument("--reps", default=3, type=int)
    args = ap.parse_args()
    size: int = args.size
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="fsbench-overhead-") as tmp:
        path = Path(tmp) / "f"
        for chunk in (4096, 8192):
            times: dict[str, list[float]] = {"python": [], "dd": []}
            for _ in range(args.reps):  # interleaved, so drift hits both alike
                times["python"].append(python_loop(path, size, chunk))
                path.unlink()
                times["dd"].append(dd_loop(path, size, chunk))
                path.unlink()
            py, dd = (statistics.median(times[k]) for k in ("python", "dd"))
            calls = size // chunk
            print(
                f"{format_size(size)} in {chunk}-byte writes ({calls} calls), median of "
                f"{args.reps}: python {py:.3f} s, dd {dd:.3f} s, "
                f"python overhead {(py - dd) / calls * 1e6:+.2f} us/call ({py / dd:.2f}x)"
            )


if __name__ == "__main__":
    main()
