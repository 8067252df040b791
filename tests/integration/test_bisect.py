"""`fsbench bisect` for real: a small git history on top of Debian's Linux source, with a
regression planted in ext4's fsync path and a commit that does not build; fsbench builds,
boots and measures the commits git bisect picks and must name the planted commit, skip
the broken one, and leave the steps in `git bisect log`.

The history is tests/plantedlinux.py's (shared with every test that builds a kernel), its
kernels fsbench's `minimal` config: the guest's devices and ext4, all built in. Each
commit bisected is still built for real (make, from its own checkout), booted in a guest
and measured there; a commit that changes only the documentation runs the kernel of the
commit it differs from, as fsbench bisect does for any tree. The build directory, ccache
and every commit's bzImage are kept by commit id: a warm run only measures; a cold one
builds the base kernel and a few incremental steps.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fsbench.vm.kbuild import read_config
from tests.helpers import GUEST, VM_MARKS, fsbench
from tests.plantedlinux import BRANCH, CONFIG, REPO, builder, git, reset
from tests.suitetime import record

pytestmark = [*VM_MARKS, pytest.mark.skipif(shutil.which("make") is None, reason="no make")]
# fs_mark with an fsync before every close: each file pays the planted delay once. Its
# seconds, not its files/s: a 1 s trial under TCG on a busy host ranges 0.8-3.8 s, which
# as files/s (26-124) hides even the 10x the delay makes from Welch at n=4.
MEASURE = ["--fs", "ext4", "--workload", "fs_mark", "--scale", "tiny", "--metric", "seconds"]
MEASURE += ["--set", "files=60", "--set", "sync=1", *GUEST, "--warmup", "0"]


def test_bisect_names_the_planted_commit(planted_history: dict[str, str], tmp_path: Path) -> None:
    history = planted_history
    res = fsbench(
        "bisect",
        "--linux",
        str(REPO),
        "--config",
        CONFIG.name,
        "--good",
        history["base"],
        "--bad",
        history["doc3"],
        *MEASURE,
        "--max-reps",
        "4",
        "--no-recheck",  # the recheck is the driver's unit test's: 2 guests less here
        "--workdir",
        str(tmp_path / "work"),
        "--db",
        str(tmp_path / "results.db"),
        "--json",
        timeout=2400,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    data = json.loads(res.stdout)
    first = data["first_bad"]
    assert first["commit"] == history["regression"], res.stderr[-3000:]
    assert first["subject"] == "ext4: wait 100 ms in fsync"
    skipped = {s["commit"] for s in data["steps"] if s["verdict"] == "skip"}
    assert skipped == {history["broken"]}
    broken = next(s for s in data["steps"] if s["commit"] == history["broken"])
    assert "error" in broken["error"]
    log = git("bisect", "log")
    assert f"git bisect start '{history['doc3']}' '{history['base']}'" in log.splitlines()
    assert f"git bisect skip {history['broken']}" in log
    assert f"git bisect bad {history['regression']}" in log
    assert f"# first bad commit: [{history['regression']}]" in log
    for step in data["steps"]:
        if step["role"] == "step" and step["verdict"] != "skip":
            assert step["n"] >= 3 and step["gate"]["verdict"] == step["verdict"]
    assert data["seconds"] > 0
    # The kernels measured are the minimal config's: every option it asks for, as asked.
    config = read_config(builder().dir / "kernels" / history["regression"] / ".config")
    assert CONFIG.missing(config) == [], CONFIG.missing(config)
    print(f"bisection: {data['seconds']:.0f} s")
    for s in data["steps"]:
        borrowed = f"the kernel of {s['kernel_of'][:12]}" if s.get("kernel_of") else ""
        cpu = f"{s['build_cpu_seconds']:.0f} CPU seconds" if s["build_cpu_seconds"] else ""
        name = f"bisect: kernel {s['commit'][:12]} ({s['role']})"
        record(name, s["build_seconds"], built=s["build_seconds"] > 0, detail=borrowed or cpu)
        print(
            f"  {s['commit'][:12]} {s['role']:13} n={s['n']} {s['verdict']:9} "
            f"build {s['build_seconds']:.0f} s ({s['build_cpu_seconds']:.0f} CPU s), "
            f"measure {s['measure_seconds']:.0f} s"
        )


def test_endpoints_within_noise_are_refused_before_any_step(
    planted_history: dict[str, str], tmp_path: Path
) -> None:
    """Two commits that change no code: measured, refused in one line with numbers, and
    no step built (git is not bisecting)."""
    history = planted_history
    reset()
    git("checkout", "-q", BRANCH)
    res = fsbench(
        "bisect",
        "--linux",
        str(REPO),
        "--config",
        CONFIG.name,
        "--good",
        history["doc1"],
        "--bad",
        history["doc2"],
        *MEASURE,
        "--max-reps",
        "3",
        "--workdir",
        str(tmp_path / "work"),
        "--db",
        str(tmp_path / "results.db"),
        timeout=1800,
    )
    assert res.returncode == 5, res.stderr[-3000:]
    refused = [ln for ln in res.stderr.splitlines() if "refusing to bisect" in ln]
    assert len(refused) == 1, res.stderr[-3000:]
    line = refused[0]
    assert line.startswith("refusing to bisect:")
    assert "n=3" in line and "CV" in line and "detect" in line
    assert not git("bisect", "log", check=False).strip()
