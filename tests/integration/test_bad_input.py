"""Bad input is refused before anything runs: one line on stderr (`fsbench: error: ...`),
exit 2, no run in the store, nothing made. Each case is a mistake a new user makes; each
was, before, refused only after the run started (a failed run stored, every trial failed,
or a negative size in the message) or said in a five-line box."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fsbench.store.results import Store
from tests.helpers import fsbench

pytestmark = pytest.mark.integration

TINY = ["--scale", "tiny", "--reps", "1", "--warmup", "0", "--no-report"]


def _refused(db: Path, *args: str) -> str:
    """The one line `fsbench run ARGS` is refused with; no run was stored."""
    res = fsbench("run", *args, "--db", str(db), timeout=120)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2, res.stdout + res.stderr
    assert len(lines) == 1 and lines[0].startswith("fsbench: error: "), res.stderr
    assert "Traceback" not in res.stderr
    if db.exists():
        store = Store(db)
        try:
            assert store.latest_run_id() is None, "a run was stored"
        finally:
            store.close()
    return lines[0].removeprefix("fsbench: error: ")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        pytest.skip("the preflight runs as root (a non-root run is refused before it)")
    return tmp_path / "store.db"


@pytest.mark.parametrize(
    ("kernel", "said"),
    [
        ("0.0.1", "--kernel '0.0.1': expected default, a version"),
        ("/nonexistent/bzImage", "--kernel /nonexistent/bzImage: no such file or directory"),
        ("linux-image-nosuch", "--kernel linux-image-nosuch: apt knows no package"),
    ],
)
def test_a_vm_kernel_that_cannot_be_had(db: Path, kernel: str, said: str) -> None:
    line = _refused(db, "--target", "vm", "--kernel", kernel, "--fs", "ext4", "-w", "alloc")
    assert line.startswith(said), line


def test_a_fio_job_file_that_is_not_there_or_not_a_job_file(db: Path, tmp_path: Path) -> None:
    fio = ["--fs", "ext4", "--workload", "fio", "--image-size", "1G", *TINY]
    line = _refused(db, *fio, "--set", "profile=job=/nonexistent.fio")
    assert line == "workload fio: fio job file /nonexistent.fio: No such file or directory"
    notes = tmp_path / "notes.fio"
    notes.write_text("bs=4k\nrw=write\n")
    line = _refused(db, *fio, "--set", f"profile=job={notes},seq-write")
    assert line == f"workload fio: fio job file {notes}: no job section ([name]) in the job file"
    outside = tmp_path / "outside.fio"
    outside.write_text("[w]\nrw=write\nfilename=/etc/passwd\nsize=1m\n")
    line = _refused(db, *fio, "--set", f"profile=job={outside}")
    assert "points outside the filesystem under test" in line, line


@pytest.mark.parametrize("size", ["1K", "100M"])
def test_an_image_too_small_for_any_filesystem(db: Path, size: str) -> None:
    line = _refused(db, "--image-size", size, "--fs", "ext4", "-w", "alloc", *TINY)
    assert "is too small" in line and "--image-size 1G or more" in line, line
    assert "-" not in line.split("takes")[1].split(";")[0], line  # no negative room


def test_a_store_in_a_directory_that_cannot_be_made(tmp_path: Path) -> None:
    res = fsbench("run", "--db", "/proc/no-such-dir/x.db", "--fs", "ext4", "-w", "alloc")
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert lines[0].startswith("fsbench: error: cannot make the directory of result store")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--scale", "huge"], "Invalid value for '--scale': "),
        (["--seed", "abc"], "Invalid value for '--seed': "),
        (["--trial-timeout", "soon"], "Invalid value for '--trial-timeout': "),
        (["--no-such-flag"], "No such option: --no-such-flag"),
    ],
)
def test_a_value_click_refuses_is_one_line_too(db: Path, args: list[str], said: str) -> None:
    line = _refused(db, *args)
    assert line.startswith(said) and line.endswith(" run --help)"), line


@pytest.mark.parametrize("value", ["abc", "1.5", "1 2"])
def test_a_sysctl_knob_that_is_not_the_numbers_it_holds(db: Path, value: str) -> None:
    line = _refused(db, "--knob", f"vm.dirty_ratio={value}", "--fs", "ext4", "-w", "alloc")
    assert line.startswith(f"knob vm.dirty_ratio={value}: a whole number, as "), line


def test_an_age_whose_repository_is_not_there(db: Path, tmp_path: Path) -> None:
    line = _refused(db, "--fs", "ext4", "-w", "alloc", "--age", "git-pulls:repo=/nonexistent")
    assert line == "age git-pulls: repo: /nonexistent: not a git repository"
    plain = tmp_path / "plain"
    plain.mkdir()
    line = _refused(db, "--fs", "ext4", "-w", "alloc", "--age", f"git-pulls:repo={plain}")
    assert line == f"age git-pulls: repo: {plain}: not a git repository"
