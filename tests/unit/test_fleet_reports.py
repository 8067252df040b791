"""A fleet run's reports name the fleet's hosts where the trials ran, never the
controller's machine (whose facts the fleet run's `host` holds)."""

from __future__ import annotations

from fsbench.reports.compare.cells import Comparison
from fsbench.reports.compare.sections import header_lines
from fsbench.reports.html.provenance import host_items
from fsbench.reports.tables import machine_line
from fsbench.store.records import RunRecord
from fsbench.system.hostkeys import Host


def _run(kind: str, run_id: int = 1) -> RunRecord:
    return RunRecord(
        id=run_id, name="fleet", status="finished", created_at="2026-11-25T00:00:00",
        finished_at=None, fsbench_version="0.1.0", argv=[], plan={}, overrides={},
        schedule=[], host=Host.read({"kernel": "6.18-controller", "hostname": "controller"}),
        target=_FLEET_TARGET if kind == "fleet" else {"kind": "loop", "summary": "loop image"},
        kind=kind,
    )  # fmt: skip


# What the fleet executor describes: its hosts, where the trials ran.
_FLEET_TARGET = {
    "kind": "fleet",
    "hosts": {"h2": {"groups": ["baseline"]}, "h3": {"groups": ["dev"]}},
}


def test_the_fleet_hosts_not_the_controller() -> None:
    fleet, single = _run("fleet"), _run("run", 2)
    assert machine_line(fleet).startswith("hosts: 2 hosts (h2, h3)")
    assert "controller" not in machine_line(fleet) and "6.18-controller" in machine_line(single)
    items = dict(host_items(fleet))
    assert items["h2"] == "baseline" and items["h3"] == "dev" and "kernel" not in items
    cmp = Comparison(cells=[], only_a=[], only_b=[], geomeans=[])
    a_line, b_line = header_lines(fleet, single, cmp)[:2]
    assert "2 hosts" in a_line and "6.18-controller" not in a_line
    assert "host Linux 6.18-controller" in b_line
