"""A source run and its explain run written into a real store through its own API, for the
reports of `fsbench explain` and the lines under a run's verdicts.

Two fs_mark configs: `a` (ext4) and `sync` (ext4 mounted sync), three counted trials each,
`sync` half as fast. The explain run's instrumented trials carry what the tracers store:
metrics (flushes per fsync three times `a`'s, journal waits twice, CPU user the same) and
maps: off-CPU stacks (`sync` waits PLANTED seconds more in the journal's commit wait),
profile samples, and the block-trace histograms (`sync` writes 4 KiB requests, `a` 64 KiB
ones; `sync` runs at queue depth 1, `a` at 4)."""

from __future__ import annotations

import json
import random

from fsbench.store.records import FoldedRecord, MetricRecord, TrialRecord
from fsbench.store.results import Store

PLAN = {
    "name": "sync-against-default",
    "scale": "tiny",
    "reps": 3,
    "seed": 11,
    "fs": [
        {"type": "ext4", "label": "a"},
        {"type": "ext4", "label": "sync", "mount": "sync"},
    ],
}
PARAMS = {"files": 300}
WORKLOADS = {"fs_mark": {"headline": ["files_per_s"]}}
# The off-CPU stack `sync` waits in longer (and the one both wait in alike).
JOURNAL = "[D];fs_mark;do_fsync;ext4_sync_file;jbd2_log_wait_commit;schedule"
DEVICE = "[D];fs_mark;do_fsync;file_write_and_wait_range;folio_wait_bit;io_schedule"
IDLE = "[S];fs_mark;__do_sys_wait4;kernel_wait4;do_wait;schedule"
PLANTED = 2.0  # seconds per trial
SPEED = {"a": 100.0, "sync": 50.0}  # files/s


def _trial(config: str, rep: int, seq: int, rng: random.Random) -> TrialRecord:
    noise = lambda: 1 + rng.uniform(-0.02, 0.02)  # noqa: E731
    return TrialRecord(
        seq=seq, rep=rep, cell_key=f"{config}|fs_mark|{json.dumps(PARAMS)}", config=config,
        fs="ext4", mkfs_options=[], mount_options="sync" if config == "sync" else "",
        workload="fs_mark", params=PARAMS, status="ok", started_at="t0", finished_at="t1",
        metrics=[MetricRecord("files_per_s", SPEED[config] * noise(), "files/s", "higher")],
    )  # fmt: skip


def _instrumented(config: str, rep: int, seq: int, rng: random.Random) -> TrialRecord:
    trial = _trial(config, rep, seq, rng)
    noise = lambda: 1 + rng.uniform(-0.02, 0.02)  # noqa: E731
    sync = config == "sync"
    mechanisms = {
        "flushes_per_fsync": (3.0 if sync else 1.0) * noise(),
        "offcpu_journal_s": ((1.0 + PLANTED) if sync else 1.0) * noise(),
        "workload_cpu_user_s": 0.5 * noise(),
    }
    trial.metrics += [
        MetricRecord(k, v, "s" if k.endswith("_s") else "x", "lower") for k, v in mechanisms.items()
    ]
    trial.provenance = {"monitors": {"offcpu": {"role": "tracer", "facts": {"window_s": 10.0}}}}
    size, depth = ("4096", "1") if sync else ("65536", "4")
    trial.folded = [
        FoldedRecord("offcpu", "s", {JOURNAL: 1.0 + (PLANTED if sync else 0.0), DEVICE: 0.5,
                                     IDLE: 30.0}),
        FoldedRecord("profile", "samples", {"fs_mark;ext4_sync_file;memcpy": 60.0,
                                            "fs_mark;ext4_file_write_iter": 40.0}),
        FoldedRecord("dev.write_size", "requests", {size: 100.0, "8192": 10.0}),
        FoldedRecord("dev.queue_depth", "requests", {depth: 110.0}),
    ]  # fmt: skip
    return trial


def explained_store(path: str, explained: bool = True) -> tuple[Store, int, int]:
    """The store, its source run's id and its explain run's (0 when not `explained`)."""
    store = Store(path)
    rng = random.Random(7)
    ids = []
    kinds = (("run", _trial, None), ("explain", _instrumented, {}))
    for kind, make, facts in kinds[: 2 if explained else 1]:
        run = store.create_run(
            name=PLAN["name"], fsbench_version="0.1.0", argv=["fsbench", kind], plan=PLAN,
            overrides={}, schedule=[], host={"kernel": "6.18"}, target={"kind": "loop"},
            kind=kind, workloads=WORKLOADS,
            facts=None if facts is None else {"source": ids[0], "tracers": ["block-trace"]},
        )  # fmt: skip
        seq = 0
        for rep in range(1, 4):
            for config in ("a", "sync"):
                store.record_trials(run, [make(config, rep, seq, rng)])
                seq += 1
        store.finish_run(run, "finished")
        ids.append(run)
    return store, ids[0], (ids[1] if explained else 0)
