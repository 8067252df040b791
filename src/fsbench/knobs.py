"""System knobs as dimensions of the matrix: sysctls (`vm.dirty_ratio`), the target's
I/O scheduler, and `contention` (idle, or a busy machine from stress-ng). Each is set
before a trial and restored after it, on every path, and recorded with the trial."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fsbench import proc
from fsbench.errors import FsbenchError, Unsupported
from fsbench.monitors.diskstats import device_name

SYSCTL_ROOT = Path("/proc/sys")
SCHEDULERS = ("none", "mq-deadline", "bfq", "kyber")
CONTENTION = ("idle", "busy")
# The VM target's kernel, a dimension when a run has several: in force by construction (the
# guest booted it), so never set or restored here.
KERNEL = "kernel"
# Writing one of a ratio/bytes pair zeroes the other: snapshot and restore both.
_PAIRS = {
    "vm.dirty_ratio": "vm.dirty_bytes",
    "vm.dirty_bytes": "vm.dirty_ratio",
    "vm.dirty_background_ratio": "vm.dirty_background_bytes",
    "vm.dirty_background_bytes": "vm.dirty_background_ratio",
}
_SYSCTL_NAME = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_-]+)+$")


def sysctl_path(name: str) -> Path:
    return SYSCTL_ROOT / name.replace(".", "/")


def validate(name: str, value: Any) -> str:
    """A knob value as it will be written; FsbenchError (one line) if it cannot work."""
    text = str(value).strip()
    if name == "scheduler":
        if text not in SCHEDULERS:
            raise FsbenchError(f"knob scheduler={text}: expected one of {', '.join(SCHEDULERS)}")
        return text
    if name == "contention":
        if text not in CONTENTION:
            raise FsbenchError(f"knob contention={text}: expected idle or busy")
        return text
    if name == KERNEL:
        if not text or "\n" in text:
            raise FsbenchError("knob kernel: empty value")
        return text
    if not _SYSCTL_NAME.match(name):
        raise FsbenchError(
            f"unknown knob {name!r}: a sysctl (vm.dirty_ratio), scheduler or contention"
        )
    if not sysctl_path(name).exists():
        raise FsbenchError(f"knob {name}: no such sysctl ({sysctl_path(name)})")
    if not text or "\n" in text:
        raise FsbenchError(f"knob {name}: empty value")
    return text


def _read(path: Path) -> str:
    return path.read_text().strip()


def _write(path: Path, value: str) -> None:
    path.write_text(value + "\n")


@contextmanager
def applied(knobs: dict[str, str], device: str) -> Iterator[dict[str, Any]]:
    """Set sysctls and the scheduler; yield what is in force; restore on exit."""
    saved: list[tuple[Path, str]] = []
    record: dict[str, Any] = {}
    try:
        for name, value in knobs.items():
            if name in ("contention", KERNEL):
                continue
            if name == "scheduler":
                path = Path("/sys/block") / device_name(device) / "queue" / "scheduler"
                if not path.exists():
                    raise Unsupported(f"{device} has no I/O scheduler setting")
                current = re.search(r"\[([^\]]+)\]", _read(path))
                saved.append((path, current.group(1) if current else "none"))
                try:
                    _write(path, value)
                except OSError as exc:
                    raise Unsupported(
                        f"scheduler {value} refused for {device_name(device)} "
                        f"({exc.strerror}; offered: {_read(path)})"
                    ) from None
                now = re.search(r"\[([^\]]+)\]", _read(path))
                record[name] = now.group(1) if now else value
                continue
            path = sysctl_path(name)
            for related in (name, _PAIRS.get(name)):
                if related and sysctl_path(related).exists():
                    saved.append((sysctl_path(related), _read(sysctl_path(related))))
            try:
                _write(path, value)
            except OSError as exc:
                raise Unsupported(f"sysctl {name}={value} refused: {exc.strerror}") from None
            record[name] = _read(path)
        yield record
    finally:
        # Reverse order; a zero of a ratio/bytes pair is written first so that the
        # non-zero one, written last, is the one in force (as it was before).
        newest_first = saved[::-1]  # the first snapshot of a sysctl is its original value
        for path, old in sorted(newest_first, key=lambda item: item[1] != "0"):
            try:
                _write(path, old)
            except OSError:
                pass


@contextmanager
def contention(kind: str, scratch_dir: Path) -> Iterator[dict[str, Any]]:
    """`busy`: a busy desktop beside the trial (stress-ng: CPU, memory and I/O on the
    host's own disk, not the target), stopped afterwards; `idle`: nothing."""
    if kind != "busy":
        yield {"contention": kind}
        return
    if proc.which("stress-ng") is None:
        raise Unsupported("contention=busy needs stress-ng: apt-get install stress-ng")
    scratch_dir.mkdir(parents=True, exist_ok=True)
    cpus = max(1, (os.cpu_count() or 2) // 2)
    argv = [
        "stress-ng",
        "--cpu",
        str(cpus),
        "--cpu-load",
        "60",
        "--vm",
        "1",
        "--vm-bytes",
        "256M",
        "--hdd",
        "1",
        "--hdd-bytes",
        "128M",
        "--temp-path",
        str(scratch_dir),
        "--timeout",
        "0",
        "--quiet",
    ]
    child = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        yield {"contention": kind, "load": " ".join(argv[1:-3])}
    finally:
        try:
            os.killpg(child.pid, signal.SIGTERM)
            child.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            child.wait()
