"""Made with today's fsbench (schema 7): a run on two hosts as `fsbench fleet run` stores it
(the whole run, then each host's part of it), each part from a fake executor."""

import random
import sys
import uuid

from fsbench.execute import loop
from fsbench.plan import model as planning
from fsbench.store.results import Store
from tests.fakes import FakeExecutor, Ran

store = Store(sys.argv[1])
plan = planning.Plan.model_validate(
    {
        "name": "parts-fixture",
        "fs": [{"type": "ext4"}, {"type": "xfs"}],
        "workload": [{"name": "alloc", "params": {"method": ["fallocate"], "size": "16M"}}],
        "scale": "tiny",
        "reps": 3,
        "seed": 6,
        "target": {"kind": "fleet", "inventory": "/srv/hosts.ini", "image_size": "2G"},
    }
)
cells = planning.expand(plan)
uid = uuid.UUID(int=0x7A11).hex
slots = loop.slots_of(plan, cells)
hosts = {"h2": ["baseline"], "h3": ["dev"]}
SUMMARY = "fleet of 2 hosts from hosts.ini, each its own loop image or disk (done 2)"


def facts(host: str, groups: list[str]) -> dict[str, object]:
    return {
        "groups": groups, "state": "done", "rc": 0, "error": "", "done": 6, "total": 6,
        "hostname": f"{host}.lab", "member_run": None, "launched": True,
    }  # fmt: skip


whole = store.create_run(
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
host_plan = plan.model_copy(update={"target": plan.target.for_hosts()})
for n, (host, groups) in enumerate(hosts.items()):
    rng = random.Random(n)
    speed = 1.0 + 0.3 * n

    def measure(ran: Ran, rng=rng, speed=speed) -> float:
        base = 1.5 if ran.slot.cell.config.type == "xfs" else 1.0
        return speed * base * (1 + rng.gauss(0, 0.02))

    ex = FakeExecutor(host_plan, cells, measure=measure)
    loop.run(
        host_plan,
        cells,
        store,
        argv=["fsbench", "fleet", "member"],
        overrides={},
        executor=ex,
        part=loop.Part(uid, host, tuple(groups)),
    )
store.finish_run(whole, "finished")
print(whole)
