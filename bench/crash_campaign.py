"""The full reliability campaign: 20 kill -9s at random points, then resume.

    .venv/bin/python bench/crash_campaign.py [--attempts 20] [--seed 1]

Prints: attempts, refusals, crashes survived, trials lost (must be 0), resources leaked
(must be 0). Needs root (loop devices)."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.campaign import run_campaign  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--attempts", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="fsbench-campaign-", dir="/var/tmp"))
    try:
        summary = run_campaign(workdir, args.attempts, args.seed)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(summary.line())
    ok = summary.trials_lost == 0 and not summary.leaked and summary.duplicates == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
