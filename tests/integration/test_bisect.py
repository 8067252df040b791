"""`fsbench bisect` for real: a small git history on top of Debian's Linux source, with a
regression planted in ext4's fsync path and a commit that does not build; fsbench builds,
boots and measures the commits git bisect picks and must name the planted commit, skip
the broken one, and leave the steps in `git bisect log`.

The history is made in one repository under the kbuild cache (the Debian source committed
once, ~1.5 min), at fixed dates and names, so its commits have the same ids at every run:
the build directory, ccache and the bzImages of the commits already built are reused, and
a warm run only measures. A cold run builds the base kernel (a minimal config: ~4.5 min
on 2 cores) and a few incremental steps.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from fsbench.system import sourcetree
from fsbench.vm.kbuild import KBUILD_CACHE
from tests.helpers import GUEST, VM_MARKS, fsbench
from tests.suitetime import build, record

pytestmark = [
    *VM_MARKS,
    pytest.mark.skipif(shutil.which("make") is None, reason="no make"),
    pytest.mark.skipif(sourcetree.find_kernel_tarball() is None, reason="no linux-source"),
]
REPO = KBUILD_CACHE / "test-linux"
BASE_TAG = "debian-base"
SOURCE_CACHE = Path("/var/tmp/fsbench/cache")
BRANCH = "fsbench-bisect-test"
WHO = {
    "GIT_AUTHOR_NAME": "fsbench test",
    "GIT_AUTHOR_EMAIL": "fsbench@localhost",
    "GIT_COMMITTER_NAME": "fsbench test",
    "GIT_COMMITTER_EMAIL": "fsbench@localhost",
}
FSYNC_C = "fs/ext4/fsync.c"
ENTRY = "int ext4_sync_file(struct file *file, loff_t start, loff_t end, int datasync)\n{\n"
# fs_mark with an fsync before every close: each file pays the planted delay once. Its
# seconds, not its files/s: a 1 s trial under TCG on a busy host ranges 0.8-3.8 s, which
# as files/s (26-124) hides even the 10x the delay makes from Welch at n=4.
MEASURE = ["--fs", "ext4", "--workload", "fs_mark", "--scale", "tiny", "--metric", "seconds"]
MEASURE += ["--set", "files=60", "--set", "sync=1", *GUEST, "--warmup", "0"]


def git(*args: str, date: str = "2024-01-01T00:00:00+00:00", check: bool = True) -> str:
    env = {**os.environ, **WHO, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    res = subprocess.run(
        ["git", "-C", str(REPO), *args], env=env, capture_output=True, text=True, check=False
    )
    if check and res.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {res.stderr}")
    return res.stdout


def base_repo() -> None:
    """Debian's Linux source as one commit (tag debian-base), made once per source: kept
    while the tag's message names the source the cache holds."""
    with build("Debian source (linux-source, xz -d)") as log:
        tree = sourcetree.kernel_source(SOURCE_CACHE, log)
    subject = f"Debian {tree.name}"
    with build("bisect: the Debian source as a git commit") as log:
        if REPO.is_dir() and git("log", "-1", "--format=%s", BASE_TAG, check=False).strip() == (
            subject
        ):
            return
        log(f"git commit of {tree.name} in {REPO}")
        _commit_source(tree, subject)


def _commit_source(tree: sourcetree.SourceTree, subject: str) -> None:
    tmp = REPO.with_name(REPO.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    subprocess.run(["tar", "xf", tree.tar, "-C", str(tmp), "--strip-components=1"], check=True)
    env = {**os.environ, **WHO, "GIT_AUTHOR_DATE": "2023-01-01T00:00:00+00:00"}
    env["GIT_COMMITTER_DATE"] = env["GIT_AUTHOR_DATE"]
    for argv in (
        ["git", "init", "-q", "-b", "main"],
        # No `gc --auto` after the commits: packing 80,000 objects takes minutes of CPU
        # beside the suite's other worker, for a repository only this test reads.
        ["git", "config", "gc.auto", "0"],
        # Debian's .gitignore ignores its top level: everything is added by force.
        ["git", "add", "-A", "-f"],
        ["git", "commit", "-q", "-m", subject],
        ["git", "tag", BASE_TAG],
    ):
        subprocess.run(argv, cwd=tmp, env=env, check=True, capture_output=True)
    shutil.rmtree(REPO, ignore_errors=True)
    tmp.rename(REPO)


def commit(path: str, text: str, subject: str, day: int) -> str:
    (REPO / path).write_text(text)
    git("add", "-f", path)
    git("commit", "-q", "-m", subject, date=f"2024-01-{day:02d}T12:00:00+00:00")
    return git("rev-parse", "HEAD").strip()


def reset() -> None:
    git("bisect", "reset", check=False)
    git("checkout", "-q", "-f", BASE_TAG)


@pytest.fixture(scope="module")
def history() -> Iterator[dict[str, str]]:
    """The planted history: base, doc, doc, broken, fix, regression, doc (bad)."""
    KBUILD_CACHE.mkdir(parents=True, exist_ok=True)
    with open(KBUILD_CACHE / ".lock-test-linux", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one test run at a time on this repository
        base_repo()
        try:
            reset()
            git("checkout", "-q", "-B", BRANCH, BASE_TAG)
            shas = {"base": git("rev-parse", "HEAD").strip()}
            fsync = (REPO / FSYNC_C).read_text()
            assert ENTRY in fsync
            doc = REPO / "Documentation/filesystems/ext4/about.rst"
            shas["doc1"] = commit(
                str(doc.relative_to(REPO)), doc.read_text() + "\n.. fsbench 1\n", "doc: note", 2
            )
            shas["doc2"] = commit(
                str(doc.relative_to(REPO)), doc.read_text() + "\n.. fsbench 2\n", "doc: more", 3
            )
            broken = fsync.replace(ENTRY, ENTRY + "\tthis does not build;\n")
            shas["broken"] = commit(FSYNC_C, broken, "ext4: a commit that does not build", 4)
            shas["fix"] = commit(FSYNC_C, fsync, "ext4: fix the build", 5)
            slow = fsync.replace(
                "#include <linux/blkdev.h>", "#include <linux/blkdev.h>\n#include <linux/delay.h>"
            ).replace(ENTRY, ENTRY + "\tmsleep(100);\n")
            assert slow != fsync
            shas["regression"] = commit(FSYNC_C, slow, "ext4: wait 100 ms in fsync", 6)
            shas["doc3"] = commit(
                str(doc.relative_to(REPO)), doc.read_text() + "\n.. fsbench 3\n", "doc: last", 7
            )
            yield shas
        finally:
            with contextlib.suppress(AssertionError):
                reset()


def test_bisect_names_the_planted_commit(history: dict[str, str], tmp_path: Path) -> None:
    res = fsbench(
        "bisect",
        "--linux",
        str(REPO),
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
    print(f"bisection: {data['seconds']:.0f} s")
    for s in data["steps"]:
        borrowed = f"the kernel of {s['kernel_of'][:12]}" if s.get("kernel_of") else ""
        name = f"bisect: kernel {s['commit'][:12]} ({s['role']})"
        record(name, s["build_seconds"], built=s["build_seconds"] > 0, detail=borrowed)
        print(
            f"  {s['commit'][:12]} {s['role']:13} n={s['n']} {s['verdict']:9} "
            f"build {s['build_seconds']:.0f} s, measure {s['measure_seconds']:.0f} s"
        )


def test_endpoints_within_noise_are_refused_before_any_step(
    history: dict[str, str], tmp_path: Path
) -> None:
    """Two commits that change no code: measured, refused in one line with numbers, and
    no step built (git is not bisecting)."""
    reset()
    git("checkout", "-q", BRANCH)
    res = fsbench(
        "bisect",
        "--linux",
        str(REPO),
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
