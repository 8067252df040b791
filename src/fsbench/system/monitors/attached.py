"""A trial's monitors around it: each attached to the trial's site, started just before
the timed phase and stopped just after it, then asked what it yields, and detached on
every path (a monitor that failed to attach, start or stop does not keep the others from
being stopped and detached; the first failure is what the trial reports)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from fsbench.system import monitors
from fsbench.system.metric import Folded, Metric
from fsbench.system.monitors.base import Monitor, Site


@dataclass
class Watched:
    """What a trial's monitors yielded, together."""

    samples: list[dict[str, float]] = field(default_factory=list)
    metrics: list[Metric] = field(default_factory=list)
    # Per monitor that said more than metrics and samples: its role, facts and files
    # (the trial's provenance `monitors`).
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    folded: list[Folded] = field(default_factory=list)  # the tracers' maps


class Attached:
    """The monitors of one trial, attached, in the plan's order."""

    def __init__(self, attached: Sequence[Monitor]) -> None:
        self.monitors = tuple(attached)

    @contextmanager
    def running(self) -> Iterator[None]:
        """Started in order before the body, stopped in reverse order after it, whatever
        the body did."""
        with ExitStack() as started:
            for monitor in self.monitors:
                monitor.start()
                started.callback(monitor.stop)
            yield

    def output(self, metrics: Sequence[Metric]) -> Watched:
        out = Watched()
        for monitor in self.monitors:
            said = monitor.output(metrics)
            if said.samples:
                if out.samples:
                    raise ValueError(f"monitor {monitor.name}: a second timeline in one trial")
                out.samples = said.samples
            out.metrics += said.metrics
            out.folded += said.folded
            if said.facts or said.artefacts:
                out.facts[monitor.name] = {
                    "role": str(monitor.role),
                    "facts": said.facts,
                    "artefacts": [str(p) for p in said.artefacts],
                }
        return out


@contextmanager
def attached(names: Iterable[str], site: Site, *, instrumented: bool = False) -> Iterator[Attached]:
    """The named monitors (monitors.check: known, no tracer unless `instrumented`), each a
    fresh instance attached to `site`; every one detached on the way out."""
    classes = [monitors.get(name) for name in monitors.check(names, instrumented=instrumented)]
    with ExitStack() as attachments:
        made: list[Monitor] = []
        for cls in classes:
            monitor = cls()
            # Detached even when its own attach fails half way (a child already started).
            attachments.callback(monitor.detach)
            monitor.attach(site)
            made.append(monitor)
        yield Attached(made)
