"""The planted Linux history every test that builds a kernel shares (the bisection's, and
any other that needs a kernel of its own), built with one config: the minimal one
(fsbench.vm.kconfigs.MINIMAL, `fsbench bisect --config minimal`).

Debian's Linux source is one commit (tag debian-base), unpacked from the linux-source
package's tarball and committed once per tarball into the kbuild cache (~1.5 min cold);
on top, at fixed dates and names, so that their ids are the same at every run: two
commits to the documentation, one that does not build, its fix, a 100 ms msleep planted
in ext4's fsync (`ext4_sync_file`), and a last change to the documentation. The build
directory, ccache and the bzImage of every commit built are kept by fsbench's own
KernelBuilder under those ids (`builder()`), so a commit is built once per machine and
config, whichever test builds it first.

One checkout serves every test: a test that uses `planted_history` belongs in the
"bisect" group (GROUPS in tests/conftest.py), so that one worker holds the history (and a
lock against another session on this machine) until the session ends."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from fsbench.system import sourcetree
from fsbench.vm import kconfigs
from fsbench.vm.kbuild import KBUILD_CACHE, KernelBuilder
from tests.suitetime import build

REPO = KBUILD_CACHE / "test-linux"
CONFIG = kconfigs.MINIMAL
BASE_TAG = "debian-base"
BRANCH = "fsbench-bisect-test"
WHO = {
    "GIT_AUTHOR_NAME": "fsbench test",
    "GIT_AUTHOR_EMAIL": "fsbench@localhost",
    "GIT_COMMITTER_NAME": "fsbench test",
    "GIT_COMMITTER_EMAIL": "fsbench@localhost",
}
FSYNC_C = "fs/ext4/fsync.c"
ENTRY = "int ext4_sync_file(struct file *file, loff_t start, loff_t end, int datasync)\n{\n"
PLANTED_DELAY = "\tmsleep(100);\n"  # at the entry of ext4_sync_file, in "regression"
DOC = "Documentation/filesystems/ext4/about.rst"


def git(*args: str, date: str = "2024-01-01T00:00:00+00:00", check: bool = True) -> str:
    env = {**os.environ, **WHO, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    res = subprocess.run(
        ["git", "-C", str(REPO), *args], env=env, capture_output=True, text=True, check=False
    )
    if check and res.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {res.stderr}")
    return res.stdout


def base_repo(tarball: Path) -> None:
    """Debian's Linux source as one commit (tag debian-base), made once per tarball: kept
    while the tag's message names the tarball the machine has."""
    subject = f"Debian {tarball.name.removesuffix('.tar.xz')}"
    with build("bisect: the Debian source as a git commit") as log:
        if REPO.is_dir() and git("log", "-1", "--format=%s", BASE_TAG, check=False).strip() == (
            subject
        ):
            return
        log(f"tar xJf {tarball} and git commit in {REPO}")
        _commit_source(tarball, subject)


def _commit_source(tarball: Path, subject: str) -> None:
    """Unpacked straight from the .tar.xz (no decompressed copy of 1.3 GB written and read
    again), added and committed in a new repository that replaces the old one at once."""
    tmp = REPO.with_name(REPO.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    unpack = ["tar", "xJf", str(tarball), "-C", str(tmp), "--strip-components=1"]
    subprocess.run(unpack, check=True)
    env = {**os.environ, **WHO, "GIT_AUTHOR_DATE": "2023-01-01T00:00:00+00:00"}
    env["GIT_COMMITTER_DATE"] = env["GIT_AUTHOR_DATE"]
    for argv in (
        ["git", "init", "-q", "-b", "main"],
        # No `gc --auto` after the commits: packing 80,000 objects takes minutes of CPU
        # beside the suite's other worker, for a repository only these tests read.
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


def _plant() -> dict[str, str]:
    """The history on BRANCH from the base: base, doc1, doc2, broken, fix, regression,
    doc3 (each name: its commit)."""
    reset()
    git("checkout", "-q", "-B", BRANCH, BASE_TAG)
    shas = {"base": git("rev-parse", "HEAD").strip()}
    fsync = (REPO / FSYNC_C).read_text()
    assert ENTRY in fsync
    doc = (REPO / DOC).read_text()
    shas["doc1"] = commit(DOC, doc + "\n.. fsbench 1\n", "doc: note", 2)
    shas["doc2"] = commit(DOC, doc + "\n.. fsbench 1\n\n.. fsbench 2\n", "doc: more", 3)
    broken = fsync.replace(ENTRY, ENTRY + "\tthis does not build;\n")
    shas["broken"] = commit(FSYNC_C, broken, "ext4: a commit that does not build", 4)
    shas["fix"] = commit(FSYNC_C, fsync, "ext4: fix the build", 5)
    slow = fsync.replace(
        "#include <linux/blkdev.h>", "#include <linux/blkdev.h>\n#include <linux/delay.h>"
    ).replace(ENTRY, ENTRY + PLANTED_DELAY)
    assert slow != fsync
    shas["regression"] = commit(FSYNC_C, slow, "ext4: wait 100 ms in fsync", 6)
    doc3 = doc + "\n.. fsbench 1\n\n.. fsbench 2\n\n.. fsbench 3\n"
    shas["doc3"] = commit(DOC, doc3, "doc: last", 7)
    return shas


@pytest.fixture(scope="session")
def planted_history() -> Iterator[dict[str, str]]:
    """The planted history's commits by name; the repository at REPO, on BRANCH."""
    tarball = sourcetree.find_kernel_tarball()
    if tarball is None:
        pytest.skip("no /usr/src/linux-source-*.tar.xz (apt-get install linux-source)")
    KBUILD_CACHE.mkdir(parents=True, exist_ok=True)
    with open(KBUILD_CACHE / ".lock-test-linux", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one session at a time on this repository
        base_repo(tarball)
        try:
            yield _plant()
        finally:
            with contextlib.suppress(AssertionError):
                reset()


def builder() -> KernelBuilder:
    """fsbench's own builder of the planted history, with the minimal config: the one
    `fsbench bisect --linux REPO --config minimal` uses (same tree, config and cache)."""
    return KernelBuilder(REPO, KBUILD_CACHE, CONFIG)
