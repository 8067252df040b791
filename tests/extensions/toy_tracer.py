"""A toy tracer, whole in this one file: its "tracing tool" is `sleep`, started when it is
attached (as bpftrace would be: slow to start, so before the clock) and ended when it is
detached, however the trial ended. A tracer runs only in an instrumented pass, never
beside counted trials. `started` keeps the pid of every child it made and `alive_at_detach`
whether it still ran when detach came, for the tests that check that none outlives its
trial."""

from __future__ import annotations

from typing import ClassVar

from fsbench.system.monitors import register
from fsbench.system.monitors.base import Child, Monitor, Needs, Role, Site
from fsbench.system.proc import Tool


@register
class Sleeper(Monitor):
    name = "sleeper"
    summary = "a child process standing in for a tracing tool (sleep 600)"
    role = Role.TRACER
    needs = Needs(tools=(Tool("sleep", "coreutils"),))
    started: ClassVar[list[int]] = []
    alive_at_detach: ClassVar[list[bool]] = []

    def __init__(self) -> None:
        super().__init__()
        self.child: Child | None = None

    def attach(self, site: Site) -> None:
        super().attach(site)
        self.child = Child(["sleep", "600"])
        Sleeper.started.append(self.child.pid)

    def start(self) -> None:
        if self.child is None or self.child.process.poll() is not None:
            raise RuntimeError("the tracing tool died before the timed phase")

    def stop(self) -> None:
        pass  # a real tool is asked for what it counted here: Child.interrupt

    def detach(self) -> None:
        if self.child is not None:  # None: attach failed before it started one
            Sleeper.alive_at_detach.append(self.child.process.poll() is None)
            self.child.close()
