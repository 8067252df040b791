"""Does a streaming write's speed on this machine depend on the filesystem, or on what the
hypervisor did with the guest's free memory? Why the quick preset writes with O_DIRECT.

On a VM whose balloon reports free pages to the host (virtio-balloon free page reporting,
`/sys/module/page_reporting`), memory the guest frees (a trial's page cache, at umount)
goes back to the host after a few seconds, and the next trial that fills the page cache
faults it in again. A buffered write's speed then depends on how long ago the last trial
freed its pages, which is the schedule's, not the filesystem's.

The same ext4 write (fio, 1 MiB blocks, fsync at the end inside fio's time, `fallocate=none`,
as fsbench's seq-write and seq-write-direct profiles) on a fresh mkfs of a sparse
direct-I/O loop image (as fsbench's target), each measured write after a primer write that
frees its page cache at umount, in three conditions:

- `pause-1s`: primer on ext4, then the measured write 1 s after the mount;
- `pause-10s`: the same, 10 s after the mount;
- `after-btrfs`: primer on btrfs (its write is slower: it frees its pages later), then
  the measured ext4 write 1 s after the mount;

each buffered (`seq-write`) and with O_DIRECT (`seq-write-direct`), `--reps` times in turn.
The KiB the guest reported to the host between the end of the primer's write and the
start of the measured one is kept where the kernel counts it (`reported_kib`).

    python3 bench/fio_page_reporting.py [--size 3G] [--reps 3] [--workdir /var/tmp]

Needs root, fio, mkfs.ext4 and mkfs.btrfs. Writes bench/results/fio_page_reporting.json.
Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
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

from fsbench.system.units import parse_size  # noqa: E402

REPORTING = Path("/sys/module/page_reporting/parameters")
CONDITIONS = {  # name: (primer filesystem, seconds between the mount and the write)
    "pause-1s": ("ext4", 1.0),
    "pause-10s": ("ext4", 10.0),
    "after-btrfs": ("btrfs", 1.0),
}
MODES = {"seq-write": False, "seq-write-direct": True}  # profile: O_DIRECT
MKFS = {
    "ext4": ["mkfs.ext4", "-q", "-F"],
    "btrfs": ["mkfs.btrfs", "-q", "-f"],
}


def run(argv: list[str]) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def reported_kib() -> int | None:
    path = REPORTING / "reported_kib"
    return int(path.read_text()) if path.exists() else None


def page_reporting() -> dict[str, str]:
    """The kernel's free page reporting parameters (none: no reporting balloon)."""
    if not REPORTING.is_dir():
        return {}
    return {p.name: p.read_text().strip() for p in sorted(REPORTING.iterdir())}


def write(
    device: str, mnt: Path, fs: str, size: int, direct: bool, pause: float, since: int | None
) -> dict[str, Any]:
    """mkfs, mount, wait `pause` s, the fio write, umount: fio's MiB/s and seconds, the KiB
    reported to the host from `since` (a `reported_kib`) to the write's start, and the
    count at its end."""
    run([*MKFS[fs], device])
    run(["mount", device, str(mnt)])
    try:
        time.sleep(pause)
        before = reported_kib()
        out = run(
            [
                "fio",
                "--name=w",
                "--ioengine=psync",
                "--thread=1",
                "--rw=write",
                "--bs=1M",
                f"--size={size}",
                "--end_fsync=1",
                "--fallocate=none",
                f"--direct={int(direct)}",
                f"--directory={mnt}",
                "--output-format=json",
            ]
        )
        at_end = reported_kib()
    finally:
        run(["umount", str(mnt)])
    job = json.loads(out)["jobs"][0]["write"]
    return {
        "mib_s": round(job["bw_bytes"] / (1 << 20), 1),
        "seconds": round(job["runtime"] / 1000, 3),
        "reported_kib_before": None if before is None or since is None else before - since,
        "reported_kib_at_end": at_end,
    }


def measure(device: str, mnt: Path, size: int, reps: int) -> list[dict[str, Any]]:
    trials = []
    for rep in range(reps):
        for mode, direct in MODES.items():
            for condition, (primer, pause) in CONDITIONS.items():
                # The primer: a write whose page cache the umount frees.
                primed = write(device, mnt, primer, size, False, 0, None)
                with results_file.trial_conditions() as conditions:
                    value = write(
                        device, mnt, "ext4", size, direct, pause, primed["reported_kib_at_end"]
                    )
                del value["reported_kib_at_end"]
                trials.append(
                    {"rep": rep, "mode": mode, "condition": condition, **value, **conditions}
                )
                print(f"{rep} {mode} {condition}: {value}", file=sys.stderr)
    return trials


def summary(trials: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode in MODES:
        rows = {}
        for condition in CONDITIONS:
            values = [
                t["mib_s"] for t in trials if (t["mode"], t["condition"]) == (mode, condition)
            ]
            rows[condition] = {
                "n": len(values),
                "mean_mib_s": round(statistics.fmean(values), 1),
                "min_mib_s": min(values),
                "max_mib_s": max(values),
            }
        means = [r["mean_mib_s"] for r in rows.values()]
        rows["slowest_over_fastest_mean"] = round(min(means) / max(means), 3)
        out[mode] = rows
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="3G", type=parse_size)
    ap.add_argument("--reps", default=3, type=int)
    ap.add_argument("--image-size", default="8G", type=parse_size)
    ap.add_argument("--workdir", default="/var/tmp", type=Path)
    ap.add_argument("--output", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir, prefix="fio-page-reporting-") as d:
        image, mnt = Path(d) / "image", Path(d) / "mnt"
        mnt.mkdir()
        with image.open("wb") as f:
            f.truncate(args.image_size)
        device = run(["losetup", "--direct-io=on", "--find", "--show", str(image)]).strip()
        try:
            trials = measure(device, mnt, args.size, args.reps)
        finally:
            subprocess.run(["umount", str(mnt)], capture_output=True, check=False)
            subprocess.run(["losetup", "-d", device], check=False)
    results = {
        "size_bytes": args.size,
        "page_reporting": page_reporting(),
        "summary": summary(trials),
        "trials": trials,
    }
    results_file.save(
        "fio_page_reporting",
        results,
        path=args.output,
        workloads=("fio",),
        filesystems=("ext4", "btrfs"),
    )
    print(json.dumps(results["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
