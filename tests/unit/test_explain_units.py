"""The pure parts of `fsbench explain`: what bpftrace prints read back (bpfout), a block
request's kind from its rwbs, an off-CPU stack's class, the stored maps' encoding, and the
ranking of mechanisms per pair (analysis/explain.py) on trials whose values are known:
a mechanism that differs in every trial is named, one that does not is not, and the
account splits the gap into its parts."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time

from fsbench.analysis.design import Design
from fsbench.analysis.explain import explain, inclusive, profile_diff, top_symbols
from fsbench.store import folded
from fsbench.store.records import MetricRecord, TrialRecord
from fsbench.system.monitors import bpfout
from fsbench.system.monitors.blocktrace import Request
from fsbench.system.monitors.bpftrace import waiting
from fsbench.system.monitors.offcpu import IDLE, RUNQUEUE, state_of, wait_class


def test_bpftrace_json_read_back() -> None:
    lines = [
        '{"type": "attached_probes", "data": {"probes": 5}}',
        '{"type": "printf", "data": "fsbench: ready\\n"}',
        '{"type": "map", "data": {"@req": {"7340032,WS": 3, "7340032,FWS": 2, "7340032,WS": 1}}}',
        '{"type": "map", "data": {"@fsyncs": 10}}',
        '{"type": "hist", "data": {"@size": {"7340032,WS": [{"min": 4096, "max": 8191, '
        '"count": 3}]}}}',
        '{"type": "lost_events", "data": {"events": 2}}',
        "ERROR: something bpftrace said",
    ]
    said = bpfout.parse(lines)
    assert said.attached == 5 and said.lost == 2
    assert "fsbench: ready" in said.printed
    assert said.maps["req"]["7340032,WS"] == 4  # a string key printed twice is one key
    assert said.value("fsyncs") == 10
    assert said.hists["size"]["7340032,WS"] == {4096: 3}
    assert said.messages == ["ERROR: something bpftrace said"]
    assert bpfout.split_key("a,b,c,WS", 2) == ["a,b,c", "WS"]


def test_kernel_stacks_fold_root_first() -> None:
    stack = "\n  __schedule+0x1\n  schedule+0x2\n  jbd2_log_wait_commit+0x3\n  ext4_sync_file+9\n"
    assert bpfout.folded(stack) == "ext4_sync_file;jbd2_log_wait_commit;schedule;__schedule"
    assert bpfout.folded("") == bpfout.USER


def test_request_kinds_from_rwbs() -> None:
    assert Request.of("FWFS") == Request("W", preflush=True, fua=True, sync=True)
    assert Request.of("WS").op == "W" and Request.of("WS").sync
    assert Request.of("R").op == "R"
    assert Request.of("FF") == Request("F", preflush=True)  # a flush as blk-flush issues it
    assert Request.of("F") == Request("F")
    assert Request.of("WM").meta


def test_offcpu_classes() -> None:
    journal = "[D];fs_mark;do_fsync;ext4_sync_file;jbd2_log_wait_commit;schedule"
    flush = "[D];fs_mark;ext4_sync_file;blkdev_issue_flush;submit_bio_wait;io_schedule_timeout"
    io = "[D];fs_mark;file_write_and_wait_range;folio_wait_bit;io_schedule;schedule"
    idle = "[S];fs_mark;__do_sys_wait4;kernel_wait4;do_wait;schedule"
    assert wait_class(journal) == "journal"
    assert wait_class(flush) == "flush"  # not device_io: the flush is what it waited for
    assert wait_class(io) == "device_io"
    assert wait_class(idle) == IDLE
    assert wait_class("[R];fs_mark;jbd2_log_wait_commit") == RUNQUEUE
    assert state_of(0) == "[R]" and state_of(2) == "[D]" and state_of(0x100 | 1) == "[R]"


def test_maps_encoded_both_ways() -> None:
    small = {"a;b": 1.5, "4096": 3.0}
    assert folded.decode(*folded.encode(small)) == small
    large = {f"frame{i};leaf": float(i) for i in range(2000)}
    encoding, data = folded.encode(large)
    assert encoding == folded.ZLIB and folded.decode(encoding, data) == large


def _trial(config: str, rep: int, values: dict[str, float], files_per_s: float) -> TrialRecord:
    metrics = [MetricRecord("files_per_s", files_per_s, "files/s", "higher")]
    metrics += [
        MetricRecord(k, v, "s" if k.endswith("_s") else "x", "lower") for k, v in values.items()
    ]
    return TrialRecord(
        seq=rep, rep=rep, cell_key=config, config=config, fs="ext4", mkfs_options=[],
        mount_options="", workload="fs_mark", params={"files": 100}, status="ok",
        provenance={"monitors": {"offcpu": {"role": "tracer", "facts": {"window_s": 10.0}}}},
        metrics=metrics,
    )  # fmt: skip


def test_a_mechanism_that_differs_is_named_first_and_one_that_does_not_is_not() -> None:
    rng = random.Random(3)
    trials = []
    for rep in range(1, 5):
        for config, flushes, journal in (("ext4", 1.0, 2.0), ("ext4 sync", 3.0, 4.0)):
            noise = lambda: 1 + rng.uniform(-0.02, 0.02)  # noqa: E731
            trials.append(
                _trial(
                    config,
                    rep,
                    {
                        "flushes_per_fsync": flushes * noise(),
                        "offcpu_journal_s": journal * noise(),
                        "workload_cpu_user_s": 0.5 * noise(),  # the same in both
                    },
                    100.0,  # 1000 files in the 10 s window
                )
            )
    (found,) = explain(trials, {"fs_mark": "files_per_s"}, Design())
    assert (found.a, found.b, found.per, found.n) == ("ext4", "ext4 sync", "file", (4, 4))
    named = [m.metric for m in found.named]
    assert set(named) == {"flushes_per_fsync", "offcpu_journal_s"}
    assert named[0] == "flushes_per_fsync"  # 3x ranks above the journal's 2x
    assert "workload_cpu_user_s" not in named
    first = found.mechanisms[0]
    assert first.ratio is not None and 2.5 < first.ratio < 3.5
    # The gap: 2 ms of journal wait per file more (4 s - 2 s over 1000 files), all of it
    # explained by the decided journal part (CPU user is the same on both sides).
    assert found.gap is not None and abs(found.gap - 0.002) < 0.0003
    assert found.explained is not None and 0.9 < found.explained < 1.1
    assert json.dumps(found.as_dict())


def test_identical_configs_name_nothing() -> None:
    rng = random.Random(5)
    trials = [
        _trial(config, rep, {"flushes_per_fsync": 2 * (1 + rng.gauss(0, 0.05))}, 100.0)
        for rep in range(1, 5)
        for config in ("a", "b")
    ]
    (found,) = explain(trials, {"fs_mark": "files_per_s"}, Design())
    assert found.named == []
    assert {m.kind for m in found.mechanisms} <= {"equivalent", "undecided"}


def test_a_tiny_difference_decided_on_a_count_that_barely_varies_is_not_named() -> None:
    """An A/A pair once had device bytes per byte asked 9.100 against 9.114 in every
    trial (0.15% apart, decided): real, inside the margin, and no reason for anything.
    The same count 3x apart is named."""
    rng = random.Random(7)
    for times, verdict in ((1.0015, "equivalent"), (3.0, "different")):
        trials = [
            _trial(
                config,
                rep,
                {"dev_bytes_per_asked_byte": 9.1 * scale * (1 + rng.uniform(-1e-4, 1e-4))},
                100.0,
            )
            for rep in range(1, 6)
            for config, scale in (("a", 1.0), ("b", times))
        ]
        (found,) = explain(trials, {"fs_mark": "files_per_s"}, Design())
        (mechanism,) = found.mechanisms
        assert mechanism.kind == "order", mechanism  # decided either way
        assert mechanism.verdict == verdict, mechanism
        assert (found.named != []) == (verdict == "different")
    # A count the same in every trial of each config, apart by less than the margin.
    trials = [
        _trial(config, rep, {"flushes_per_fsync": value}, 100.0)
        for rep in range(1, 5)
        for config, value in (("a", 2.0), ("b", 2.02))
    ]
    (found,) = explain(trials, {"fs_mark": "files_per_s"}, Design())
    assert [m.verdict for m in found.mechanisms] == ["equivalent"] and found.named == []


def test_a_mechanism_mostly_zero_keeps_its_ratio_interval_at_or_above_zero() -> None:
    """Off-CPU time on flushes seen in one trial of each config only: compared on the
    raw scale, whose interval of the ratio would reach below 0 (a guest saw 522x
    (-622-1,666)); a time's ratio cannot."""
    waits = {"a": (0.0, 0.0, 0.001), "b": (0.0, 0.9, 0.0)}
    trials = [
        _trial(config, rep, {"offcpu_flush_s": waits[config][rep - 1]}, 100.0)
        for rep in range(1, 4)
        for config in ("a", "b")
    ]
    (found,) = explain(trials, {"fs_mark": "files_per_s"}, Design())
    (flush,) = [m for m in found.mechanisms if m.metric == "offcpu_flush_s"]
    assert flush.ratio is not None and flush.ratio > 100 and flush.verdict == "undecided"
    assert flush.ci is not None and flush.ci[0] == 0.0 < flush.ci[1]


def test_top_symbols_are_leaf_frames_shared() -> None:
    maps = [{"fs_mark;a;b": 3.0, "fs_mark;c;b": 1.0, "fs_mark;d": 4.0}]
    assert top_symbols(maps) == [("b", 0.5), ("d", 0.5)]


def test_a_tracer_that_never_exits_is_said_with_its_state() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        os.kill(child.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 10
        while not waiting(child.pid).startswith("state T") and time.monotonic() < deadline:
            time.sleep(0.01)
        assert waiting(child.pid) == "state T, in do_signal_stop"  # stopped: where, said
    finally:
        child.kill()
        child.wait()
    assert waiting(child.pid) == "gone"


def test_the_profile_difference_names_the_code_only_one_config_runs() -> None:
    write, fsync = "fio;do_syscall_64;vfs_write", "fio;do_syscall_64;vfs_fsync"
    ext4 = [
        {
            f"{write};ext4_buffered_write_iter;memcpy": 6.0,
            f"{fsync};ext4_sync_file;jbd2_log_wait_commit;_raw_spin_lock": 4.0,
        }
    ]
    btrfs = [
        {
            f"{write};btrfs_buffered_write;memcpy": 5.0,
            f"{fsync};btrfs_sync_file;btrfs_sync_log;_raw_spin_lock": 5.0,
        }
    ]
    assert inclusive(ext4)["do_syscall_64"] == 1.0 and inclusive(ext4)["ext4_sync_file"] == 0.4
    # memcpy, spin locks and the syscall path are on both sides alike: not among them.
    assert profile_diff(ext4, btrfs, 4) == [
        ("ext4_buffered_write_iter", 0.6, 0.0),
        ("btrfs_buffered_write", 0.0, 0.5),
        ("btrfs_sync_file", 0.0, 0.5),
        ("btrfs_sync_log", 0.0, 0.5),
    ]


def test_the_raw_scale_ratio_interval_stops_at_zero_only_for_values_never_below_it() -> None:
    """The clip is the pair's (pairs.Look), for every metric with zeros: one whose values
    go below 0 keeps its interval as computed."""
    from fsbench.analysis.design import Design
    from fsbench.analysis.pairs import RAW, Side, _looks

    def low_end(a: tuple[float, ...], b: tuple[float, ...]) -> float:
        (look,) = _looks(Side("a", a), Side("b", b), Design(), RAW)
        interval = look.interval(RAW, 0.95)
        assert interval is not None
        return interval[0]

    assert low_end((0.0, 0.0, 0.001), (0.0, 0.9, 0.0)) == 0.0
    assert low_end((0.0, -0.2, 0.201), (0.0, 0.9, -0.5)) < 0
