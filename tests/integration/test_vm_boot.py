"""The boot workload end to end: an ext4 root made on the host from the cached guest
image, booted under QEMU with systemd; seconds to the marker, systemd-analyze's split,
the bootchart samples, and nothing left behind."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from fsbench.store.results import Store
from fsbench.vm import qemu
from fsbench.vm.images import GuestImage
from tests.helpers import GUEST, VM_CACHE, VM_MARKS, fsbench, not_ok_trials, ours

pytestmark = VM_MARKS
CACHE = VM_CACHE


def test_one_boot_from_an_ext4_root(workdir: Path, guest_image: GuestImage) -> None:
    db = workdir / "r.db"
    res = fsbench(
        "run",
        "--target",
        "vm",
        "--fs",
        "ext4",
        "--workload",
        "boot",
        "--reps",
        "1",
        *GUEST,
        "--workdir",
        str(workdir / "work"),
        "--db",
        str(db),
        "--json",
        timeout=900,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    rows = {r["metric"]: r for r in json.loads(res.stdout)["rows"] if r["workload"] == "boot"}
    for metric in ("seconds", "kernel_s", "userspace_s", "root_read_mb"):
        assert rows[metric]["status"] == "ok" and rows[metric]["n"] == 1, rows.get(metric)
    seconds = rows["seconds"]["mean"]
    split = rows["kernel_s"]["mean"] + rows["userspace_s"]["mean"]  # initramfs: in kernel_s
    # QEMU start -> marker covers systemd's account of the boot (and QEMU's own start).
    assert 0 < split <= seconds + 1.0
    assert rows["root_read_mb"]["mean"] > 10  # the OS came off the root disk

    store = Store(db)
    run_id = store.latest_run_id()
    assert run_id is not None
    warmup, trial = sorted(store.get_trials(run_id), key=lambda t: t.seq)
    assert warmup.warmup and warmup.status == "ok"  # stored, never counted (n == 1 above)
    assert not trial.warmup and trial.id is not None
    booted = trial.provenance["boot"]
    assert booted["root_mount"].split()[:2] == [qemu.GUEST_ROOT, "ext4"]
    assert "rootfstype=ext4" in booted["cmdline"]
    assert booted["system_state"] in ("running", "degraded"), booted
    assert trial.provenance["boot_root"]["made_in"] == "host"
    assert trial.provenance["vm"]["accel"] in ("kvm", "tcg")
    assert store.get_run(run_id).target["kind"] == "vm"  # the report's header has the guest
    assert len(store.get_samples(trial.id)) >= 10  # the bootchart: 10 Hz up to the marker
    # Nothing left behind: loop devices, mounts, run directories, QEMU.
    assert ours(workdir) == ([], [])
    assert not list((workdir / "work").glob("vm-*"))
    assert not list((workdir / "work").glob("mnt-*"))


def test_two_kernels_in_one_run_compared_by_kernel(
    workdir: Path, guest_images: Callable[[str | None], GuestImage]
) -> None:
    guest_images("6.1")
    guest_images("6.12")
    db = workdir / "r.db"
    res = fsbench(
        "run",
        "--target",
        "vm",
        "--kernel",
        "6.1,6.12",
        "--fs",
        "ext4",
        "--workload",
        "alloc",
        "--set",
        "method=fallocate",
        "--set",
        "size=8M",
        "--scale",
        "tiny",
        "--reps",
        "2",
        *GUEST,
        "--image-size",
        "1G",
        "--workdir",
        str(workdir / "work"),
        "--db",
        str(db),
        timeout=900,
    )
    assert res.returncode == 0, res.stderr[-3000:] + not_ok_trials(db)
    store = Store(db)
    run_id = store.latest_run_id()
    assert run_id is not None
    trials = store.get_trials(run_id)
    # One comparison group per kernel, each with its warm-up round (stored, not counted).
    assert sorted(t.knobs["kernel"] for t in trials if t.warmup) == ["6.1", "6.12"]
    counted = [t.knobs["kernel"] for t in trials if not t.warmup]
    assert sorted(counted) == ["6.1", "6.1", "6.12", "6.12"]
    for t in trials:
        assert t.status == "ok", t.message
        # The knob says which kernel; the guest says which kernel really ran.
        assert t.provenance["vm"]["guest"]["kernel"].startswith(t.knobs["kernel"] + ".")
    res = fsbench("compare", str(run_id), "--by", "kernel", "--json", "--db", str(db))
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["cells"] and all(c["a"]["n"] == 2 and c["b"]["n"] == 2 for c in doc["cells"])
    assert {c["config"] for c in doc["cells"]} == {"ext4"}
