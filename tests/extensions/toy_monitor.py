"""A toy monitor, whole in this one file: the pages the kernel dirtied and wrote back
while a trial's timed phase ran (/proc/vmstat's nr_dirtied and nr_written, machine-wide),
read when the phase starts and when it stops. Registering it is all fsbench needs: a plan
names it (`monitors = ["sampler", "page-writes"]`), the runner attaches it around every
trial, the store keeps what it yields with the trial, and the reports show its metrics
beside the sampler's."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fsbench.system.metric import Better, Metric
from fsbench.system.monitors import register
from fsbench.system.monitors.base import Monitor, Output

VMSTAT = Path("/proc/vmstat")
COUNTERS = ("nr_dirtied", "nr_written")


def _read() -> dict[str, int]:
    pairs = (line.split() for line in VMSTAT.read_text().splitlines())
    return {name: int(value) for name, value in pairs if name in COUNTERS}


@register
class PageWrites(Monitor):
    name = "page-writes"
    summary = "pages dirtied and written back while the timed phase ran (/proc/vmstat)"

    def __init__(self) -> None:
        super().__init__()
        self.before: dict[str, int] = {}
        self.after: dict[str, int] = {}

    def start(self) -> None:
        self.before = _read()

    def stop(self) -> None:
        self.after = _read()

    def output(self, metrics: Sequence[Metric]) -> Output:
        assert self.site is not None
        grew = {name: self.after[name] - self.before[name] for name in COUNTERS}
        log = self.site.artefact(self.name, "vmstat.txt")
        log.write_text("".join(f"{name} +{n}\n" for name, n in grew.items()))
        return Output(
            metrics=[
                Metric("pages_dirtied", grew["nr_dirtied"], "pages", Better.LOWER, 1),
                Metric("pages_written", grew["nr_written"], "pages", Better.LOWER, 1),
            ],
            facts={"before": self.before, "after": self.after},
            artefacts=[log],
        )
