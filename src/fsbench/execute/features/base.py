"""The probe contract and the scratch filesystem a probe works on.

A probe is one small module: the features (rows) it answers, how its filesystem must be
made (`Setup`), and `run(scratch) -> {feature name: Result}` (raising NotApplicable when
the question does not apply to this filesystem: every feature of the probe is then n/a).
Probes whose setups share a key share one freshly made filesystem; a `managed` probe gets
a bare scratch device and makes (and remakes) its own filesystems.

What differs between filesystems (which tool resizes, which mount option compresses) is
data in the probe module, keyed by `family(fs)`; nothing branches on a name.
"""

from __future__ import annotations

import errno
import os
import re
import shlex
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from fsbench.execute.targets.loop import LoopImage
from fsbench.store.features import Feature, Result, Support
from fsbench.system import fsops, proc
from fsbench.system.errors import FsbenchError, Unsupported
from fsbench.system.filesystems import FsType

T = TypeVar("T")
GiB = 1 << 30
MiB = 1 << 20

# Tools shared by a family of filesystem types (mkfs.ext2/3/4 are all e2fsprogs).
_FAMILY_BY_PACKAGE = {"e2fsprogs": "ext"}


def family(fs: FsType) -> str:
    return _FAMILY_BY_PACKAGE.get(fs.package, fs.name)


@dataclass(frozen=True)
class Settings:
    """Sizes and limits of one features run (tests make the inode fill smaller)."""

    fs_size: int = GiB  # the scratch image of most probes
    inode_fs_size: int = GiB  # the filesystem the inode probe fills
    inode_cap: int = 2_000_000  # stop filling after this many files (and say so)
    inode_seconds: float = 150.0  # ... or after this long (and say so)
    workers: int = 2  # filesystems probed at once (probes state facts, not timings)


class NotApplicable(Exception):
    """The probe's question does not apply to this filesystem (no recipe known for it, no
    such tool): every feature it answers is n/a, with this note."""


def known_for(table: Mapping[str, T], s: Scratch, what: str, hint: str = "") -> T:
    """The probe's data for this filesystem's family, or NotApplicable ("no `what` known
    for xfs", and the hint)."""
    found = table.get(s.family)
    if not found:
        raise NotApplicable(f"no {what} known for {s.fs.name}{hint}")
    return found


class Cancelled(BaseException):
    """Ctrl-C or SIGTERM in the main thread: a worker stops at its next check."""


@dataclass(frozen=True)
class Setup:
    key: str = "shared"  # probes with equal keys share one fresh filesystem
    mkfs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # family -> options
    mount: Mapping[str, str] = field(default_factory=dict)  # family -> mount options
    managed: bool = False  # the probe makes its own filesystems on the bare device
    size: Callable[[Settings], int] = lambda s: s.fs_size
    refused: Support = "error"  # what a refused mkfs/mount means for the probe's rows


ProbeRun = Callable[["Scratch"], dict[str, Result]]


@dataclass(frozen=True)
class Probe:
    name: str
    features: tuple[Feature, ...]
    run: ProbeRun
    setup: Setup = field(default_factory=Setup)


# --- evidence -----------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")


def trim(text: str, lines: int = 8, width: int = 160) -> str:
    """Tool output short enough for a table cell's evidence: first and last lines kept,
    terminal escapes (e4defrag's progress) removed."""
    rows = [r.rstrip()[:width] for r in _ANSI.sub("", text).splitlines() if r.strip()]
    if len(rows) > lines:
        head = lines // 2
        tail = lines - head - 1
        rows = [*rows[:head], f"... ({len(rows) - head - tail} lines omitted)", *rows[-tail:]]
    return "\n".join(rows)


class Evidence:
    """What a probe did and what it saw, in order: commands with their trimmed output."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def say(self, text: str) -> None:
        self.lines.append(text)

    def command(self, res: proc.Result) -> None:
        out = trim(res.output)
        status = "" if res.ok else f" [exit {res.returncode}]"
        self.lines.append(f"$ {shlex.join(res.argv)}{status}" + (f"\n{out}" if out else ""))

    def result(
        self,
        supported: Support,
        value: int | float | str | None = None,
        unit: str = "",
        note: str = "",
    ) -> Result:
        return Result(
            supported=supported, value=value, unit=unit, evidence=list(self.lines), note=note
        )


def first_line(text: str, default: str = "") -> str:
    for line in _ANSI.sub("", text).splitlines():
        if line.strip():
            return line.strip()
    return default


_COMPLAINT = re.compile(
    r"error|fail|not |cannot|can't|couldn't|could not|unable|invalid|refus|unsupported|"
    r"unknown|unrecogni|denied|too large|too small",
    re.I,
)


def complaint(res: proc.Result) -> str:
    """The line of a failed tool's output that says why: the first stderr line that
    complains, else the first line at all (xfs_growfs prints its geometry before the
    error)."""
    for text in (res.stderr, res.stdout):
        for line in _ANSI.sub("", text).splitlines():
            if _COMPLAINT.search(line):
                return line.strip()
    return first_line(res.output, f"exit {res.returncode}")


# capability(7) numbers of the capabilities a probe may be refused for.
CAPABILITIES = {"CAP_SYS_RESOURCE": 24, "CAP_SYS_ADMIN": 21}


def lacks_capability(name: str, status: Path = Path("/proc/self/status")) -> bool:
    """True if this process runs without `name` (a container's bounding set)."""
    try:
        for line in status.read_text().splitlines():
            if line.startswith("CapEff:"):
                return not (int(line.split()[1], 16) >> CAPABILITIES[name]) & 1
    except (OSError, ValueError, IndexError):
        pass
    return False


def own_kernel_lines(detail: str, device: str) -> str:
    """fsops' refusal detail with only the kernel lines that name this device."""
    name = re.escape(os.path.basename(device))
    out = []
    for line in detail.splitlines():
        if line.startswith("kernel: "):
            parts = line.removeprefix("kernel: ").split(" | ")
            mine = [p for p in parts if re.search(rf"\b{name}\b", p)]
            if mine:
                out.append("kernel: " + " | ".join(mine))
        else:
            out.append(line)
    return "\n".join(out)


def os_error(exc: OSError) -> str:
    name = errno.errorcode.get(exc.errno or 0, str(exc.errno))
    return f"{name} ({exc.strerror})"


# --- the scratch filesystem ---------------------------------------------------------------


class Scratch:
    """One loop image of one filesystem type, owned by one worker. `mkfs`/`mount` raise
    `errors.Unsupported` with the tool's and the kernel's words."""

    def __init__(
        self,
        fs: FsType,
        target: LoopImage,
        mnt: Path,
        settings: Settings,
        cancel: threading.Event,
    ) -> None:
        self.fs = fs
        self.family = family(fs)
        self.target = target
        self.mnt = mnt
        self.settings = settings
        self.cancelled = cancel
        self._image_size = target.size_bytes

    @property
    def device(self) -> str:
        return self.target.device

    @property
    def image(self) -> Path:
        image = self.target.image
        if image is None:
            raise FsbenchError("scratch image is not open")
        return image

    @property
    def image_size(self) -> int:
        return self._image_size

    @property
    def mounted(self) -> bool:
        return fsops.is_mounted(self.mnt)

    def check(self) -> None:
        """Stop here if the run was interrupted."""
        if self.cancelled.is_set():
            raise Cancelled()

    def mkfs(self, options: Sequence[str] = (), ev: Evidence | None = None) -> fsops.Made:
        self.check()
        if self.mounted:
            self.umount()
        try:
            made = fsops.mkfs(self.fs, list(options), self.device, timeout=300)
        except Unsupported as exc:
            raise self._refusal("mkfs refused", exc, ev) from None
        if ev is not None:
            out = trim(made.output, lines=4)
            ev.say(f"$ {shlex.join(made.argv)}" + (f"\n{out}" if out else ""))
        return made

    def mount(self, options: str = "", ev: Evidence | None = None) -> None:
        self.check()
        try:
            made = fsops.mount(self.fs, self.device, self.mnt, options)
        except Unsupported as exc:
            raise self._refusal("mount refused", exc, ev) from None
        if ev is not None:
            ev.say(f"$ {shlex.join(made.argv)}")

    def _refusal(self, what: str, exc: Unsupported, ev: Evidence | None) -> Unsupported:
        """The refusal in the kernel's words about *this* device (other workers' devices
        talk at the same time), else the tool's complaining line."""
        detail = own_kernel_lines(exc.detail, self.device)
        kernel = [ln for ln in detail.splitlines() if ln.startswith("kernel: ")]
        said = ""
        if kernel:
            parts = kernel[0].removeprefix("kernel: ").split(" | ")
            said = next((p for p in parts if _COMPLAINT.search(p)), parts[-1])
        if not said:
            tool = "\n".join(ln for ln in detail.splitlines()[1:] if not ln.startswith("kernel: "))
            said = next(
                (ln.strip() for ln in tool.splitlines() if _COMPLAINT.search(ln)),
                first_line(tool, exc.message),
            )
        if ev is not None:
            ev.say(trim(detail, lines=6) or exc.message)
        return Unsupported(f"{what}: {said}", detail=detail)

    def umount(self) -> None:
        if self.mounted:
            fsops.umount(self.mnt)

    def run(
        self, argv: Sequence[str], ev: Evidence | None = None, timeout: float = 120
    ) -> proc.Result:
        self.check()
        res = proc.run(list(argv), timeout=timeout)
        if ev is not None:
            ev.command(res)
        return res

    def expand(self, template: Sequence[str], **extra: str) -> list[str]:
        """argv from a template: {dev}, {mnt} and the caller's keys are filled in."""
        values = {"dev": self.device, "mnt": str(self.mnt), **extra}
        return [arg.format(**values) for arg in template]

    def resize_image(self, size: int, ev: Evidence | None = None) -> bool:
        """Make the image file `size` bytes and tell the loop device (losetup -c)."""
        self.check()
        os.truncate(self.image, size)
        self._image_size = size
        if ev is not None:
            ev.say(f"image file resized to {size} bytes ({size // MiB} MiB)")
        return self.run(["losetup", "-c", self.device], ev, timeout=60).ok

    def workdir(self, name: str) -> Path:
        """A fresh directory on the mounted filesystem for one probe."""
        path = self.mnt / name
        path.mkdir(exist_ok=True)
        return path
