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


def _kernel_plan(kind: str, kernel: str | list[str] | None) -> Plan:
    return Plan.model_validate(
        {
            "fs": [{"type": "ext4"}, {"type": "xfs"}],
            "workload": [{"name": "alloc", "params": {"method": "fallocate"}}],
            "scale": "tiny",
            "target": {"kind": kind, "kernel": kernel},
        }
    )


def test_several_kernels_are_a_dimension_of_the_vm_matrix() -> None:
    for kernel in ("6.1,6.12", ["6.1", "6.12"], " 6.1 , 6.12,6.1"):
        plan = _kernel_plan("vm", kernel)
        assert plan.target.kernels == ["6.1", "6.12"]
        cells = planning.expand(plan)
        assert [(c.config.type, c.knobs) for c in cells] == [
            ("ext4", {"kernel": "6.1"}),
            ("xfs", {"kernel": "6.1"}),
            ("ext4", {"kernel": "6.12"}),
            ("xfs", {"kernel": "6.12"}),
        ]
    # One kernel (or the default) is the target, not a dimension: cells stay as they were.
    for kernel in ("6.1", None):
        assert all(c.knobs == {} for c in planning.expand(_kernel_plan("vm", kernel)))
    assert _kernel_plan("vm", None).target.kernels == [None]


def test_kernel_dimension_needs_the_vm_target() -> None:
    with pytest.raises(ValueError, match="kernel needs the VM target"):
        _kernel_plan("loop", "6.1,6.12")
    with pytest.raises(FsbenchError, match="target: kernel needs the VM target"):
        planning.load_toml(
            'fs = [{type = "ext4"}]\nworkload = [{name = "alloc"}]\n'
            '[target]\nkernel = "6.1,6.12"\n',
            "plan.toml",
        )
    plan = _kernel_plan("vm", "6.1,6.12")
    with pytest.raises(FsbenchError, match="the kernel is chosen by the VM target"):
        planning.expand(plan, knob_overrides={"kernel": ["6.1"]})
    # Never set or restored on the machine: the guest booted it.
    with knobs.applied({"kernel": "6.12"}, "/dev/null") as in_force:
        assert in_force == {}
