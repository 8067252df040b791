"""Does the 10 Hz monitor change the result? The same timed work (alloc write-4k of
256 MiB, flushed) on a fresh ext4 loop image, with and without the Sampler beside it,
interleaved; prints both means with their 95% CI and Welch's p, and keeps them in
bench/results/monitor_overhead.json (with the machine and the date).

    .venv/bin/python bench/monitor_overhead.py [--reps 8] [--size 256M] [--no-save]
Needs root (loop devices)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from results_file import save, trial_conditions  # noqa: E402

from fsbench.analysis.stats import summarize, welch  # noqa: E402
from fsbench.execute.targets.loop import LoopImage  # noqa: E402
from fsbench.system import cache as system
from fsbench.system import filesystems, fsops  # noqa: E402
from fsbench.system.monitors.sampler import Sampler  # noqa: E402
from fsbench.system.units import parse_size  # noqa: E402


def one(target: LoopImage, mnt: Path, size: int, monitored: bool) -> float:
    ext4 = filesystems.get("ext4")
    target.reset()
    fsops.mkfs(ext4, [], target.device)
    fsops.mount(ext4, target.device, mnt, "")
    try:
        buf = memoryview(os.urandom(1 << 20))
        system.drop_caches()
        sampler = Sampler(target.device) if monitored else None
        if sampler:
            sampler.__enter__()
        t0 = time.monotonic()
        fd = os.open(mnt / "f", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            for off in range(0, size, 4096):
                os.write(fd, buf[off % (1 << 20) : off % (1 << 20) + 4096])
        finally:
            os.close(fd)
        system.syncfs(mnt)
        seconds = time.monotonic() - t0
        if sampler:
            sampler.__exit__(None, None, None)
        return seconds
    finally:
        fsops.umount(mnt)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=8)
    parser.add_argument("--size", default="256M")
    parser.add_argument("--no-save", action="store_true", help="no bench/results file")
    args = parser.parse_args()
    started = datetime.now(UTC)
    size = parse_size(args.size)
    work = Path(tempfile.mkdtemp(prefix="fsbench-monitor-", dir="/var/tmp"))
    results: dict[bool, list[float]] = {False: [], True: []}
    conditions: dict[bool, list[dict[str, object]]] = {False: [], True: []}
    with LoopImage(work, 2 << 30) as target:
        assert isinstance(target, LoopImage)
        mnt = work / "mnt"
        for rep in range(args.reps):
            for monitored in (rep % 2 == 0, rep % 2 != 0):  # alternate who goes first
                with trial_conditions() as cond:
                    results[monitored].append(one(target, mnt, size, monitored))
                conditions[monitored].append(cond)
    kept: dict[str, object] = {"size_bytes": size, "reps": args.reps}
    for monitored, values in results.items():
        s = summarize(values)
        half = s.half_width or 0.0
        label = "with sampler   " if monitored else "without sampler"
        print(f"{label}: {s.mean:.3f} ± {half:.3f} s (n={s.n}, CV {100 * (s.cv or 0):.1f}%)")
        kept["with" if monitored else "without"] = {
            "seconds": values,
            "mean_s": s.mean,
            "ci95_half_s": half,
            "cv": s.cv,
            "conditions": conditions[monitored],
        }
    w = welch(results[True], results[False])
    ratio = summarize(results[True]).mean / summarize(results[False]).mean  # type: ignore[operator]
    print(f"ratio with/without: {ratio:.3f}; Welch p = {w.p:.2f}" if w else f"ratio {ratio:.3f}")
    kept["ratio_with_without"] = ratio
    kept["welch_p"] = w.p if w else None
    shutil.rmtree(work, ignore_errors=True)
    if not args.no_save:
        save("monitor_overhead", kept, started, filesystems=["ext4"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
