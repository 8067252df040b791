"""What used to be registered in six other ways (an import tuple, constants and `if`
chains, a dict of strings, catalogue dicts, an import-time side effect, nothing) is now
known through `Registry` (system/plugins.py): the built-ins load from their tables, in
the order the old lists had, and each registry knows what the code around it expects."""

from __future__ import annotations

import pytest

from fsbench import workloads
from fsbench.execute.features import registry as probes
from fsbench.plan import model as planning
from fsbench.system import filesystems, knobs, monitors
from fsbench.system.errors import FsbenchError
from fsbench.system.monitors.base import Role
from fsbench.vm import measured
from fsbench.workloads import aging
from fsbench.workloads.fio import profiles


def test_the_built_ins_load_in_their_tables_order() -> None:
    assert list(filesystems.catalogue()) == [
        "ext2", "ext3", "ext4", "xfs", "btrfs", "jfs", "reiserfs", "f2fs", "nilfs2", "raw"
    ]  # fmt: skip
    assert [p.name for p in probes.probes()][:2] == ["inodes", "overhead"]  # slow one first
    assert len(probes.probes()) == len(probes.BUILTIN) == 17
    assert profiles.names() == (
        "seq-write", "seq-write-direct", "seq-read", "rand-rw-16k-direct", "threaded-io"
    )  # fmt: skip
    assert list(aging.recipes()) == ["git-pulls", "churn"]
    assert list(monitors.all_monitors()) == ["sampler", "block-trace", "offcpu", "profile"]


def test_the_shipped_filesystems_are_read_from_their_catalogue_file() -> None:
    """filesystems.toml: `like` takes another table's keys but for those given, arrays are
    the tuples a record holds, and a name's kernel module and mount type default to it."""
    ext2, ext3, ext4 = (filesystems.get(n) for n in ("ext2", "ext3", "ext4"))
    assert ext2.mkfs == ("mkfs.ext2", "-q") and ext3.mkfs == ("mkfs.ext3", "-q")
    assert (ext2.module, ext3.module, ext4.module) == ("ext2", "ext4", "ext4")
    assert ext3.mount_type == "ext3" and ext3.kernel_name == "ext3"
    for fs in (ext2, ext3):
        assert (fs.fsck_readonly, fs.freefrag, fs.version) == (
            ext4.fsck_readonly,
            ext4.freefrag,
            ext4.version,
        )
        assert fs.extended_defaults == (("lazy_itable_init", "0"), ("lazy_journal_init", "0"))
    assert filesystems.get("raw").pseudo and not filesystems.get("raw").mkfs
    toy = filesystems.shipped(
        '[a]\nsummary = "s"\npackage = "p"\nlabel_max = 8\n[b]\nlike = "a"\nsummary = "t"\n'
    )
    assert [(f.name, f.summary, f.package, f.label_max) for f in toy] == [
        ("a", "s", "p", 8), ("b", "t", "p", 8)
    ]  # fmt: skip


def test_every_workload_the_vm_measures_from_the_host_has_its_measure() -> None:
    vm_only = {name for name, wl in workloads.all_workloads().items() if wl.vm_only}
    assert vm_only == set(measured.REGISTRY.all()) == {"boot", "crash"}


def test_the_default_monitor_runs_beside_counted_trials() -> None:
    assert monitors.DEFAULT == (monitors.SAMPLER,)
    assert monitors.get(monitors.SAMPLER).role == Role.MONITOR
    assert monitors.missing(monitors.DEFAULT) is None  # it needs nothing of the machine


def test_the_age_is_no_system_knob() -> None:
    """The age is validated by the plan (plan.model.knob_value), not registered with the
    knobs by importing the aging package."""
    with pytest.raises(FsbenchError, match="unknown knob 'age'"):
        knobs.validate(aging.KNOB, "git-pulls")
    assert planning.knob_value(aging.KNOB, "git-pulls:pulls=5") == "git-pulls:pulls=5"
