"""The A/A check of issue 13 at quick scale: two ext4 configs identical but for their
label, fs_mark then fio seq-write, 3 reps, through `fsbench run` with its order, warm-up
and statistics. Identical configs must get no clear winner and means within 10% of each
other (the first version named one 3.89x faster). Prints per metric the twins' means, the
gap and the verdict; exit status 0 only when every headline metric passes.

    python3 bench/aa_check.py [--scale quick] [--reps 3] [--workdir /var/tmp]

Needs root. Minutes at quick scale. Not part of the test run (tests/integration/
test_calibrate.py runs an A/A at tiny scale in every `make test`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GAP_LIMIT = 0.10


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--scale", default="quick")
    ap.add_argument("--reps", default="3")
    ap.add_argument("--workdir", default="/var/tmp")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fsbench-aa-", dir=args.workdir) as tmp:
        argv = [
            sys.executable, "-m", "fsbench.cli", "run",
            "--fs", "ext4:label=ext4-a", "--fs", "ext4:label=ext4-b",
            "--workload", "fs_mark,fio", "--set", "profile=seq-write",
            "--scale", args.scale, "--reps", args.reps,
            "--workdir", f"{tmp}/work", "--db", f"{tmp}/aa.db", "--no-report", "--json",
        ]  # fmt: skip
        res = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=REPO)
        if res.returncode not in (0, 3):
            print(res.stderr[-2000:], file=sys.stderr)
            return 2
        rows = json.loads(res.stdout)["rows"]
        report = [sys.executable, "-m", "fsbench.cli", "report", "--db", f"{tmp}/aa.db"]
        verdicts = subprocess.run(
            [*report, "--format", "md"], capture_output=True, text=True, check=False, cwd=REPO
        ).stdout
    failed = False
    for metric in ("files_per_s", "write_mib_s"):
        pair = [r for r in rows if r["metric"] == metric and r["n"]]
        if len(pair) != 2:
            print(f"{metric}: missing rows")
            failed = True
            continue
        a, b = sorted(pair, key=lambda r: r["config"])
        gap = abs(b["mean"] / a["mean"] - 1)
        print(
            f"{metric}: {a['config']} {a['mean']:.1f} ({len(a['values'])}), {b['config']} "
            f"{b['mean']:.1f} ({len(b['values'])}): gap {gap:.1%} "
            f"({'ok' if gap <= GAP_LIMIT else f'over {GAP_LIMIT:.0%}'})"
        )
        failed |= gap > GAP_LIMIT
    for line in (ln for ln in verdicts.splitlines() if "_verdict_" in ln):
        for cell in (c.strip(" _") for c in line.split("|")[2:]):
            if cell and "no clear difference" not in cell:
                print(f"winner named: {cell}")
                failed = True
    print("A/A: PASS" if not failed else "A/A: FAIL")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
