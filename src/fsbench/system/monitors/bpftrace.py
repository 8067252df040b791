"""What every bpftrace tracer shares: its script written from the trial's site, bpftrace
started when the tracer is attached (compiling a script takes seconds: before the clock,
while the caches are settled) and counting only between `start` and `stop`.

The window is opened and closed by two markers: `kill(MARK, 0)` from fsbench for a pid
that cannot exist (above the kernel's pid limit: ESRCH, nothing happens), which the
script watches on `syscalls:sys_enter_kill` and turns its `@on` flag with. A probe counts
only while `@on`; the maps are printed (`-f json`) when bpftrace is interrupted after
`stop`, read back by bpfout.py. Aggregation happens in the kernel: what crosses to
userspace is the maps at the end, and the 10 Hz lines of a timeline.

A tracer writes its script (`probes`), names its internal maps (`scratch`: cleared at the
end, never printed) and reads what bpftrace printed (`yields`). The script and everything
bpftrace printed are kept as artefact files of the trial.
"""

from __future__ import annotations

import os
import random
import re
import time
from abc import abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import IO, ClassVar

from fsbench.system import mounts, proc
from fsbench.system.errors import TrialFailed
from fsbench.system.metric import Metric
from fsbench.system.monitors import bpfout, tracefs
from fsbench.system.monitors.base import Child, Monitor, Needs, Output, Role, Site
from fsbench.system.proc import Tool

BPFTRACE = Tool("bpftrace", "bpftrace")
# Above PID_MAX_LIMIT (4M): no process has it, so kill(MARK, 0) fails and does nothing.
MARK_BASE = 0x40000000
# How long bpftrace may take to compile and attach (seconds), and to detach and print its
# maps (symbolizing every kernel stack: minutes on a loaded machine of 2 CPUs).
READY_TIMEOUT = 120.0
EXIT_GRACE = 300.0
# How long a bpftrace that has printed nothing since its SIGINT may sleep waiting for
# events before it is asked again (seconds).
ASK_AGAIN = 5.0
# Maps every script keeps for itself.
WINDOW = ("on", "t0")
# What a script prints once every probe of it is attached (bpftrace runs BEGIN then).
READY = "fsbench: ready"
# The bpftrace tracers attached in this process: the first to start waits for all of them,
# so that their windows open together.
_live: list[BpftraceTracer] = []


def version() -> str:
    """bpftrace's version ("v0.17.0"), or "" when it is not installed."""
    found = proc.tool_version(["bpftrace", "--version"]) or ""
    return found.removeprefix("bpftrace").strip()


def fstype(mountpoint: Path | None) -> str:
    """The type of the filesystem mounted there ("" on the bare device)."""
    if mountpoint is None:
        return ""
    for entry in mounts.parse(mounts.MOUNTINFO.read_text()):
        if Path(entry.mountpoint) == mountpoint:
            return entry.fstype
    return ""


def workload_filter(cgroup: Path) -> str:
    """A predicate true in the context of the workload's own threads: its cgroup's, but
    not fsbench's helper threads (the sampler's), only fsbench's main one."""
    me = os.getpid()
    return f'(cgroup == cgroupid("{cgroup}") && (pid != {me} || tid == {me}))'


# The kernel types of the journal tracepoints of a filesystem built as a module (Debian's
# kernels, the VM target's guest): bpftrace 0.17 reads such a tracepoint's fields from its
# format file, and these typedefs are not in vmlinux's BTF ("unknown type name 'tid_t'").
# Defined as the kernel defines them; where BTF has them, nothing reads these.
MODULE_TYPES = "#define tid_t unsigned int\n#define xfs_lsn_t long long\n"


class BpftraceTracer(Monitor):
    role = Role.TRACER
    needs = Needs(tools=(BPFTRACE,), root=True, tracefs=True)
    # The script's own version: what a stored explanation says it was measured with.
    revision: ClassVar[int] = 1
    # Maps the script uses for itself: cleared at the end, never printed.
    scratch: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        super().__init__()
        self.child: Child | None = None
        self.held = False
        self.mark = MARK_BASE + 2 * random.randrange(1 << 28)
        self.printed = bpfout.Printed()
        self.log: Path | None = None
        self._out: IO[bytes] | None = None
        self.deadline = 0.0
        self.opened = self.closed = False  # its window

    @abstractmethod
    def probes(self, site: Site) -> str:
        """The script's probes; each counts only while `@on`."""

    @abstractmethod
    def yields(self, site: Site, printed: bpfout.Printed, metrics: Sequence[Metric]) -> Output:
        """What the tracer yields from what bpftrace printed."""

    def script(self, site: Site) -> str:
        me = os.getpid()
        window = (
            f'BEGIN {{ printf("{READY}\\n"); }}\n'
            f"tracepoint:syscalls:sys_enter_kill /pid == {me} && args->sig == 0 && "
            f"args->pid == {self.mark}/ {{ @on = 1; @t0 = nsecs; }}\n"
            f"tracepoint:syscalls:sys_enter_kill /pid == {me} && args->sig == 0 && "
            f"args->pid == {self.mark + 1}/ {{ @on = 0; @window_ns = nsecs - @t0; }}\n"
        )
        probes = self.probes(site)
        # Only maps the script uses: bpftrace refuses to clear one it never defined (a
        # journal's scratch map on a filesystem without that journal).
        used = [n for n in (*WINDOW, *self.scratch) if re.search(rf"@{n}\b", probes + window)]
        end = "".join(f" clear(@{name});" for name in used)
        return f"{MODULE_TYPES}{window}{probes}\nEND {{{end} }}\n"

    def attach(self, site: Site) -> None:
        super().attach(site)
        tracefs.acquire()
        self.held = True
        path = site.artefact(self.name, "script.bt")
        path.write_text(self.script(site))
        self.log = site.artefact(self.name, "bpftrace.json")
        self._out = open(self.log, "wb")  # noqa: SIM115 - the child writes it until detach
        self.deadline = time.monotonic() + READY_TIMEOUT
        self.child = Child(["bpftrace", "-f", "json", str(path)], self._out)
        _live.append(self)

    def _lines(self) -> list[str]:
        if self.log is None:
            return []
        return self.log.read_text(errors="replace").splitlines()

    def ready(self) -> bool:
        """Whether bpftrace has attached every probe (TrialFailed if it never will)."""
        assert self.child is not None, "attach first"
        said = bpfout.parse(self._lines())
        if READY in said.printed:
            return True
        if self.child.process.poll() is not None or time.monotonic() > self.deadline:
            raise TrialFailed(
                f"tracer {self.name}: bpftrace did not start: {' '.join(said.messages[-3:])}"
            )
        return False

    def start(self) -> None:
        """Once every bpftrace tracer of the trial has attached its probes, their windows
        open together (the first to start opens them all)."""
        while True:
            ready = [t.ready() for t in _live]  # each: one that failed says so
            if all(ready):
                break
            time.sleep(0.05)
        for tracer in _live:
            if not tracer.opened:
                _mark(tracer.mark)
                tracer.opened = True

    def stop(self) -> None:
        """Every window closes together (the first to stop closes them all); bpftrace
        prints its maps and exits."""
        if self.child is None:
            return
        for tracer in [*_live, self]:
            if tracer.opened and not tracer.closed:
                _mark(tracer.mark + 1)
                tracer.closed = True
        code = self._finish()
        self.printed = bpfout.parse(self._lines())
        if code is None:
            said = " ".join(self.printed.messages[-3:])
            raise TrialFailed(
                f"tracer {self.name}: bpftrace did not print its maps in {EXIT_GRACE:.0f} s"
                f" ({waiting(self.child.pid)})" + (f": {said}" if said else "")
            )

    def _finish(self) -> int | None:
        """SIGINT, then up to EXIT_GRACE for bpftrace to print its maps and exit; its exit
        code, or None. One still waiting for events with nothing printed ASK_AGAIN seconds
        later missed the signal and is asked again: under load the offcpu script (which
        sends no events) slept in epoll_wait through the whole grace, twice."""
        assert self.child is not None and self.log is not None
        deadline = time.monotonic() + EXIT_GRACE
        before = self.log.stat().st_size
        code = self.child.interrupt(grace=ASK_AGAIN)
        while code is None and time.monotonic() < deadline:
            asleep = "do_epoll_wait" in waiting(self.child.pid)
            if asleep and self.log.stat().st_size == before:
                code = self.child.interrupt(grace=ASK_AGAIN)
            else:  # printing its maps: symbolizing stacks takes a while under load
                code = self.child.wait(ASK_AGAIN)
        return code

    def output(self, metrics: Sequence[Metric]) -> Output:
        assert self.site is not None
        said = self.yields(self.site, self.printed, metrics)
        said.facts = {
            "bpftrace": version(),
            "revision": self.revision,
            "window_s": self.printed.value("window_ns") / 1e9,
            "lost_events": self.printed.lost,
            **said.facts,
        }
        said.artefacts += [p for p in (self.log,) if p is not None]
        return said

    def detach(self) -> None:
        if self in _live:
            _live.remove(self)
        try:
            if self.child is not None:
                self.child.close()
            if self._out is not None:
                self._out.close()
        finally:
            if self.held:
                self.held = False
                tracefs.release()


def waiting(pid: int) -> str:
    """A process's state as the kernel says (D: asleep in the kernel, uninterruptible),
    and where it sleeps when the kernel tells (wchan; 0 here): what a bpftrace that never
    exits was doing, for the trial's failure."""
    proc_dir = Path(f"/proc/{pid}")
    try:
        state = (proc_dir / "stat").read_text().rsplit(")", 1)[1].split()[0]
        wchan = (proc_dir / "wchan").read_text().strip()
    except (OSError, IndexError):
        return "gone"
    return f"state {state}" + (f", in {wchan}" if wchan not in ("", "0") else "")


def _mark(pid: int) -> None:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        pass
