"""Does `fsbench run`'s fio seq-write measure what fio run by hand measures?

Two sides, from the same machine state, alternating (A B, B A, ...):

- **fsbench**: `fsbench run --fs ext4 --workload fio --set profile=seq-write --reps 1
  --warmup 1` as a subprocess (the whole runner: its own sparse loop image, discard, mkfs,
  cold remount, monitors; a warm-up trial then the measured one), its `write_mib_s`;
- **by hand**: a hand-written fio job (1 MiB sequential writes, fsync at the end) on a
  device prepared the way a careful person would and the runner does: a fresh sparse
  image, `losetup --direct-io=on`, `blkdiscard`, `mkfs.ext4 -E lazy_itable_init=0,...`,
  mount, remount cold; the same job once uncounted (the warm-up: on this VM the first large
  buffered write after other work runs at a quarter of the speed), then a fresh mkfs and
  the measured run; fio's own bandwidth.

The verdict is an **equivalence test**, not "Welch found no difference" (which a small n
and a noisy machine always give): the ratio fsbench / by hand with its 90% confidence
interval (two one-sided tests at 5%) must lie inside 0.97-1.03, the ratio paired by rep
(the geometric mean of the reps' ratios, a t interval of their logs: the two sides of a
rep run back to back, so the machine's slow drift cancels; the ratio of the means, delta
method and Welch df, is given beside it, and was the verdict until 2026-11-26 10:00 UTC):
EQUIVALENT within 3%; an interval entirely outside: DIFFERENT; else UNDECIDED (more
reps). Exit status 0 only for EQUIVALENT. The values, the machine, the date and the load
average before every run (this machine is shared: its noise) go to
`bench/results/fio_fidelity.json` (`--output`).

**The same work on both sides.** The hand job is written as a person would, plus the two
options of fsbench's job that change how fio runs rather than what it writes: `thread=1`
(fsbench's fio runs its job as a thread of the fio process; without it fio forks a job
process) and `group_reporting=1`. Everything else was the same already: psync, 1 MiB
sequential writes, `end_fsync=1` inside fio's runtime, `fallocate=none`, one file of
`size` on a fresh ext4 (lazy init off) on a discarded direct-I/O loop image, a warm-up
write first, a cold remount before the measured write, fio's own `bw_bytes`.

    python3 bench/fio_fidelity.py [--size 2G] [--image-size 8G] [--reps 6]
                                  [--workdir /var/tmp] [--output PATH]

Needs root, fio and mkfs.ext4. Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))
import results_file  # noqa: E402

from fsbench.analysis.stats import ratio_ci, t_quantile  # noqa: E402
from fsbench.system.units import format_size, parse_size  # noqa: E402

MIB = 1 << 20
SETTLE_SECONDS = 3.0
BOUNDS = (0.97, 1.03)
MKFS = ["mkfs.ext4", "-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0"]

# What someone would type for "1 MiB sequential write, fsync at the end, let the
# filesystem allocate": written by hand, not generated from fsbench's profile; plus
# thread and group_reporting, as fsbench's job has them (see the docstring).
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
thread=1
group_reporting=1
"""


def _run(argv: list[str]) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


class HandDevice:
    """A fresh sparse image on a loop device with direct I/O, like fsbench's LoopImage."""

    def __init__(self, tmp: Path, image_size: int) -> None:
        self.image = tmp / "hand.img"
        with self.image.open("wb") as f:
            f.truncate(image_size)
        self.device = _run(
            ["losetup", "--direct-io=on", "--find", "--show", str(self.image)]
        ).strip()
        self.mnt = tmp / "hand-mnt"
        self.mnt.mkdir(exist_ok=True)

    def fresh_fs(self, cold: bool = True) -> None:
        """A new ext4, mounted. `cold`: remounted with caches dropped, nothing of it
        cached (fsbench's cold-remount state, fio's); else as mkfs left it (fsbench's
        warm state, fs_mark's: the inode tables mkfs zeroed still in the page cache)."""
        if os.path.ismount(self.mnt):
            _run(["umount", str(self.mnt)])
        subprocess.run(["blkdiscard", self.device], check=False, capture_output=True)
        _run([*MKFS, self.device])
        _run(["mount", self.device, str(self.mnt)])
        if cold:
            _run(["umount", str(self.mnt)])
            Path("/proc/sys/vm/drop_caches").write_text("3\n")
            _run(["mount", self.device, str(self.mnt)])

    def write(self, size: int, tmp: Path) -> float:
        job = tmp / "hand.fio"
        job.write_text(HAND_JOB.format(directory=self.mnt, size=size))
        out = tmp / "hand.json"
        _run(["fio", "--output-format=json", f"--output={out}", str(job)])
        _run(["sync", "-f", str(self.mnt)])
        return float(json.loads(out.read_text())["jobs"][0]["write"]["bw_bytes"]) / MIB

    def close(self) -> None:
        if os.path.ismount(self.mnt):
            subprocess.run(["umount", str(self.mnt)], check=False)
        subprocess.run(["losetup", "-d", self.device], check=False)
        self.image.unlink(missing_ok=True)


def by_hand(size: int, image_size: int, tmp: Path) -> float:
    dev = HandDevice(tmp, image_size)
    try:
        dev.fresh_fs()
        dev.write(size, tmp)  # warm-up, not counted
        dev.fresh_fs()
        return dev.write(size, tmp)
    finally:
        dev.close()


def fsbench_metrics(
    workload: str, sets: list[str], image_size: int, workdir: Path
) -> dict[str, float]:
    """`fsbench run --fs ext4 --workload W --set ... --reps 1 --warmup 1`: the measured
    trial's metrics."""
    with tempfile.TemporaryDirectory(dir=workdir, prefix="fsbench-fidelity-cli-") as tmp:
        argv = [
            sys.executable,
            "-m",
            "fsbench.cli",
            "run",
            "--fs",
            "ext4",
            "--workload",
            workload,
            *[a for kv in sets for a in ("--set", kv)],
            "--reps",
            "1",
            "--warmup",
            "1",
            "--scale",
            "quick",
            "--image-size",
            format_size(image_size),
            "--workdir",
            tmp,
            "--db",
            str(Path(tmp) / "results.db"),
            "--no-report",
            "--json",
        ]
        env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
        res = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        if res.returncode != 0:
            print(res.stdout[-2000:], res.stderr[-2000:], file=sys.stderr)
            raise SystemExit(f"fsbench run exited {res.returncode}")
        rows = json.loads(res.stdout)["rows"]
        out: dict[str, float] = {}
        for row in rows:
            if len(row.get("values") or []) == 1:
                out[row["metric"]] = float(row["values"][0])
        return out


def via_fsbench(size: int, image_size: int, workdir: Path) -> float:
    metrics = fsbench_metrics(
        "fio", ["profile=seq-write", f"size={format_size(size)}"], image_size, workdir
    )
    return metrics["write_mib_s"]


def settle(workdir: Path) -> None:
    """Between sides: what one side deleted (its image) is written back and freed before
    the other starts, so neither pays for the other's cleanup."""
    _run(["sync", "-f", str(workdir)])
    Path("/proc/sys/vm/drop_caches").write_text("3\n")
    time.sleep(SETTLE_SECONDS)


def _judge(ratio: float, ci: tuple[float, float] | None) -> tuple[str, float, tuple[float, float]]:
    if ci is None or not math.isfinite(ratio):
        return "UNDECIDED", ratio, (math.nan, math.nan)
    low, high = ci
    if BOUNDS[0] <= low and high <= BOUNDS[1]:
        return f"EQUIVALENT within {100 * (BOUNDS[1] - 1):.0f}%", ratio, ci
    if high < BOUNDS[0] or low > BOUNDS[1]:
        return "DIFFERENT", ratio, ci
    return "UNDECIDED (more reps)", ratio, ci


def equivalence(fsb: list[float], hand: list[float]) -> tuple[str, float, tuple[float, float]]:
    """The verdict on fsbench / by hand, paired by rep: the two sides of a rep run back to
    back (A B, then B A), so the geometric mean of the per-rep ratios with a t interval of
    their logs (n - 1 df) cancels this shared machine's slow drift, which the ratio of
    the means keeps as noise (as bench/engine_vs_filebench.py pairs its rounds)."""
    logs = [math.log(f / h) for f, h in zip(fsb, hand, strict=True) if f > 0 and h > 0]
    if len(logs) < 2:
        return _judge(math.nan, None)
    mean = statistics.fmean(logs)
    half = t_quantile(len(logs) - 1, 0.90) * statistics.stdev(logs) / math.sqrt(len(logs))
    return _judge(math.exp(mean), (math.exp(mean - half), math.exp(mean + half)))


def unpaired(fsb: list[float], hand: list[float]) -> tuple[str, float, tuple[float, float]]:
    """The same on mean(fsbench) / mean(by hand) (delta method, Welch df), ignoring the
    pairing: the verdict until 2026-11-26 10:00 UTC, kept beside the paired one."""
    ratio, ci = ratio_ci(hand, fsb, confidence=0.90)
    return _judge(ratio, ci)


def verdict_line(fsb: list[float], hand: list[float]) -> tuple[bool, dict[str, object], str]:
    """Both verdicts, for the results file and the terminal; ok when the paired one is
    EQUIVALENT."""
    word, ratio, (low, high) = equivalence(fsb, hand)
    u_word, u_ratio, (u_low, u_high) = unpaired(fsb, hand)
    record = {
        "ratio": ratio,
        "ci90": [low, high],
        "verdict": word,
        "pairing": "per rep (geometric mean of the reps' ratios)",
        "unpaired": {"ratio": u_ratio, "ci90": [u_low, u_high], "verdict": u_word},
    }
    text = (
        f"fsbench / by hand, paired by rep = {ratio:.3f}, 90% CI [{low:.3f}, {high:.3f}] "
        f"(equivalence bounds {BOUNDS[0]}-{BOUNDS[1]}): {word}\n"
        f"  unpaired (ratio of means) = {u_ratio:.3f}, 90% CI [{u_low:.3f}, {u_high:.3f}]: "
        f"{u_word}"
    )
    return word.startswith("EQUIVALENT"), record, text


def describe(name: str, values: list[float], unit: str = "MiB/s") -> str:
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    each = ", ".join(f"{v:.0f}" for v in values)
    return f"{name:<12} {mean:8.1f} {unit}  sd {sd:6.1f}  cv {100 * sd / mean:5.1f}%  [{each}]"


def derive(doc: dict[str, Any]) -> dict[str, Any]:
    """The figures a reader takes from a file, computed once from its runs (`summary`): per
    metric each side's mean and CV, and both verdicts (paired by rep, and on the ratio of
    the means) as this bench judges now. Nothing is measured again."""
    out: dict[str, Any] = {
        "derived": f"by {Path(__file__).name} --derive from this file's runs: nothing "
        "measured again"
    }
    for metric in doc["verdicts"]:
        sides: dict[str, list[float]] = {}
        for run in sorted(doc["runs"], key=lambda r: r["rep"]):
            sides.setdefault(run["side"], []).append(run[metric])
        fsb, hand = sides["fsbench"], sides["by hand"]
        _, record, _ = verdict_line(fsb, hand)
        out[metric] = {
            side: {
                "n": len(v),
                "mean": statistics.fmean(v),
                "cv": statistics.stdev(v) / statistics.fmean(v) if len(v) > 1 else None,
            }
            for side, v in sides.items()
        } | {"paired": {k: record[k] for k in ("ratio", "ci90", "verdict")}}
        out[metric]["unpaired"] = record["unpaired"]
    return out


def save(
    path: Path,
    bench: str,
    values: dict[str, list[float]],
    runs: list[dict[str, object]],
    verdicts: dict[str, object],
    extra: dict[str, object],
    workload: str,
) -> None:
    """The bench's JSON: this invocation's provenance (results_file), every run (with the
    load before and after it), verdicts."""
    doc = results_file.provenance(bench, workloads=[workload], filesystems=["ext4"])
    doc |= {
        "bounds": list(BOUNDS),
        "confidence": 0.90,
        **extra,
        "values": values,
        "runs": runs,
        "verdicts": verdicts,
    }
    doc["summary"] = derive(doc)
    results_file.write(path, results_file.finish(doc))


def rederive(path: Path) -> None:
    """The summary of an existing file, made again from its runs (`--derive`)."""
    doc = json.loads(path.read_text())
    doc["summary"] = derive(doc)
    results_file.write(path, doc)
    print(json.dumps(doc["summary"], indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--size", default="2G", type=parse_size, help="file size (quick: 2G)")
    ap.add_argument("--image-size", default="8G", type=parse_size)
    ap.add_argument("--workdir", default="/var/tmp", type=Path)
    ap.add_argument("--reps", default=6, type=int)
    ap.add_argument("--output", type=Path, default=REPO / "bench/results/fio_fidelity.json")
    ap.add_argument(
        "--derive", action="store_true", help="only (re)compute the summary of --output"
    )
    args = ap.parse_args()
    if args.derive:
        rederive(args.output)
        return
    if os.geteuid() != 0:
        raise SystemExit("needs root (loop devices, mkfs, mount)")
    values: dict[str, list[float]] = {"fsbench": [], "by hand": []}
    print(
        f"ext4 on a fresh {format_size(args.image_size)} sparse loop image (direct I/O), "
        f"seq-write {format_size(args.size)} in 1 MiB blocks, a warm-up before each "
        f"measured write, {args.reps} reps each, alternating"
    )
    with tempfile.TemporaryDirectory(dir=args.workdir, prefix="fsbench-fidelity-") as tmpdir:
        tmp = Path(tmpdir)
        sides = list(values)
        runs: list[dict[str, object]] = []
        for rep in range(args.reps):
            for side in sides if rep % 2 == 0 else sides[::-1]:
                with results_file.trial_conditions() as conditions:
                    if side == "fsbench":
                        value = via_fsbench(args.size, args.image_size, args.workdir)
                    else:
                        value = by_hand(args.size, args.image_size, tmp)
                load = conditions["load_before"][0]
                values[side].append(value)
                runs.append(
                    {
                        "rep": rep + 1,
                        "side": side,
                        "write_mib_s": value,
                        "load1_before": load,
                        **conditions,
                    }
                )
                print(
                    f"  rep {rep + 1:<3} {side:<8} {value:8.1f} MiB/s (load {load:.1f})", flush=True
                )
                settle(args.workdir)
    for side, got in values.items():
        print(describe(side, got))
    ok, record, text = verdict_line(values["fsbench"], values["by hand"])
    print(text)
    save(
        args.output,
        "fio_fidelity",
        values,
        runs,
        {"write_mib_s": record},
        {"size": args.size, "image_size": args.image_size, "reps": args.reps},
        "fio",
    )
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
