"""The fleet target kind: every host of an Ansible inventory runs the whole plan on its own
loop image or disk (registered as an entry point of `fsbench.targets`; its executor is
fleet/executor.py, its command `fsbench fleet run`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from fsbench.plan.targets import DEFAULT_WORKDIR, LoopTargetSpec, TargetSpec, flagged
from fsbench.store.runkinds import RunKind

DEFAULT_POLL = 10.0
# A host that stops answering may come back (an SSH drop, a reboot of the network): its
# async job goes on meanwhile. Past this many seconds since it last answered it fails.
DEFAULT_UNREACHABLE_TIMEOUT = 900.0


class FleetTargetSpec(TargetSpec):
    """Many machines: every host of an Ansible inventory, each its own loop image or disk."""

    kind: str = "fleet"
    # Each host's work directory is its inventory's (fsbench_dir), not a flag here.
    workdir: Path = Field(default=DEFAULT_WORKDIR, description="Not used: each host's own.")
    inventory: Path = flagged(
        "inventory", Path("hosts.ini"), "An Ansible inventory (INI, YAML, script).", "-i"
    )
    limit: str | None = flagged("limit", None, "Only hosts matching this Ansible pattern.", "-l")
    poll: float = flagged(
        "poll", DEFAULT_POLL, "Seconds between looks at the hosts' progress.", gt=0
    )
    unreachable_timeout: float = flagged(
        "unreachable-timeout",
        DEFAULT_UNREACHABLE_TIMEOUT,
        "Seconds a started host may stay unreachable (since it last answered) "
        "before it fails alone; its run may go on there, and --resume finishes what is missing.",
        gt=0,
    )
    forks: int = flagged("forks", 20, "Hosts Ansible talks to at once.", ge=1)
    controller_dir: Path = flagged(
        "controller-dir",
        Path("/var/tmp/fsbench-fleet-controller"),
        "Where the controller keeps logs and fetched stores.",
    )

    def for_hosts(self) -> LoopTargetSpec:
        """The target each host runs its part on: its own loop image of this size (or the
        disk its inventory's fsbench_device names)."""
        return LoopTargetSpec(image_size=self.image_size)


# A run on many hosts is a grid run of its own kind (an entry point of fsbench.run_kinds.v1):
# the repetition loop with the fleet executor drives it (fleet/driver.py), its reports are
# the grid's with the host beside each config; each host's part is a grid run that is part
# of it (runs.part_of), and each host's points are a series of `fsbench history`.
FLEET_RUN = RunKind(
    "fleet",
    "run on many hosts of fsbench fleet run",
    "fsbench fleet run",
    "fsbench.store.runkinds:GridFacts",
    driver="fsbench.fleet.driver:FleetDriver",
    series=True,
    has_parts=True,
)
