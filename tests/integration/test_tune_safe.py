"""`fsbench tune --require safe`: crash tests of every config in a QEMU guest before the
race, stored as a run of their own; a config that loses acknowledged records (ext4
mounted barrier=0: a volatile-cache state keeps none of its fsync()ed records) never
races and is reported with its crash evidence; the safe ones race on the loop target.

The same crash tests are the crash workload's fsync-append checks (tests/integration/
test_crash.py runs the other patterns): with barriers (and on xfs) no acknowledged record
is lost at the cut or in the volatile-cache state the guest's dm-log-writes keeps; with
barrier=0 none is lost on this cacheless disk, but the cache state keeps none since mkfs,
and the kept case's own replay command finds the same damage from its seed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fsbench.store.results import Store
from fsbench.vm.images import GuestImage
from tests.helpers import GUEST, VM_MARKS, fsbench, ours, replayed_case

pytestmark = VM_MARKS

UNSAFE_CONFIG = "ext4 barrier=0"


def test_unsafe_configs_leave_the_race_with_their_crash_evidence(
    workdir: Path, guest_image: GuestImage
) -> None:
    db = workdir / "results.db"
    res = fsbench(
        "tune",
        *["--fs", "ext4:mount={barrier=1,barrier=0}", "--fs", "xfs"],
        *["--workload", "fs_mark", "--scale", "tiny", "--set", "sync=0", "--set", "files=300"],
        *["--require", "safe", "--safety-set", "pattern=fsync-append"],
        *["--safety-set", "crashes=1", "--safety-set", "seed=3"],
        *["--max-rounds", "3", "--seed", "5", "--json", "--no-report"],
        *["--image-size", "2G", "--workdir", str(workdir / "work"), "--db", str(db)],
        *GUEST,  # flags of the VM alone: the race runs on the loop target, its checks in a guest
        timeout=1500,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    doc = json.loads(res.stdout)
    # The crash tests ran first, as a run of their own on the VM target.
    assert res.stderr.index("safety: crash tests of 3 configs") < res.stderr.index("warm-up")
    store = Store(db)
    checks = store.get_run(doc["safety_run"])
    assert checks.plan["target"]["kind"] == "vm" and checks.status == "finished"
    assert (checks.plan["target"]["vcpus"], checks.plan["target"]["guest_ram_mb"]) == (1, 1024)
    crash_trials = store.get_trials(doc["safety_run"])
    assert {t.workload for t in crash_trials} == {"crash"} and len(crash_trials) == 3
    verdicts = {s["config"]: s for s in doc["safety"]}
    assert set(verdicts) == {"ext4 barrier=1", UNSAFE_CONFIG, "xfs"}
    assert not verdicts[UNSAFE_CONFIG]["safe"]
    assert "volatile cache: 1/1 states damaged" in verdicts[UNSAFE_CONFIG]["evidence"]
    for config in ("ext4 barrier=1", "xfs"):  # fsync() holds on both, cache or not
        assert verdicts[config]["safe"], verdicts[config]
        assert "nothing lost in 1 crash" in verdicts[config]["evidence"]
    _fsync_append_held_but_not_without_barriers(crash_trials, workdir)
    # The unsafe config is reported with that evidence, not silently dropped, and never ran.
    (unsafe,) = [d for d in doc["dropped"] if d["reason"] == "unsafe"]
    assert unsafe["config"] == UNSAFE_CONFIG and unsafe["round"] == 0
    assert unsafe["detail"] == verdicts[UNSAFE_CONFIG]["evidence"]
    race_trials = store.get_trials(doc["run_id"])
    assert UNSAFE_CONFIG not in {t.config for t in race_trials}
    assert {t.config for t in race_trials} == {"ext4 barrier=1", "xfs"}
    assert store.get_run(doc["run_id"]).plan["target"]["kind"] == "loop"
    assert {w["config"] for w in doc["winners"]} <= {"ext4 barrier=1", "xfs"}
    assert doc["rounds"][0] == {"round": 0, "alive": 3, "dropped": [UNSAFE_CONFIG]}
    # The terminal report says it too, from the store.
    text = fsbench("report", str(doc["run_id"]), "--db", str(db)).stdout
    lines = [line.strip() for line in text.splitlines()]
    verdict_at = lines.index(f"UNSAFE: {UNSAFE_CONFIG}")  # the verdict, its evidence below it
    assert lines[verdict_at + 1] == verdicts[UNSAFE_CONFIG]["evidence"]
    page = fsbench("report", str(doc["run_id"]), "--format", "html", "--db", str(db)).stdout
    assert "Crash tests (run" in page and "UNSAFE: not raced" in page
    assert ours(workdir) == ([], [])


def _fsync_append_held_but_not_without_barriers(crash_trials: list[Any], workdir: Path) -> None:
    found = {t.config: (t, {m.name: m.value for m in t.metrics}) for t in crash_trials}
    for config in ("ext4 barrier=1", "xfs"):
        trial, rows = found[config]
        assert rows["crashes"] == 1 and rows["acked_ops"] > 0, rows
        assert rows["acked_lost"] == 0 and rows["damaged_crashes"] == 0, rows
        # The guest kernel has dm-log-writes: the crash also checked one volatile-cache
        # state (a flush point + a random part of the writes after it), where fsync holds.
        assert rows["cache_states"] == 1 and rows["cache_damaged"] == 0, rows
        assert rows["cache_acked_lost"] == 0, rows
        crash = trial.provenance["crash"]
        assert crash["volatile_cache"].startswith("dm-log-writes")
        for cut in crash["crashes"]:
            state = cut["cache"]
            assert state["entries"] > state["flush_point"] >= 0
            assert 0 <= state["kept_writes"] <= state["pending_writes"]
    trial, rows = found[UNSAFE_CONFIG]
    # ext4 barrier=0 never flushes: on this disk (no cache) every fsync()ed record survives
    # the cut, but a disk with a volatile cache keeps only what a flush covered.
    assert rows["acked_ops"] > 0 and rows["acked_lost"] == 0 and rows["damaged_crashes"] == 0
    assert rows["cache_states"] == 1 and rows["cache_damaged"] == 1, rows
    # Acknowledged records lost (how many is the seed's draw over the unflushed writes).
    assert 0 < rows["cache_acked_lost"] <= rows["acked_ops"], rows
    (case,) = trial.provenance["crash"]["failing"]
    assert case["cache_damage"], case
    # The kept case's replay command, as a user would paste it, into a store of its own.
    replay_db = workdir / "replay.db"
    out = replayed_case(case, workdir, replay_db, timeout=900)
    replayed = {r["metric"]: r["mean"] for r in out["rows"]}
    assert "cache_damaged" in replayed, [(r["status"], r["message"]) for r in out["rows"]]
    assert replayed["cache_damaged"] == 1
    assert 0 < replayed["cache_acked_lost"] <= replayed["acked_ops"], replayed
    (trial,) = Store(replay_db).get_trials(out["run"])
    (same,) = trial.provenance["crash"]["failing"]
    assert same["seed"] == case["seed"]
