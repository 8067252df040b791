"""Does `fsbench run`'s fs_mark measure what fs_mark run by hand measures?

The same design as bench/fio_fidelity.py (whose helpers it uses): two sides from the
same machine state, alternating (A B, B A, ...):

- **fsbench**: `fsbench run --fs ext4 --workload fs_mark --scale quick --reps 1
  --warmup 1` as a subprocess (the whole runner: its own sparse loop image, discard,
  mkfs, sync, monitors; a warm-up trial then the measured one);
- **by hand**: fs_mark typed in the mountpoint of a fresh ext4 (lazy init off) on a
  discarded direct-I/O loop image, after a `sync -f`, for "4,000 files of 4 KiB, fsync
  before close" (the command below); once uncounted (warm-up), then on a fresh mkfs the
  measured run, timed by this script with a monotonic clock around fs_mark and the
  `sync -f` after it.

Two figures, each compared with its own kind: fs_mark's own **Files/sec** (its loop
time only: fsbench's `tool_files_per_s` against the hand run's printed figure), and the
**headline** files/s over the whole run and its flush (fsbench's `files_per_s`, which
the runner times around fs_mark and its syncfs, against files / (fs_mark + sync -f) by
hand).

**The same command**: the hand run types out the command fsbench's trial records:
`fs_mark -d fs_mark/d0 -n 4000 -s 4096 -t 1 -S 1 -L 1 -k -v -l <log outside the
filesystem>`, in the mountpoint. A person's shorter command (no `-t 1 -L 1`, fs_mark's
defaults anyway; no `-v`, which times every system call; the log `fs_log.txt` left in
the mountpoint, on the filesystem under test) measured 1.4% slower than this one by hand
(16 pairs, 2026-11-26, standard error 1.6%): not shown different, but it is not the
command fsbench runs, and a wrapper's fidelity is about the wrapper.

**The same state**: fs_mark is a warm workload in fsbench (`cache = WARM`: mkfs, mount,
mkdir, syncfs, run, with nothing dropped), so the hand run mounts the fresh filesystem
once and drops nothing either (until 2026-11-26 09:00 UTC it remounted cold with caches
dropped, fio's state; that was not the cause of the 2% below: 1.023 either way).

Verdict per figure: the ratio fsbench / by hand with its 90% CI inside 0.97-1.03:
EQUIVALENT within 3%; entirely outside: DIFFERENT; else UNDECIDED. The ratio is paired
by rep, as in bench/fio_fidelity.py (the ratio of the means is given beside it).
Exit status 0 only if both are EQUIVALENT. Results (with the machine, the date and the
load before every run) go to `bench/results/fsmark_fidelity.json`.

    python3 bench/fsmark_fidelity.py [--files 4000] [--image-size 8G] [--reps 6]
                                     [--workdir /var/tmp] [--output PATH]

Needs root, fs_mark and mkfs.ext4. Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import results_file  # noqa: E402
from fio_fidelity import (  # noqa: E402
    REPO,
    HandDevice,
    describe,
    fsbench_metrics,
    rederive,
    save,
    settle,
    verdict_line,
)

from fsbench.system.units import format_size, parse_size  # noqa: E402

FILE_SIZE = 4096
FILES_PER_SEC = re.compile(r"^\s*\d+\s+(\d+)\s+(\d+)\s+([\d.]+)\s+\d+", re.MULTILINE)


def hand_run(dev: HandDevice, files: int, log: Path) -> tuple[float, float]:
    """fs_mark by hand on the device's fresh filesystem: (own Files/sec, headline)."""
    d = Path("fs_mark/d0")
    (dev.mnt / d).mkdir(parents=True)
    subprocess.run(["sync", "-f", str(dev.mnt)], check=True)
    # The command fsbench's trial records, typed out (see the docstring).
    argv = ["fs_mark", "-d", str(d), "-n", str(files), "-s", str(FILE_SIZE), "-t", "1"]
    argv += ["-S", "1", "-L", "1", "-k", "-v", "-l", str(log)]
    t0 = time.monotonic()
    # in the mountpoint, as a person would (and fsbench does: fs_mark wants short -d paths)
    res = subprocess.run(argv, cwd=dev.mnt, capture_output=True, text=True, check=False)
    subprocess.run(["sync", "-f", str(dev.mnt)], check=True)
    t1 = time.monotonic()
    for leftover in dev.mnt.glob("fs_log.txt*"):
        leftover.unlink()
    if res.returncode != 0:
        raise SystemExit(f"fs_mark by hand failed: {res.stderr.strip()[-500:]}")
    m = FILES_PER_SEC.search(res.stdout)
    if m is None or int(m.group(1)) != files:
        raise SystemExit(f"fs_mark by hand: no result row for {files} files:\n{res.stdout}")
    return float(m.group(3)), files / (t1 - t0)


def by_hand(files: int, image_size: int, tmp: Path) -> tuple[float, float]:
    dev = HandDevice(tmp, image_size)
    try:
        log = tmp / "fs_log.txt"  # outside the filesystem under test, as fsbench's
        dev.fresh_fs(cold=False)
        hand_run(dev, files, log)  # warm-up, not counted
        dev.fresh_fs(cold=False)
        return hand_run(dev, files, log)
    finally:
        dev.close()


def via_fsbench(files: int, image_size: int, workdir: Path) -> tuple[float, float]:
    m = fsbench_metrics(
        "fs_mark",
        [f"files={files}", f"size={FILE_SIZE}", "sync=1", "threads=1", "dirs=1"],
        image_size,
        workdir,
    )
    return m["tool_files_per_s"], m["files_per_s"]


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--files", default=4000, type=int, help="files (quick: 4000)")
    ap.add_argument("--image-size", default="8G", type=parse_size)
    ap.add_argument("--workdir", default="/var/tmp", type=Path)
    ap.add_argument("--reps", default=6, type=int)
    ap.add_argument("--output", type=Path, default=REPO / "bench/results/fsmark_fidelity.json")
    ap.add_argument(
        "--derive", action="store_true", help="only (re)compute the summary of --output"
    )
    args = ap.parse_args()
    if args.derive:
        rederive(args.output)
        return
    if os.geteuid() != 0:
        raise SystemExit("needs root (loop devices, mkfs, mount)")
    own: dict[str, list[float]] = {"fsbench": [], "by hand": []}
    head: dict[str, list[float]] = {"fsbench": [], "by hand": []}
    runs: list[dict[str, object]] = []
    print(
        f"ext4 on a fresh {format_size(args.image_size)} sparse loop image (direct I/O), "
        f"fs_mark {args.files} files of 4 KiB, fsync before close (-S1), a warm-up before "
        f"each measured run, {args.reps} reps each, alternating"
    )
    with tempfile.TemporaryDirectory(dir=args.workdir, prefix="fsbench-fsmark-fid-") as tmpdir:
        tmp = Path(tmpdir)
        sides = list(own)
        for rep in range(args.reps):
            for side in sides if rep % 2 == 0 else sides[::-1]:
                with results_file.trial_conditions() as conditions:
                    if side == "fsbench":
                        o, h = via_fsbench(args.files, args.image_size, args.workdir)
                    else:
                        o, h = by_hand(args.files, args.image_size, tmp)
                load = conditions["load_before"][0]
                own[side].append(o)
                head[side].append(h)
                runs.append(
                    {
                        "rep": rep + 1,
                        "side": side,
                        "tool_files_per_s": o,
                        "files_per_s": h,
                        "load1_before": load,
                        **conditions,
                    }
                )
                print(
                    f"  rep {rep + 1:<3} {side:<8} own {o:8.1f} files/s, headline "
                    f"{h:8.1f} files/s (load {load:.1f})",
                    flush=True,
                )
                settle(args.workdir)
    verdicts: dict[str, object] = {}
    ok = True
    for name, values in (("tool_files_per_s", own), ("files_per_s", head)):
        print(name)
        for side, got in values.items():
            print("  " + describe(side, got, "files/s"))
        good, record, text = verdict_line(values["fsbench"], values["by hand"])
        print("  " + text)
        verdicts[name] = record
        ok = ok and good
    save(
        args.output,
        "fsmark_fidelity",
        {"tool_files_per_s_" + k: v for k, v in own.items()}
        | {"files_per_s_" + k: v for k, v in head.items()},
        runs,
        verdicts,
        {"files": args.files, "image_size": args.image_size, "reps": args.reps},
        "fs_mark",
    )
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
