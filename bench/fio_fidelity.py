"""Does fsbench's fio seq-write measure what fio run by hand measures? The workload class
(prepare, cold remount, run, syncfs: the runner's steps) against a hand-written job file
run with fio directly, on a fresh mkfs of the same ext4 loop image every time, interleaved
(A B, B A, A B...), 3 reps each after one uncounted warm-up rep of each. Prints both
bandwidths and whether they agree within noise (Welch t-test, p >= 0.05, or a difference
under 5%). A busy machine (another test suite writing, syncing, dropping caches) makes
the noise large and the verdict weak: look at the CVs, and run it on a quiet machine.

    PYTHONPATH=src python3 bench/fio_fidelity.py [--size 2G] [--image-size 8G]
                                                 [--workdir /var/tmp] [--reps 3] [--warmup 1]
                                                 [--cli]

--cli adds a third side, interleaved with the others: `fsbench run --fs ext4 --workload fio
--set profile=seq-write --reps 1 --json` as a subprocess per rep (its own image, a
throwaway result store): the whole runner, not only the workload class.
Needs root, fio and mkfs.ext4. Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from scipy import stats

from fsbench import filesystems, fsops, system
from fsbench.units import format_size, parse_size
from fsbench.workloads.base import Scale
from fsbench.workloads.fio import Fio, FioParams

REPO = Path(__file__).resolve().parent.parent
MIB = 1 << 20
EXT4 = filesystems.get("ext4")
# The same mkfs for both sides, spelled out: the comparison is about the fio job.
MKFS = ["mkfs.ext4", "-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0"]

# What someone would type for "IOzone-style 1 MiB sequential write, fsync at the end,
# let the filesystem allocate": written by hand, not generated from fsbench's profile.
HAND_JOB = """\
[seq-write]
directory={directory}
filename=seqfile
ioengine=psync
rw=write
bs=1M
size={size}
end_fsync=1
fallocate=none
"""


class Ctx:
    """The runner's TrialContext for one trial on the loop device."""

    def __init__(self, device: str, mountpoint: Path) -> None:
        self.device = device
        self.mountpoint = mountpoint
        self.fs_type = "ext4"
        self.scale = Scale.QUICK
        self.cache_dir = mountpoint.parent / "cache"
        self.flags: dict[str, str] = {}

    def sync(self) -> None:
        system.syncfs(self.mountpoint)

    def drop_caches(self) -> None:
        system.drop_caches()

    def remount(self) -> None:
        fsops.umount(self.mountpoint)
        fsops.mount(EXT4, self.device, self.mountpoint, "")
        system.drop_caches()

    def flag(self, name: str, detail: str) -> None:
        self.flags[name] = detail


def fresh_fs(device: str, mnt: Path) -> None:
    if fsops.is_mounted(mnt):
        fsops.umount(mnt)
    subprocess.run([*MKFS, device], check=True, capture_output=True)
    fsops.mount(EXT4, device, mnt, "")


def via_fsbench(device: str, mnt: Path, size: int) -> float:
    fresh_fs(device, mnt)
    ctx = Ctx(device, mnt)
    work = Fio()
    params = FioParams(profile="seq-write", size=size, runtime=10)
    work.prepare(ctx, params)
    ctx.sync()
    ctx.remount()  # Fio.cache is COLD_REMOUNT
    metrics = {m.name: m.value for m in work.run(ctx, params)}
    ctx.sync()
    return metrics["write_mib_s"]


def by_hand(device: str, mnt: Path, size: int, tmp: Path) -> float:
    fresh_fs(device, mnt)
    ctx = Ctx(device, mnt)
    ctx.remount()  # the same cold start
    job = tmp / "hand.fio"
    job.write_text(HAND_JOB.format(directory=mnt, size=size))
    out = tmp / "hand.json"
    subprocess.run(
        ["fio", "--output-format=json", f"--output={out}", str(job)],
        check=True,
        capture_output=True,
    )
    ctx.sync()
    write = json.loads(out.read_text())["jobs"][0]["write"]
    return float(write["bw_bytes"]) / MIB


def via_cli(size: int, image_size: int, workdir: Path) -> float:
    """One trial through `fsbench run` (the runner: discard, mkfs, remount, monitors)."""
    with tempfile.TemporaryDirectory(dir=workdir, prefix="fsbench-fidelity-cli-") as tmp:
        argv = [
            sys.executable,
            "-m",
            "fsbench",
            "run",
            "--fs",
            "ext4",
            "--workload",
            "fio",
            "--set",
            "profile=seq-write",
            "--set",
            f"size={format_size(size)}",
            "--reps",
            "1",
            "--scale",
            "quick",
            "--image-size",
            format_size(image_size),
            "--workdir",
            tmp,
            "--db",
            str(Path(tmp) / "results.db"),
            "--json",
        ]
        env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
        res = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        if res.returncode != 0:
            print(res.stdout[-2000:], res.stderr[-2000:], file=sys.stderr)
            raise SystemExit(f"fsbench run exited {res.returncode}")
        rows = json.loads(res.stdout)["rows"]
        (row,) = [r for r in rows if r["metric"] == "write_mib_s"]
        (value,) = row["values"]
        return float(value)


def describe(name: str, values: list[float]) -> str:
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    each = ", ".join(f"{v:.0f}" for v in values)
    return f"{name:<22} {mean:8.1f} MiB/s  sd {sd:6.1f}  cv {100 * sd / mean:5.1f}%  [{each}]"


def verdict(a: list[float], b: list[float]) -> str:
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    diff = (ma - mb) / mb
    p = float(stats.ttest_ind(a, b, equal_var=False).pvalue)
    agree = p >= 0.05 or abs(diff) < 0.05
    word = "AGREE within noise" if agree else "DIFFER"
    return f"{100 * diff:+.1f}% (Welch p = {p:.2f}): {word}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--size", default="2G", type=parse_size, help="file size (quick: 2G)")
    ap.add_argument("--image-size", default="8G", type=parse_size)
    ap.add_argument("--workdir", default="/var/tmp", type=Path)
    ap.add_argument("--reps", default=3, type=int)
    ap.add_argument(
        "--warmup",
        default=1,
        type=int,
        help="uncounted reps of each side first",
    )
    ap.add_argument("--cli", action="store_true", help="also run `fsbench run` itself")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root (loop devices, mkfs, mount)")

    sides = ["fsbench", "hand", *(["cli"] if args.cli else [])]
    values: dict[str, list[float]] = {side: [] for side in sides}
    with tempfile.TemporaryDirectory(dir=args.workdir, prefix="fsbench-fidelity-") as tmpdir:
        tmp = Path(tmpdir)
        image = tmp / "disk.img"
        with image.open("wb") as f:
            f.truncate(args.image_size)
        device = subprocess.run(
            ["losetup", "--direct-io=on", "--find", "--show", str(image)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        mnt = tmp / "mnt"
        try:
            print(
                f"ext4 on {device} ({format_size(args.image_size)} sparse image, direct I/O), "
                f"seq-write {format_size(args.size)} in 1 MiB blocks, {args.reps} reps each"
            )
            for rep in range(-args.warmup, args.reps):
                # Interleaved, the order rotating: drift of a busy machine favours no side.
                shift = rep % len(sides)
                for side in sides[shift:] + sides[:shift]:
                    if side == "fsbench":
                        value = via_fsbench(device, mnt, args.size)
                    elif side == "hand":
                        value = by_hand(device, mnt, args.size, tmp)
                    else:
                        value = via_cli(args.size, args.image_size, args.workdir)
                    if rep >= 0:
                        values[side].append(value)
                    label = f"rep {rep + 1}" if rep >= 0 else "warm-up"
                    print(f"  {label:<7} {side:<8} {value:8.1f} MiB/s", flush=True)
        finally:
            if fsops.is_mounted(mnt):
                fsops.umount(mnt)
            subprocess.run(["losetup", "-d", device], check=False)

    print(describe("fsbench (Fio class)", values["fsbench"]))
    print(describe("fio by hand", values["hand"]))
    if args.cli:
        print(describe("fsbench run (CLI)", values["cli"]))
    print("Fio class vs hand: " + verdict(values["fsbench"], values["hand"]))
    if args.cli:
        print("fsbench run vs hand: " + verdict(values["cli"], values["hand"]))


if __name__ == "__main__":
    main()
