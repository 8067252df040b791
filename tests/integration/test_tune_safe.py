"""`fsbench tune --require safe`: crash tests of every config in a QEMU guest before the
race, stored as a run of their own; a config that loses acknowledged records (ext4
mounted barrier=0: a volatile-cache state keeps none of its fsync()ed records) never
races and is reported with its crash evidence; the safe ones race on the loop target."""

from __future__ import annotations

import json
from pathlib import Path

from fsbench.store.results import Store
from fsbench.vm.images import GuestImage
from tests.helpers import GUEST, VM_MARKS, fsbench, ours

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
