from __future__ import annotations

import pytest

from fsbench.plan import model as planning
from fsbench.plan import presets
from fsbench.plan.model import FsConfig, Plan, WorkloadSpec
from fsbench.system.errors import FsbenchError
from fsbench.workloads.base import Scale


def test_comma_list_makes_one_config_per_type() -> None:
    configs = planning.parse_fs_spec("ext4,xfs,btrfs")
    assert [c.type for c in configs] == ["ext4", "xfs", "btrfs"]
    assert [c.display for c in configs] == ["ext4", "xfs", "btrfs"]


def test_rich_spec_keeps_commas_of_mount_options() -> None:
    (c,) = planning.parse_fs_spec("ext4:mkfs=-I 256 -O ^flex_bg:mount=data=writeback,nodelalloc")
    assert c.type == "ext4"
    assert c.mkfs == ("-I", "256", "-O", "^flex_bg")
    assert c.mount == "data=writeback,nodelalloc"
    assert c.display == "ext4 -I 256 -O ^flex_bg data=writeback,nodelalloc"


def test_spec_label_and_quoted_mkfs() -> None:
    (c,) = planning.parse_fs_spec("xfs:mkfs=-L 'a b':label=my xfs")
    assert c.mkfs == ("-L", "a b")
    assert c.display == "my xfs"


@pytest.mark.parametrize(
    "spec, message",
    [
        ("zfs", "unknown filesystem 'zfs'"),
        ("", "empty --fs"),
        ("ext4:mount=a:mount=b", "mount= given twice"),
        ("ext4:mkfs=-O 'unterminated", "No closing quotation"),
    ],
)
def test_bad_fs_specs_are_one_line_errors(spec: str, message: str) -> None:
    with pytest.raises(FsbenchError, match=message) as info:
        planning.parse_fs_spec(spec)
    assert "\n" not in str(info.value)


def test_parse_set() -> None:
    assert planning.parse_set(["method=fallocate,write-4k", "size=64M"]) == {
        "method": ["fallocate", "write-4k"],
        "size": ["64M"],
    }
    with pytest.raises(FsbenchError, match="NAME=VALUE"):
        planning.parse_set(["method"])


def _plan(**kw: object) -> Plan:
    base: dict[str, object] = {
        "fs": [FsConfig(type="ext4"), FsConfig(type="xfs")],
        "workload": [WorkloadSpec(name="alloc")],
        "scale": Scale.TINY,
        "reps": 2,
    }
    base.update(kw)
    return Plan.model_validate(base)


def test_scale_defaults_sweep_methods_and_size() -> None:
    cells = planning.expand(_plan())
    methods = {c.params["method"] for c in cells}
    assert methods == {"fallocate", "posix_fallocate", "mmap", "write-4k", "write-8k"}
    assert {c.params["size"] for c in cells} == {"64M"}
    assert len(cells) == 5 * 2


def test_set_overrides_defaults_and_makes_one_cell_per_value() -> None:
    cells = planning.expand(_plan(), {"method": ["fallocate", "write-4k"], "size": ["1M"]})
    assert [(c.config.type, c.params["method"]) for c in cells] == [
        ("ext4", "fallocate"),
        ("xfs", "fallocate"),
        ("ext4", "write-4k"),
        ("xfs", "write-4k"),
    ]
    assert all(c.params["size"] == "1M" for c in cells)


def test_set_unknown_parameter_is_refused() -> None:
    with pytest.raises(FsbenchError, match="--set clients: no such parameter"):
        planning.expand(_plan(), {"clients": ["1"]})


@pytest.mark.parametrize(
    "values, message",
    [
        ({"method": ["sideways"]}, "method"),
        ({"size": ["-5M"]}, "size"),
        ({"size": ["lots"]}, "not a size"),
    ],
)
def test_bad_parameter_values(values: dict[str, list[str]], message: str) -> None:
    with pytest.raises(FsbenchError, match=message):
        planning.expand(_plan(), values)


def test_duplicate_labels_are_refused() -> None:
    p = _plan(fs=[FsConfig(type="ext4"), FsConfig(type="ext4")])
    with pytest.raises(FsbenchError, match="share the label"):
        planning.expand(p)


def test_presets_load_and_expand() -> None:
    assert {"quick", "alloc"} <= set(presets.preset_names())
    alloc = presets.load_preset("alloc")
    assert [c.display for c in alloc.fs] == [
        "ext2",
        "ext3 ordered",
        "ext3 writeback",
        "ext3 journal",
        "ext4",
        "xfs",
        "btrfs",
    ]
    assert alloc.reps == 3
    cells = planning.expand(alloc)
    assert len(cells) == 7 * 5
    quick = presets.load_preset("quick")
    assert [c.type for c in quick.fs] == ["ext4", "xfs", "btrfs"]


def test_unknown_preset() -> None:
    with pytest.raises(FsbenchError, match="unknown preset 'nope'"):
        presets.load_preset("nope")


@pytest.mark.parametrize(
    "text, message",
    [
        ("reps = [", "invalid TOML"),
        ('reps = 0\n[[fs]]\ntype="ext4"\n[[workload]]\nname="alloc"', "reps"),
        ('[[fs]]\ntype="reiser5"\n[[workload]]\nname="alloc"', "unknown filesystem"),
        ('[[fs]]\ntype="ext4"\n[[workload]]\nname="bonnie"', "unknown workload"),
        ('[[fs]]\ntype="ext4"\n[[workload]]\nname="alloc"\nbogus=1', "bogus"),
        ('colour = "red"\n[[fs]]\ntype="ext4"\n[[workload]]\nname="alloc"', "colour"),
    ],
)
def test_bad_toml_is_one_line(text: str, message: str) -> None:
    with pytest.raises(FsbenchError, match=message) as info:
        planning.load_toml(text, "plan.toml")
    assert "\n" not in str(info.value)


def test_toml_plan_round_trip() -> None:
    text = """
name = "mine"
reps = 5
scale = "tiny"
[target]
image_size = "2G"
[[fs]]
type = "ext4"
mkfs = "-I 256"
mount = "data=writeback"
[[workload]]
name = "alloc"
[workload.params]
method = "mmap"
"""
    p = planning.load_toml(text, "mine.toml")
    assert p.target.image_size == 2 << 30
    assert p.fs[0].mkfs == ("-I", "256")
    cells = planning.expand(p)
    assert len(cells) == 1 and cells[0].params == {"size": "64M", "method": "mmap"}


def test_registry_loads_every_workload_even_after_a_direct_import() -> None:
    import importlib

    from fsbench import workloads

    importlib.import_module("fsbench.workloads.alloc")
    names = set(workloads.all_workloads())
    assert {"alloc", "untar", "tree-read", "tree-copy", "tree-rm", "fsck", "kernel-build"} <= names


@pytest.mark.parametrize("name", presets.preset_names())
@pytest.mark.parametrize("scale", list(Scale))
def test_every_preset_expands_at_every_scale(name: str, scale: Scale) -> None:
    p = presets.load_preset(name).model_copy(update={"scale": scale})
    cells = planning.expand(p)
    assert cells and p.description
    assert len({c.key for c in cells}) == len(cells)


def test_workload_knobs_apply_to_that_workload_only() -> None:
    cells = planning.expand(presets.load_preset("ext4-vs-xfs"))
    with_knob = {"sysbench-fileio", "fileserver"}
    for name in with_knob:
        swept = [c for c in cells if c.workload == name]
        assert {c.knobs.get("vm.dirty_ratio") for c in swept} == {"1", "20"}
    assert all(not c.knobs for c in cells if c.workload not in with_knob)


def _target_of(**flags: object) -> dict[str, object]:
    from fsbench.cli import planflags

    given = {"fs": ["ext4"], "workload": ["alloc"], **flags}
    plan = planflags.build_plan(planflags.flags_of(given))
    return plan.target.model_dump()


def test_each_target_kind_takes_its_own_flags() -> None:
    assert _target_of(image_size="2G", device="/dev/sdz", destroy_data=True) == {
        **_target_of(),
        "image_size": 2 << 30,
        "device": "/dev/sdz",
        "destroy_data": True,
    }
    vm = _target_of(target_kind="vm", kernel="6.1,6.12", guest_ram=1024)
    assert (vm["kind"], vm["kernel"], vm["guest_ram_mb"]) == ("vm", "6.1,6.12", 1024)
    assert "device" not in vm


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"kernel": "6.1"}, r"--kernel needs --target vm \(this plan's target is loop\)"),
        ({"guest_ram": 512}, r"--guest-ram needs --target vm"),
        ({"target_kind": "vm", "device": "/dev/sdz"}, r"--device needs --target loop"),
        ({"target_kind": "vm", "destroy_data": True}, r"--destroy-data needs --target loop"),
        ({"target_kind": "cloud"}, r"--target 'cloud': loop or fleet or vm"),
        ({"image_size": "huge"}, r"--image-size: "),
    ],
)
def test_a_target_flag_of_another_kind_is_one_line(flags: dict[str, object], message: str) -> None:
    with pytest.raises(FsbenchError, match=message):
        _target_of(**flags)


def test_params_at_a_scale_apply_at_that_scale_only() -> None:
    """The quick preset is sized for quick scale; at tiny it shrinks to the workloads'
    tiny defaults (a preset runs at every scale), and --set beats both."""

    def size_of(plan: Plan, overrides: dict[str, list[str]] | None = None) -> str:
        return str(
            next(c for c in planning.expand(plan, overrides) if c.workload == "fio").params["size"]
        )

    quick = presets.load_preset("quick")
    assert size_of(quick) == "4G"
    assert size_of(quick.model_copy(update={"scale": Scale.TINY})) == "64M"
    assert size_of(quick, {"size": ["1G"]}) == "1G"
    assert size_of(planning.with_overrides(quick, {"size": ["1G"]})) == "1G"
    bad = Plan(
        fs=[FsConfig(type="ext4")],
        workload=[WorkloadSpec(name="fio", params_at={Scale.QUICK: {"nope": 1}})],
    )
    with pytest.raises(FsbenchError, match="unknown parameter 'nope'"):
        planning.expand(bad)


def test_cpu_idle_is_any_unless_asked_and_kept_only_when_asked() -> None:
    """--cpu-idle shallow goes into the plan (and the stored plan); the default leaves
    the stored plan as plans stored before it were; any other value is one line."""

    from fsbench.cli import planflags

    def built(**flags: object) -> Plan:
        given = {"fs": ["ext4"], "workload": ["alloc"], **flags}
        return planflags.build_plan(planflags.flags_of(given))

    assert built().cpu_idle == "any"  # an ad-hoc run, though the quick preset holds them
    assert "cpu_idle" not in built().model_dump(mode="json")
    assert planflags.build_plan(planflags.flags_of({})).cpu_idle == "shallow"  # quick
    assert built(preset="quick").cpu_idle == "shallow"
    assert planflags.build_plan(planflags.flags_of({"cpu_idle": "any"})).cpu_idle == "any"
    shallow = built(cpu_idle="shallow")
    assert shallow.model_dump(mode="json")["cpu_idle"] == "shallow"
    with pytest.raises(FsbenchError, match="cpu_idle"):
        built(cpu_idle="deep")
