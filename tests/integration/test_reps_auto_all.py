"""`--reps auto` over every workload, every fio profile and every sysbench-fileio mode, in
one `fsbench run` at tiny sizes (one filesystem, no warm-up round, at most 4 reps): every
cell that ran has n > 3, or is flagged `not-converged`, or converged on a headline metric
it really reports. Never a silent stop at 3.

The same run checks what every host trial stores beside its metrics: the monitors' 10 Hz
samples, the headline its parameters make, and the tool's resolution of its counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fsbench import workloads
from fsbench.store.results import Store
from fsbench.system import engine as _engine
from fsbench.workloads.fio.profiles import names as profile_names
from fsbench.workloads.sysbench_fileio import MODES
from tests.helpers import fsbench, ours

pytestmark = pytest.mark.integration

MAX_REPS = 4
JOB = """\
[writer]
rw=write
size=8M
bs=256k
filename=jobdata
end_fsync=1
"""

# Every workload but the VM's own (boot), each as small as it goes.
PLAN_WORKLOADS: list[tuple[str, dict[str, Any]]] = [
    ("alloc", {"size": "16M", "method": "write-4k"}),
    ("untar+tree-read+fsck+tree-rm", {"source": "synthetic", "files": 400}),
    ("tree-copy", {"source": "synthetic", "files": 400, "copies": 2}),
    # The real source is what it needs: here, a quick `unsupported`.
    ("kernel-build", {"source": "synthetic", "files": 400}),
    ("fs_mark", {"files": 100, "size": "4K", "sync": 1}),
    ("dbench", {"clients": 1, "duration": 2}),
    ("postmark", {"files": 50, "transactions": 300, "min_size": "1K", "max_size": "16K"}),
    ("sqlite", {"inserts": 60}),
    ("gzip", {"size": "4M"}),
    (
        "fio",
        {"profile": [*profile_names(), "job=JOBFILE"], "size": "16M", "runtime": 1, "threads": 1},
    ),
    ("sysbench-fileio", {"mode": list(MODES), "layout": "2x4M", "duration": 1}),
    ("fileserver", {"threads": 2, "duration": 0.5, "warmup": 0}),
    ("varmail", {"threads": 2, "duration": 0.5, "warmup": 0}),
    ("webserver", {"threads": 2, "duration": 0.5, "warmup": 0}),
]


def _plan(job: Path) -> str:
    lines = [
        'name = "reps-auto-all"',
        'scale = "tiny"',
        'reps = "auto"',
        f"max_reps = {MAX_REPS}",
        "warmup = 0",
        "[[fs]]",
        'type = "ext4"',
    ]
    for name, params in PLAN_WORKLOADS:
        if name in ("fileserver", "varmail", "webserver") and _engine.find_engine() is None:
            continue
        lines += ["[[workload]]", f'name = "{name}"', "[workload.params]"]
        for key, value in params.items():
            if isinstance(value, list):
                value = [v.replace("JOBFILE", str(job)) for v in value]
            lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("reps-auto")
    job = work / "tiny.fio"
    job.write_text(JOB)
    plan = work / "plan.toml"
    plan.write_text(_plan(job))
    db = work / "r.db"
    res = fsbench(
        "run",
        str(plan),
        "--workdir",
        str(work / "w"),
        "--db",
        str(db),
        "--image-size",
        "1G",
        "--json",
        timeout=1800,
    )
    assert res.returncode in (0, 3), res.stderr  # 3: kernel-build unsupported
    out: dict[str, Any] = json.loads(res.stdout)
    store = Store(db)
    try:
        run_id = store.latest_run_id()
        assert run_id is not None
        out["record"] = store.get_run(run_id)
        out["trials"] = store.get_trials(run_id)
        out["samples"] = {t.id: len(store.get_samples(t.id)) for t in out["trials"] if t.id}
    finally:
        store.close()
    assert ours(work / "w") == ([], [])
    return out


# Workloads this plan leaves to tests of their own: the VM target's (test_vm_boot.py,
# test_crash.py), aging's stages (test_aging.py), the database servers' (test_pgbench.py,
# test_sysbench_oltp.py), the user's command and a recorded trace, which need the user's
# input (test_command.py, test_replay.py).
ELSEWHERE = {"boot", "crash", "aging", "pgbench", "sysbench-oltp", "command", "replay"}


def test_every_workload_and_mode_ran(run: dict[str, Any]) -> None:
    ran = {r["workload"] for r in run["rows"]}
    expected = {w for name, _ in PLAN_WORKLOADS for w in name.split("+")}
    if _engine.find_engine() is None:
        expected -= {"fileserver", "varmail", "webserver"}
    assert ran == expected
    engine_made = {"fileserver", "varmail", "webserver"}
    assert set(workloads.all_workloads()) - ran <= ELSEWHERE | engine_made
    profiles = {r["params"]["profile"] for r in run["rows"] if r["workload"] == "fio"}
    assert len(profiles) == len(profile_names()) + 1
    modes = {r["params"]["mode"] for r in run["rows"] if r["workload"] == "sysbench-fileio"}
    assert modes == set(MODES)
    build = [r for r in run["rows"] if r["workload"] == "kernel-build"]
    assert build and all(r["status"] == "unsupported" for r in build)


def test_no_silent_stop_at_three(run: dict[str, Any]) -> None:
    assert run["record"].convergence  # the run stored its convergence record
    cells: dict[str, list[dict[str, Any]]] = {}
    for row in run["rows"]:
        if row["status"] == "ok":
            key = json.dumps([row["workload"], row["params"]], sort_keys=True)
            cells.setdefault(key, []).append(row)
    assert cells
    for key, rows in cells.items():
        judged = [r for r in rows if r["headline"] == 0]
        assert len(judged) == 1, (key, [r["metric"] for r in rows if r["headline"] is not None])
        row = judged[0]
        if row["n"] > 3 or "not-converged" in row["flags"]:
            continue
        # Stopped at 3 unflagged: only because the headline metric it is judged on (the
        # first its trials report) has its 95% CI within the 5% target.
        assert row["n"] == 3, row
        low, high = row["ci95"]
        assert (high - low) / 2 <= 0.05 * abs(row["mean"]) + 1e-12, row


def test_each_trial_stores_samples_and_its_headline(run: dict[str, Any]) -> None:
    ok = [t for t in run["trials"] if t.status == "ok"]
    assert ok
    for t in ok:
        reported = {m.name for m in t.metrics}
        assert run["samples"][t.id] >= 1, (t.workload, t.params)  # the 10 Hz timeline
        assert {"device_write_bytes", "device_util_pct", "cpu_user_s", "cpu_sys_s"} <= reported
        headline = t.provenance["headline"]
        assert headline and set(headline) <= reported, (t.workload, t.params, headline)
        if t.workload == "fio" and t.params["profile"] in ("seq-write", "seq-read"):
            assert not any(h.endswith("_iops") for h in headline), headline  # = MiB/s at 1 MiB
    counts = {m.name: m.resolution for t in ok for m in t.metrics if m.unit == "count"}
    assert counts and all(step == 1 for step in counts.values()), counts
