from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsbench.plan import model as planning
from fsbench.plan.model import FsConfig, Plan, WorkloadSpec
from fsbench.system import knobs
from fsbench.system.errors import FsbenchError, TrialFailed
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


def test_kernel_dimension_needs_the_vm_target(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="kernel needs --target vm"):
        _kernel_plan("loop", "6.1,6.12")
    with pytest.raises(FsbenchError, match="target: kernel needs --target vm"):
        planning.load_toml(
            'fs = [{type = "ext4"}]\nworkload = [{name = "alloc"}]\n'
            '[target]\nkernel = "6.1,6.12"\n',
            "plan.toml",
        )
    plan = _kernel_plan("vm", "6.1,6.12")
    with pytest.raises(FsbenchError, match="the kernel is chosen by the VM target"):
        planning.expand(plan, knob_overrides={"kernel": ["6.1"]})
    # Never set or restored on the machine: the guest booted it.
    journal = knobs.journal_path(tmp_path)
    with knobs.applied({"kernel": "6.12"}, "/dev/null", journal) as applied:
        assert applied.in_force == {}
        assert not journal.exists()  # nothing changed, nothing written down


# -- the journal: what a run changes is written down before it changes it ----------------


@pytest.fixture
def fake_sysctls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A /proc/sys of plain files: the journal's rules without touching the machine."""
    root = tmp_path / "proc-sys"
    (root / "vm").mkdir(parents=True)
    (root / "vm" / "dirty_ratio").write_text("20\n")
    (root / "vm" / "dirty_bytes").write_text("0\n")
    monkeypatch.setattr(knobs, "SYSCTL_ROOT", root)

    def kernel_write(path: Path, value: str) -> None:
        if path.name == "dirty_bytes" and value == "0":
            raise OSError(22, "Invalid argument")  # as the kernel: at least 2 pages
        path.write_text(value + "\n")
        partner = {"dirty_ratio": "dirty_bytes", "dirty_bytes": "dirty_ratio"}.get(path.name)
        if partner:  # writing one of the pair zeroes the other
            (path.parent / partner).write_text("0\n")

    monkeypatch.setattr(knobs, "_write", kernel_write)
    return root


def _value(root: Path, name: str) -> str:
    return (root / name.replace(".", "/")).read_text().strip()


def test_original_is_written_down_before_the_change(
    fake_sysctls: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = knobs.journal_path(tmp_path / "work")
    seen: list[tuple[str, list[tuple[str, str]]]] = []
    real_write = knobs._write

    def spy(path: Path, value: str) -> None:
        written = [(e.name, e.original) for e in knobs.load(journal)]
        seen.append((value, written))
        real_write(path, value)

    monkeypatch.setattr(knobs, "_write", spy)
    with knobs.applied({"vm.dirty_bytes": "67108864"}, "/dev/null", journal) as on:
        assert on.in_force == {"vm.dirty_bytes": "67108864"}
        # Both of the pair, as they were, before the first write.
        assert seen[0] == ("67108864", [("vm.dirty_bytes", "0"), ("vm.dirty_ratio", "20")])
        assert journal.exists()
    assert (_value(fake_sysctls, "vm.dirty_ratio"), _value(fake_sysctls, "vm.dirty_bytes")) == (
        "20",
        "0",
    )
    # Only the non-zero one of the pair is written back: it zeroes its partner.
    assert [value for value, _ in seen[1:]] == ["20"]
    assert on.not_restored == [] and not journal.exists()


def test_a_failed_restore_is_reported_kept_and_retried(
    fake_sysctls: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = knobs.journal_path(tmp_path)
    real_write = knobs._write
    broken = {"on": False}

    def write(path: Path, value: str) -> None:
        if broken["on"]:
            raise PermissionError(1, "Operation not permitted")
        real_write(path, value)

    monkeypatch.setattr(knobs, "_write", write)
    with knobs.applied({"vm.dirty_ratio": "5"}, "/dev/null", journal) as on:
        broken["on"] = True
    assert on.not_restored == ["vm.dirty_ratio=20: Operation not permitted"]
    assert _value(fake_sysctls, "vm.dirty_ratio") == "5"
    assert [(e.name, e.original) for e in knobs.load(journal)] == [("vm.dirty_ratio", "20")]
    # The next trial of the same process: the original is the one written down, not the
    # value left in force; its restore puts the original back and the journal goes.
    broken["on"] = False
    with knobs.applied({"vm.dirty_ratio": "9"}, "/dev/null", journal) as again:
        assert _value(fake_sysctls, "vm.dirty_ratio") == "9"
    assert again.not_restored == []
    assert _value(fake_sysctls, "vm.dirty_ratio") == "20"
    assert not journal.exists()


def test_restore_journal_of_a_dead_run(fake_sysctls: Path, tmp_path: Path) -> None:
    (fake_sysctls / "vm" / "dirty_ratio").write_text("3\n")
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    journal = knobs.journal_path(tmp_path, pid=999_999)
    journal.write_text(
        json.dumps(
            {
                "pid": 999_999,
                "knobs": [
                    {
                        "name": "vm.dirty_ratio",
                        "path": str(fake_sysctls / "vm/dirty_ratio"),
                        "original": "20",
                    },
                    # Never written: not a sysctl, whatever a journal says.
                    {"name": "evil", "path": str(victim), "original": "owned"},
                    {"name": "dots", "path": f"{fake_sysctls}/../../victim", "original": "x"},
                ],
            }
        )
    )
    lines = knobs.restore_journal(journal, "pid 999999 gone")
    assert "restored vm.dirty_ratio=20 (pid 999999 gone)" in lines
    assert sum(ln.startswith("could not restore") and "ignored" in ln for ln in lines) == 2
    assert _value(fake_sysctls, "vm.dirty_ratio") == "20"
    assert victim.read_text() == "keep\n"
    assert not journal.exists()


def test_journal_that_cannot_be_written_changes_nothing(fake_sysctls: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    journal = knobs.journal_path(blocker)  # its directory is a file
    with pytest.raises(TrialFailed, match="cannot write the knob journal"):
        with knobs.applied({"vm.dirty_ratio": "5"}, "/dev/null", journal):
            pass
    assert _value(fake_sysctls, "vm.dirty_ratio") == "20"


def test_a_knob_not_restored_is_printed_after_its_trial(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from fsbench.execute.progress import ProgressHooks
    from fsbench.execute.schedule import Slot
    from fsbench.store.records import TrialRecord
    from fsbench.store.results import Store

    plan = Plan(fs=[FsConfig(type="ext4")], workload=[WorkloadSpec(name="alloc")], seed=1)
    cell = planning.expand(plan)[0]
    record = TrialRecord(
        seq=1, rep=1, cell_key=cell.key, config="ext4", fs="ext4", mkfs_options=[],
        mount_options="", workload="alloc", params={}, status="ok",
        provenance={"flags": {"knob-restore-failed": "vm.dirty_ratio=20: Permission denied"}},
    )  # fmt: skip
    out = io.StringIO()
    hooks = ProgressHooks(1, Store(tmp_path / "r.db"), Console(file=out, width=200))
    hooks.finished(Slot(seq=1, rep=1, cell=cell, group=0, position=1), [record], 1, 1)
    hooks.ended("finished")
    assert "warning: knob not restored after ext4: vm.dirty_ratio=20: Permission denied" in (
        out.getvalue()
    )
