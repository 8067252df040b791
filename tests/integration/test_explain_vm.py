"""`fsbench run --explain` on the VM target: the instrumented pass runs inside the guest
(Debian's kernel: its filesystems are modules, whose journal tracepoints bpftrace reads
from their format files, and the guest's init mounts the cgroup v2 hierarchy the tracers
filter on). ext4 mounted `sync` against default ext4 on fs_mark, as on the host: more
cache flushes per fsync and more journal commits are named, in that direction, from
trials that ran in the guest."""

from __future__ import annotations

import json
from pathlib import Path

from fsbench.store.results import Store
from fsbench.vm.images import GuestImage
from tests.helpers import GUEST, VM_MARKS, fsbench

pytestmark = VM_MARKS


def test_explain_inside_the_guest_names_flushes_for_sync(
    tmp_path: Path, guest_image: GuestImage
) -> None:
    db = str(tmp_path / "e.db")
    ran = fsbench(
        *["run", "--target", "vm", *GUEST, "--fs", "ext4", "--fs", "ext4:mount=sync"],
        *["--workload", "fs_mark", "--set", "files=300", "--scale", "tiny", "--reps", "3"],
        *["--image-size", "1G", "--workdir", str(tmp_path / "work"), "--db", db],
        *["--explain", "--no-report"],
        timeout=2400,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "explain: run 2, 6 instrumented trials in " in ran.stderr, ran.stderr[-2000:]
    said = fsbench("explain", "2", "--db", db, "--format", "json")
    assert said.returncode == 0, said.stderr[-3000:]
    (sync,) = json.loads(said.stdout)["explanation"]
    assert sync["configs"] == ["ext4", "ext4 sync"]
    found = {m["mechanism"]: m for m in sync["mechanisms"]}
    named = [m["mechanism"] for m in sync["mechanisms"] if m["verdict"] == "different"]
    assert "flushes_per_fsync" in named, named
    assert found["flushes_per_fsync"]["ratio"] > 1.5  # sync: more flushes, not fewer
    assert found["journal_commits"]["ratio"] > 1  # jbd2's tracepoints, a module's

    store = Store(db)
    explained = store.get_run(2)
    assert explained.kind == "explain" and explained.target["kind"] == "vm"
    trials = store.run_trials(explained)
    assert len(trials) == 6 and {t.status for t in trials} == {"ok"}
    # Each instrumented trial's tracers ran in the guest, on its kernel.
    assert all(t.provenance["vm"]["kernel_version"] == guest_image.kernel_version for t in trials)
