from __future__ import annotations

import pytest

from fsbench import knobs
from fsbench import plan as planning
from fsbench.errors import FsbenchError
from fsbench.plan import FsConfig, Plan, WorkloadSpec
from fsbench.workloads.base import Scale


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("scheduler", "cfq", "expected one of none, mq-deadline, bfq, kyber"),
        ("contention", "loud", "expected idle or busy"),
        ("vm.no_such_knob", "1", "no such sysctl"),
        ("dirty", "1", "unknown knob"),
    ],
)
def test_bad_knobs(name: str, value: str, message: str) -> None:
    with pytest.raises(FsbenchError, match=message):
        knobs.validate(name, value)


def test_knobs_multiply_the_matrix() -> None:
    p = Plan(
        fs=[FsConfig(type="ext4"), FsConfig(type="xfs")],
        workload=[WorkloadSpec(name="alloc", params={"method": ["fallocate", "mmap"]})],
        scale=Scale.TINY,
        knobs={"vm.dirty_ratio": [1, 20], "contention": "idle"},
    )
    cells = planning.expand(p)
    assert len(cells) == 2 * 2 * 2  # fs x method x dirty_ratio
    assert {c.knobs["vm.dirty_ratio"] for c in cells} == {"1", "20"}
    assert all(c.knobs["contention"] == "idle" for c in cells)
    assert len({c.key for c in cells}) == len(cells)


def test_parse_knob_flag_message() -> None:
    with pytest.raises(FsbenchError, match="--knob 'vm.dirty_ratio'"):
        planning.parse_set(["vm.dirty_ratio"], flag="--knob")


def test_clients_and_dirty_ratio_give_four_cells_per_filesystem() -> None:
    text = """
scale = "tiny"
[[fs]]
type = "ext4"
[[fs]]
type = "xfs"
[[workload]]
name = "dbench"
[workload.params]
clients = [1, 4]
[knobs]
"vm.dirty_ratio" = [1, 20]
"""
    cells = planning.expand(planning.load_toml(text, "plan.toml"))
    for fs in ("ext4", "xfs"):
        mine = [c for c in cells if c.config.type == fs]
        assert sorted((c.params["clients"], c.knobs["vm.dirty_ratio"]) for c in mine) == [
            (1, "1"),
            (1, "20"),
            (4, "1"),
            (4, "20"),
        ]
