"""Helpers for tests that run the `fsbench` command as a user would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fsbench import fsops


def fsbench(
    *args: str, timeout: float = 300, report: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run the CLI. `fsbench run` writes no HTML report unless asked (charts take seconds;
    tests/integration/test_html_report.py covers them)."""
    argv = list(args)
    if argv and argv[0] == "run" and not report and "--no-report" not in argv:
        argv.append("--no-report")
    return subprocess.run(
        [sys.executable, "-m", "fsbench", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def ours(workdir: Path) -> tuple[list[str], list[str]]:
    """Loop devices backed by files in workdir, and mounts under it."""
    out = subprocess.run(["losetup", "-J", "--list"], capture_output=True, text=True).stdout
    loops = [
        d["name"]
        for d in json.loads(out or '{"loopdevices": []}')["loopdevices"]
        if str(d.get("back-file") or "").startswith(str(workdir))
    ]
    mounts = [e.mountpoint for e in fsops.mount_entries() if e.mountpoint.startswith(str(workdir))]
    return loops, mounts
