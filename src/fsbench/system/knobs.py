"""System knobs as dimensions of the matrix: sysctls (`vm.dirty_ratio`), the target's
I/O scheduler, and `contention` (idle, or a busy machine from stress-ng). Each is set
before a trial and restored after it, on every path, and recorded with the trial.

Before a knob is changed, its original value is written down (fsynced) in a journal,
`WORKDIR/knobs-<pid>.json`, removed once everything is restored. A run that was killed
leaves its journal behind, and the next `fsbench run` or `fsbench doctor` restores what it
holds once process <pid> is gone (targets/stale.py), as for its images and mounts."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsbench.system.errors import FsbenchError, TrialFailed, Unsupported
from fsbench.system.monitors.diskstats import device_name
from fsbench.system.units import format_size, parse_size

SYSCTL_ROOT = Path("/proc/sys")
SCHEDULERS = ("none", "mq-deadline", "bfq", "kyber")
CONTENTION = ("idle", "busy")
# The VM target's kernel, a dimension when a run has several: in force by construction (the
# guest booted it), so never set or restored here.
KERNEL = "kernel"
# The memory (page cache included) a workload may use: `none`, or a size (memcap.py).
MEM = "mem"
MEM_MIN = 64 << 20
# Writing one of a ratio/bytes pair zeroes the other: snapshot and restore both.
_PAIRS = {
    "vm.dirty_ratio": "vm.dirty_bytes",
    "vm.dirty_bytes": "vm.dirty_ratio",
    "vm.dirty_background_ratio": "vm.dirty_background_bytes",
    "vm.dirty_background_bytes": "vm.dirty_background_ratio",
}
_SYSCTL_NAME = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_-]+)+$")
_SYSCTL_INT = re.compile(r"-?(0[xX][0-9a-fA-F]+|\d+)")


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
    if name == MEM:  # a memory cgroup around each step (memcap.py), set by the runner
        if text == "none":
            return text
        try:
            size = parse_size(text)
        except ValueError as exc:
            raise FsbenchError(f"knob mem={text}: {exc}") from None
        if size < MEM_MIN:
            raise FsbenchError(f"knob mem={text}: at least {format_size(MEM_MIN)}")
        return format_size(size)
    if not _SYSCTL_NAME.match(name):
        raise FsbenchError(
            f"unknown knob {name!r}: a sysctl (vm.dirty_ratio), scheduler, contention, mem or age"
        )
    if not sysctl_path(name).exists():
        raise FsbenchError(f"knob {name}: no such sysctl ({sysctl_path(name)})")
    if not text or "\n" in text:
        raise FsbenchError(f"knob {name}: empty value")
    _numbers_as_now(name, text)
    return text


def _numbers_as_now(name: str, text: str) -> None:
    """A sysctl that holds numbers takes numbers, as many as it holds: refused here, once,
    rather than by the kernel in every trial."""
    try:
        now = _read(sysctl_path(name)).split()
    except OSError:
        return
    if now and all(_SYSCTL_INT.fullmatch(v) for v in now):
        given = text.split()
        if len(given) != len(now) or not all(_SYSCTL_INT.fullmatch(v) for v in given):
            shape = "a whole number" if len(now) == 1 else f"{len(now)} whole numbers"
            raise FsbenchError(
                f"knob {name}={text}: {shape}, as {sysctl_path(name)} holds ({' '.join(now)})"
            )


def _read(path: Path) -> str:
    return path.read_text().strip()


def _write(path: Path, value: str) -> None:
    path.write_text(value + "\n")


# -- the journal: what a run changed, written down before it changes it ------------------

JOURNAL_RE = re.compile(r"^knobs-(\d+)\.json$")
_SCHEDULER_PATH = re.compile(r"^/sys/block/[^/]+/queue/scheduler$")


def journal_path(directory: Path, pid: int | None = None) -> Path:
    """`DIR/knobs-<pid>.json`: the knobs process <pid> changed and has not restored yet.
    Found by name, like the images and mount points of a run (targets/stale.py)."""
    return Path(directory) / f"knobs-{os.getpid() if pid is None else pid}.json"


def _is_knob_path(path: Path) -> bool:
    """Only a sysctl or a block device's scheduler is ever written back from a journal."""
    text = str(path)
    if text != os.path.normpath(text):  # no "..", no "//"
        return False
    return bool(_SCHEDULER_PATH.match(text)) or text.startswith(f"{SYSCTL_ROOT}/")


@dataclass
class Saved:
    name: str  # "vm.dirty_ratio", "scheduler of loop0"
    path: Path
    original: str


class Journal:
    """The original value of every knob changed and not restored yet, in a file that is
    written and fsynced before each change, and removed once everything is restored. A
    journal left by a killed run is restored by the next `fsbench run` or `doctor`."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        # What this process left unrestored earlier (a failed restore): the value in force
        # now is not the original, the one written down then is.
        self.entries: list[Saved] = load(self.path) if self.path.exists() else []

    def remember(self, name: str, path: Path, original: str) -> None:
        if any(e.path == path for e in self.entries):
            return  # the first value written down is the original
        self.entries.append(Saved(name, path, original))
        self._save()

    def restore(self) -> list[str]:
        """Write every original back; what could not be restored stays in the journal.
        Returns one line per failure ("vm.dirty_ratio=20: Permission denied")."""
        outcomes = restore_saved(self.entries)
        self.entries = [e for e, err in outcomes if err is not None and _is_knob_path(e.path)]
        errors = [f"{e.name}={e.original}: {err}" for e, err in outcomes if err is not None]
        try:
            self._save()
        except OSError as exc:
            errors.append(f"knob journal {self.path}: {exc.strerror}")
        return errors

    def _save(self) -> None:
        if not self.entries:
            self.path.unlink(missing_ok=True)
            return
        doc = {
            "pid": os.getpid(),
            "knobs": [
                {"name": e.name, "path": str(e.path), "original": e.original} for e in self.entries
            ],
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        with open(tmp, "w") as f:
            f.write(json.dumps(doc, indent=1) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        fd = os.open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)  # the rename itself survives a crash
        finally:
            os.close(fd)


def load(path: Path) -> list[Saved]:
    """The entries of a journal file; an unreadable one is empty (nothing to restore)."""
    try:
        doc = json.loads(Path(path).read_text())
        return [
            Saved(str(k["name"]), Path(str(k["path"])), str(k["original"]))
            for k in doc.get("knobs", [])
        ]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []


def restore_saved(entries: list[Saved]) -> list[tuple[Saved, str | None]]:
    """Write back the originals; each entry with None (restored, or its device is gone)
    or the error. A path that is not a knob's is never written.

    The newest change is undone first, and a zero after the rest: of a ratio/bytes pair
    only the non-zero one is written, and the kernel zeroes its partner (writing 0 to
    `vm.dirty_bytes` is refused). A value already in force is not written again."""
    outcomes: list[tuple[Saved, str | None]] = []
    newest_first = entries[::-1]
    for entry in sorted(newest_first, key=lambda e: e.original == "0"):
        if not _is_knob_path(entry.path):
            outcomes.append((entry, f"{entry.path} is not a sysctl or a scheduler: ignored"))
            continue
        try:
            if _in_force(entry.path) == entry.original:
                outcomes.append((entry, None))
                continue
            _write(entry.path, entry.original)
        except FileNotFoundError:
            outcomes.append((entry, None))  # the device is gone, and its setting with it
            continue
        except OSError as exc:
            outcomes.append((entry, exc.strerror or str(exc)))
            continue
        outcomes.append((entry, None))
    return outcomes


def _in_force(path: Path) -> str:
    """A sysctl's value, or the scheduler in brackets ("none [mq-deadline]")."""
    text = _read(path)
    chosen = re.search(r"\[([^\]]+)\]", text)
    return chosen.group(1) if chosen else text


def restore_journal(path: Path, why: str) -> list[str]:
    """Restore what a journal file holds (a dead run's): one line per knob, failures
    starting with 'could not'. The file goes once nothing in it is left to restore."""
    lines: list[str] = []
    left = False
    for entry, err in restore_saved(load(path)):
        if err is None:
            lines.append(f"restored {entry.name}={entry.original} ({why})")
        else:
            lines.append(f"could not restore {entry.name}={entry.original} ({why}): {err}")
            left = left or _is_knob_path(entry.path)
    if left:
        return lines
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        lines.append(f"could not delete {path}: {exc.strerror}")
    return lines


# -- applying knobs around a trial -----------------------------------------------------


@dataclass
class Applied:
    """What `applied` set (as the kernel reports it), and after it exits, what it could
    not restore (empty when everything is back)."""

    in_force: dict[str, str] = field(default_factory=dict)
    not_restored: list[str] = field(default_factory=list)


@contextmanager
def applied(knobs: dict[str, str], device: str, journal: Path) -> Iterator[Applied]:
    """Set sysctls and the scheduler, each written down in `journal` first; yield what is
    in force; restore on exit, on every path. A restore that fails is in `not_restored`
    (and stays in the journal for the next run or `fsbench doctor`)."""
    book = Journal(journal)
    result = Applied()
    try:
        for name, value in knobs.items():
            if name != "scheduler" and not _SYSCTL_NAME.match(name):
                # Made elsewhere: contention, kernel and mem by the runner, the filesystem's
                # age by workloads/aging (plans validate it there). Never set here.
                continue
            if name == "scheduler":
                path = Path("/sys/block") / device_name(device) / "queue" / "scheduler"
                if not path.exists():
                    raise Unsupported(f"{device} has no I/O scheduler setting")
                current = re.search(r"\[([^\]]+)\]", _read(path))
                _remember(book, f"scheduler of {device_name(device)}", path, current)
                try:
                    _write(path, value)
                except OSError as exc:
                    raise Unsupported(
                        f"scheduler {value} refused for {device_name(device)} "
                        f"({exc.strerror}; offered: {_read(path)})"
                    ) from None
                now = re.search(r"\[([^\]]+)\]", _read(path))
                result.in_force[name] = now.group(1) if now else value
                continue
            path = sysctl_path(name)
            for related in (name, _PAIRS.get(name)):
                if related and sysctl_path(related).exists():
                    _remember(book, related, sysctl_path(related), _read(sysctl_path(related)))
            try:
                _write(path, value)
            except OSError as exc:
                raise Unsupported(f"sysctl {name}={value} refused: {exc.strerror}") from None
            result.in_force[name] = _read(path)
        yield result
    finally:
        result.not_restored = book.restore()


def _remember(book: Journal, name: str, path: Path, original: re.Match[str] | str | None) -> None:
    if isinstance(original, re.Match):
        original = original.group(1)
    try:
        book.remember(name, path, original if original is not None else "none")
    except OSError as exc:  # never change what could not be written down
        raise TrialFailed(
            f"cannot write the knob journal {book.path}: {exc.strerror}; {name} left as it is"
        ) from None
