"""tracefs is mounted while any fsbench process traces and left as found: the first run to
finish does not unmount it under another's bpftrace (two explain passes on two devices at
once: the second's tracers failed with "Could not read symbols from
/sys/kernel/tracing/available_events"). Real mounts of tracefs, at a mountpoint of the
test's own, and a second real process."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fsbench.system.monitors import tracefs

# A second fsbench process: holds tracefs at argv[1] until told to let go.
OTHER = """
import sys
from pathlib import Path
from fsbench.system.monitors import tracefs
where = Path(sys.argv[1])
tracefs.acquire(where)
print("held", flush=True)
sys.stdin.readline()
tracefs.release(where)
print("released", flush=True)
"""


@pytest.fixture
def where(tmp_path: Path) -> Iterator[Path]:
    point = tmp_path / "tracing"
    point.mkdir()
    try:
        yield point
    finally:
        for _ in range(3):  # on every path, however the test ended (mounted twice at most)
            if tracefs.is_mounted(point):
                subprocess.run(["umount", "-l", str(point)], check=False)
        for left in tracefs.files_of(point):
            left.unlink(missing_ok=True)


def _other(where: Path) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", OTHER, str(where)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "held"
    return child


def _let_go(child: subprocess.Popen[str]) -> None:
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write("\n")
    child.stdin.flush()
    assert child.stdout.readline().strip() == "released"
    assert child.wait(timeout=30) == 0


def test_the_last_process_to_let_go_unmounts_it_not_the_first(where: Path) -> None:
    other = _other(where)  # mounts it: it was not mounted
    try:
        assert tracefs.is_mounted(where)
        tracefs.acquire(where)
        tracefs.acquire(where)  # two tracers of this process
        _let_go(other)  # the one that mounted it finishes first
        assert tracefs.is_mounted(where) and tracefs.has_event("block", "block_rq_issue", where)
        tracefs.release(where)
        assert tracefs.is_mounted(where)  # one tracer of this process still holds it
        tracefs.release(where)
        assert not tracefs.is_mounted(where)  # the machine's last user: as found
    finally:
        other.kill()
        other.wait()


def test_a_tracefs_mounted_before_stays_mounted(where: Path) -> None:
    subprocess.run(["mount", "-t", "tracefs", "nodev", str(where)], check=True)
    other = _other(where)
    try:
        tracefs.acquire(where)
        _let_go(other)
        tracefs.release(where)
        assert tracefs.is_mounted(where)  # not fsbench's to unmount
    finally:
        other.kill()
        other.wait()
