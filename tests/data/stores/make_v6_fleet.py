"""Made with fsbench at f1b375f (schema 6): a fleet run as its controller stores it, with
two member runs (h2 in group baseline, h3 in dev) of a fake executor."""

import random
import sys
import uuid

from fsbench import matrix
from fsbench import plan as planning
from fsbench.store import Store
from tests.fakes import FakeExecutor, Ran

path = sys.argv[1]
store = Store(path)
plan = planning.Plan.model_validate(
    {
        "name": "fleet-fixture",
        "fs": [{"type": "ext4"}, {"type": "xfs"}],
        "workload": [{"name": "alloc", "params": {"method": ["fallocate"], "size": "16M"}}],
        "scale": "tiny",
        "reps": 3,
        "seed": 5,
    }
)
cells = planning.expand(plan)
uid = uuid.UUID(int=0x6F1EE7).hex
slots = matrix.slots_of(plan, cells)
hosts = {"h2": ["baseline"], "h3": ["dev"]}
SUMMARY = "fleet of 2 hosts from hosts.ini, each its own loop image or disk (done 2)"


def facts(host: str, groups: list[str]) -> dict[str, object]:
    return {
        "groups": groups, "state": "done", "rc": 0, "error": "", "done": 6, "total": 6,
        "hostname": f"{host}.lab", "member_run": None, "launched": True,
    }  # fmt: skip


fleet_id = store.create_run(
    name=plan.name,
    fsbench_version="0.1.0",
    argv=["fsbench", "fleet", "run", "-i", "hosts.ini"],
    plan=plan.model_dump(mode="json", by_alias=True),
    overrides={},
    schedule=[(s.rep, s.cell.key) for s in slots],
    host={"kernel": "6.18-controller", "hostname": "controller"},
    target={
        "kind": "fleet",
        "summary": SUMMARY,
        "inventory": "/srv/hosts.ini",
        "hosts": {
            h: {
                "groups": g,
                "state": "done",
                "rc": 0,
                "error": "",
                "done": 6,
                "total": 6,
                "hostname": f"{h}.lab",
                "member_run": None,
                "launched": True,
            }
            for h, g in hosts.items()
        },
    },
    kind="fleet",
    uid=uid,
)
for n, (host, groups) in enumerate(hosts.items()):
    rng = random.Random(n)
    speed = 1.0 + 0.3 * n

    def measure(ran: Ran, rng=rng, speed=speed) -> float:
        base = 1.5 if ran.slot.cell.config.type == "xfs" else 1.0
        return speed * base * (1 + rng.gauss(0, 0.02))

    ex = FakeExecutor(plan, cells, measure=measure)
    matrix.run(
        plan,
        cells,
        store,
        argv=["fsbench", "run", "--fleet", uid, "--host", host],
        overrides={},
        executor=ex,
        part=matrix.FleetPart(uid, host, tuple(groups)),
    )
store.finish_run(fleet_id, "finished")
print(fleet_id)
