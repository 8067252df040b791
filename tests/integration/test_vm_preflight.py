"""A VM run is checked before anything is made, and a resumed VM run is checked the same
way as a fresh one (resuming once skipped the VM's preflight): a workload that does not
fit the guest's scratch disk is refused in one line, both times, before any guest boots."""

from __future__ import annotations

from pathlib import Path

from fsbench import __version__
from fsbench.cli.planflags import build, flags_of
from fsbench.store.results import Store
from fsbench.workloads.base import Scale
from tests.helpers import VM_MARKS, fsbench

pytestmark = VM_MARKS

TOO_BIG = ["--workload", "alloc", "--set", "method=fallocate", "--set", "size=1G"]


def _flags(workdir: Path) -> list[str]:
    return [
        "--target",
        "vm",
        "--fs",
        "f2fs",
        *TOO_BIG,
        "--scale",
        "tiny",
        "--image-size",
        "256M",
        "--workdir",
        str(workdir / "work"),
    ]


def test_resumed_vm_run_is_refused_like_a_fresh_one(workdir: Path) -> None:
    db = workdir / "r.db"
    fresh = fsbench("run", *_flags(workdir), "--db", str(db))
    assert fresh.returncode == 2, fresh.stderr
    refusal = fresh.stderr.strip()
    assert len(refusal.splitlines()) == 1, refusal
    assert refusal.startswith("fsbench: error: alloc size=1G method=fallocate needs ")
    assert "a 256.0 MiB target" in refusal and "use a larger --image-size" in refusal
    store = Store(db)
    assert store.list_runs() == []  # refused before the run was stored

    # The same plan stored as an interrupted run (as a version that did not check it
    # on resume left it): --resume checks it like a fresh run and refuses the same way.
    built = build(
        flags_of(
            {
                "fs": ["f2fs"],
                "workload": ["alloc"],
                "set_": ["method=fallocate", "size=1G"],
                "scale": Scale.TINY,
                "image_size": "256M",
                "workdir": workdir / "work",
                "target_kind": "vm",
                "seed": 1,
            }
        )
    )
    run_id = store.create_run(
        name=built.plan.name,
        fsbench_version=__version__,
        argv=["fsbench", "run"],
        plan=built.plan.model_dump(mode="json", by_alias=True),
        overrides=built.overrides,
        schedule=[],
        host={},
        target={"kind": "vm", "summary": "QEMU guest (not booted yet)"},
    )
    store.finish_run(run_id, "interrupted")
    resumed = fsbench("run", "--resume", str(run_id), "--db", str(db))
    assert resumed.returncode == 2, resumed.stderr
    lines = resumed.stderr.strip().splitlines()
    assert lines[0].startswith(f"fsbench: resuming run {run_id}")
    assert [ln for ln in lines[1:] if ln.strip()] == [refusal]
    assert store.get_trials(run_id) == []
    assert store.get_run(run_id).status == "interrupted"  # still resumable once it fits
    assert not list((workdir / "work").glob("vm-*"))  # no guest was started
