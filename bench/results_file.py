"""Where a bench of fsbench itself keeps what it measured: `bench/results/<bench>.json`,
committed, so that every figure the README quotes from a bench can be traced to a file
that says on which machine and when it was measured (tests/unit/test_readme_bench_figures.py
checks that the README quotes nothing else).

    {"bench": "monitor_overhead", "date": "2026-11-25T23:40:00+00:00",
     "argv": [...], "machine": {"cpu": ..., "cpus": 2, "memory_gib": ..., "kernel": ...},
     "results": {...}}
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
# The machine's load when the bench started (this module is imported at its start): on a
# shared machine the numbers move with it.
_LOAD_AT_START = os.getloadavg()


def machine() -> dict[str, Any]:
    """The facts of this machine that a bench's numbers depend on."""
    cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
    meminfo = Path("/proc/meminfo").read_text()
    mem_kib = re.search(r"^MemTotal:\s*(\d+)", meminfo, re.MULTILINE)
    virt = subprocess.run(
        ["systemd-detect-virt"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "cpu": model.group(1).strip() if model else platform.processor(),
        "cpus": os.cpu_count(),
        "memory_gib": round(int(mem_kib.group(1)) / (1 << 20), 1) if mem_kib else None,
        "kernel": platform.release(),
        "virtualization": virt or "none",
        "python": platform.python_version(),
    }


def save(bench: str, results: Any, started: datetime | None = None) -> Path:
    """Write bench/results/<bench>.json and say where."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{bench}.json"
    doc = {
        "bench": bench,
        "date": (started or datetime.now(UTC)).isoformat(timespec="seconds"),
        "argv": [Path(sys.argv[0]).name, *sys.argv[1:]],
        "machine": machine(),
        "load_average": {
            "at_start": [round(x, 2) for x in _LOAD_AT_START],
            "at_end": [round(x, 2) for x in os.getloadavg()],
        },
        "results": results,
    }
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"results: {path}", file=sys.stderr)
    return path
