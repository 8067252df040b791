"""The crash workload without a VM: each pattern run in a directory until a simulated
power cut (an acknowledgement that raises), checked as the guest would check it, and
damaged on purpose to prove each kind of damage is seen; the seeds, the cut moments,
the replay command, the counts, Fisher's test and the safety lines of the report."""

from __future__ import annotations

import json
import os
import random
import shlex
from pathlib import Path
from typing import Any

import pytest

from fsbench.analysis import stats
from fsbench.analysis.crash_evidence import crash_text
from fsbench.analysis.rows import Row
from fsbench.plan.model import FsConfig, parse_fs_spec
from fsbench.reports.safety import safety_lines
from fsbench.store.records import TrialRecord
from fsbench.vm.crash import host, logwrites, patterns
from fsbench.vm.crash.patterns import PATTERNS, READY, read_acks
from fsbench.vm.qemu import Machine


class PowerCut(Exception):
    pass


def _run(pattern: str, root: Path, seed: int, acks_before_cut: int, size: int = 8) -> list[dict]:
    """The pattern until its `acks_before_cut`-th acknowledgement after READY; the acks
    as the host would have received them (JSON lines)."""
    log: list[str] = []

    def ack(what: dict[str, Any]) -> None:
        log.append(json.dumps(what) + "\n")
        if len(log) > acks_before_cut:
            raise PowerCut

    with pytest.raises(PowerCut):
        PATTERNS[pattern].run(root, seed, ack, size)
    acks = read_acks("".join(log))
    assert acks[0] == {READY: True}
    return acks


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_every_pattern_holds_its_promise_without_a_crash(tmp_path: Path, name: str) -> None:
    acks = _run(name, tmp_path, seed=7, acks_before_cut=40)
    verdict = PATTERNS[name].check(tmp_path, 7, acks, 8)
    assert verdict.acked > 0
    assert (verdict.lost, verdict.empty, verdict.mixed, verdict.damage) == (0, 0, 0, [])


def test_fsync_append_sees_a_lost_record(tmp_path: Path) -> None:
    acks = _run("fsync-append", tmp_path, 3, 20)
    log = tmp_path / "log"
    data = log.read_bytes()
    log.write_bytes(data[: 10 * patterns.RECORD])  # the last acknowledged records gone
    verdict = PATTERNS["fsync-append"].check(tmp_path, 3, acks, 8)
    assert verdict.acked == 20 and verdict.lost == 10
    assert verdict.damage[0].detail.startswith("record 10 of 20")
    log.unlink()  # the whole log gone: every acknowledged record with it
    verdict = PATTERNS["fsync-append"].check(tmp_path, 3, acks, 8)
    assert verdict.lost == 20 and [d.kind for d in verdict.damage] == ["missing"]


@pytest.mark.parametrize(
    ("damage", "kind"),
    [(b"", "empty"), (b"\0" * 300, "mixed"), (None, "missing")],
)
def test_replace_rename_sees_empty_mixed_and_missing_files(
    tmp_path: Path, damage: bytes | None, kind: str
) -> None:
    acks = _run("replace-rename", tmp_path, 5, 30)
    victim = tmp_path / "f002"
    if damage is None:
        victim.unlink()
    else:
        victim.write_bytes(damage)
    verdict = PATTERNS["replace-rename"].check(tmp_path, 5, acks, 8)
    assert [(d.kind, d.path) for d in verdict.damage] == [(kind, "f002")]
    assert verdict.acked == 8  # without fsync only the files' existence is promised


def test_replace_rename_fsync_sees_an_older_version(tmp_path: Path) -> None:
    acks = _run("replace-rename-fsync", tmp_path, 9, 30)
    last = {a["f"]: a["v"] for a in acks if "f" in a}
    name, version = next((n, v) for n, v in last.items() if v >= 1)
    size = len((tmp_path / name).read_bytes()) - 60
    (tmp_path / name).write_bytes(patterns.content(9, name, version - 1, max(size, 1)))
    verdict = PATTERNS["replace-rename-fsync"].check(tmp_path, 9, acks, 8)
    assert verdict.lost == 1 and verdict.damage[0].path == name
    # Without fsync the same older version is a complete one: no damage.
    assert PATTERNS["replace-rename"].check(tmp_path, 9, acks, 8).damage == []


def test_create_tree_promises_nothing_before_sync_and_everything_after(tmp_path: Path) -> None:
    early = tmp_path / "early"
    early.mkdir()
    acks = _run("create-tree", early, 2, 0)  # cut right after READY: the untar never synced
    assert PATTERNS["create-tree"].check(early, 2, acks, 8).acked == 0
    late = tmp_path / "late"
    late.mkdir()
    acks = _run("create-tree", late, 2, 5)
    victim = next(p for p in (late / "tree").rglob("t*") if p.is_file())
    victim.write_bytes(victim.read_bytes()[:-1])
    verdict = PATTERNS["create-tree"].check(late, 2, acks, 8)
    assert verdict.acked == 8 and verdict.mixed == 1


def test_sqlite_commit_sees_a_lost_commit_and_a_corrupt_database(tmp_path: Path) -> None:
    import sqlite3

    acks = _run("sqlite-commit", tmp_path, 4, 15)
    db = sqlite3.connect(tmp_path / "db.sqlite")
    db.execute("DELETE FROM t WHERE id = 3")
    db.commit()
    db.close()
    verdict = PATTERNS["sqlite-commit"].check(tmp_path, 4, acks, 8)
    assert verdict.acked == 15 and verdict.lost == 1
    for name in os.listdir(tmp_path):
        (tmp_path / name).write_bytes(b"\0" * 4096)
    broken = PATTERNS["sqlite-commit"].check(tmp_path, 4, acks, 8)
    assert broken.lost >= 15 and broken.damage[0].kind == "corrupt"


def test_contents_are_a_function_of_the_seed_and_never_parse_when_torn() -> None:
    a = patterns.content(1, "f001", 3, 1000)
    assert a == patterns.content(1, "f001", 3, 1000) != patterns.content(2, "f001", 3, 1000)
    assert patterns.parse(a, "f001") == 3
    assert patterns.parse(a[:-1], "f001") is None
    assert patterns.parse(a[:60] + b"\0" * (len(a) - 60), "f001") is None
    assert patterns.parse(a, "f002") is None


def test_a_cut_line_is_not_an_acknowledgement() -> None:
    assert read_acks('{"ready":true}\n{"n":0}\n{"n":1') == [{"ready": True}, {"n": 0}]


def test_case_seeds_and_cut_moments_are_reproducible_and_within_the_window() -> None:
    seeds = [host.case_seed(1, 1, i) for i in range(50)]
    assert seeds == [host.case_seed(1, 1, i) for i in range(50)]
    assert len(set(seeds)) == 50 and host.case_seed(2, 1, 0) != seeds[0]
    cuts = [host.cut_after(s, 7.0) for s in seeds]
    assert cuts == [host.cut_after(s, 7.0) for s in seeds]
    assert all(host.MIN_CUT <= c <= 7.0 for c in cuts) and max(cuts) - min(cuts) > 3


def test_the_replay_command_gives_the_same_config_and_case_back() -> None:
    config = FsConfig(type="ext4", mkfs=["-O", "^has_journal"], mount="data=writeback,noatime")
    assert parse_fs_spec(config.spec) == [config]
    record = TrialRecord(
        seq=0, rep=1, step=0, chain="", cell_key="k", config=config.display, fs="ext4",
        mkfs_options=[], mount_options="", workload="crash", status="ok",
        params={"pattern": "replace-rename", "crashes": 20, "seed": 1, "window": 10.0},
    )  # fmt: skip
    command = host.replay_command(config, record, 12345)
    assert "--set crashes=1" in command and "--set replay=12345" in command
    argv = shlex.split(command)
    assert parse_fs_spec(argv[argv.index("--fs") + 1]) == [config]


def _crash(check: dict[str, Any]) -> host.Crash:
    return host.Crash(0, 1, 1.0, [], check)


def test_fsck_errors_count_only_what_journal_recovery_does_not_explain() -> None:
    pending = {"clean": False, "recovery_pending": True}
    clean = {"clean": True, "recovery_pending": False}
    dirty = {"clean": False, "recovery_pending": False}
    assert not host.fsck_error({"fsck_before": pending, "fsck_after": clean})
    assert host.fsck_error({"fsck_before": pending, "fsck_after": dirty})
    assert host.fsck_error({"fsck_before": dirty})
    assert host.damaged({"mount_error": "bad superblock"})
    # A crash fails when the disk or its volatile-cache state does.
    lost = {"verdict": {"lost": 1}}
    assert _crash({"verdict": {}, "cache": lost}).failing()
    assert not _crash({"verdict": {}, "cache": {"skipped": "no flush point"}}).failing()


def test_the_counts_over_crashes() -> None:
    ok = _crash({"verdict": {"acked": 10, "lost": 0, "empty": 0, "mixed": 0}, "mount_seconds": 0.1})
    bad = _crash(
        {"verdict": {"acked": 10, "lost": 2, "empty": 3, "mixed": 1}, "mount_seconds": 0.3}
    )
    got = {m.name: m.value for m in host.metrics([ok, bad, ok])}
    assert got["crashes"] == 3 and got["damaged_crashes"] == 1
    assert (got["acked_lost"], got["files_empty"], got["files_mixed"]) == (2, 3, 1)
    assert got["acked_ops"] == 30 and got["mount_seconds"] == pytest.approx(0.5 / 3)
    assert "cache_states" not in got  # no write log: no volatile-cache counts
    cached = _crash({**ok.check, "cache": {"verdict": {"lost": 2}, "fsck_before": {
        "clean": False, "recovery_pending": False}}})  # fmt: skip
    got = {m.name: m.value for m in host.metrics([cached, ok])}
    assert (got["cache_states"], got["cache_damaged"], got["cache_acked_lost"]) == (1, 1, 2)
    assert got["cache_fsck_errors"] == 1 and got["damaged_crashes"] == 0


def test_fisher_exact_matches_the_reference_values() -> None:
    # scipy.stats.fisher_exact: [[2,0],[0,2]] -> 0.3333; [[7,13],[0,20]] -> 0.008316
    assert stats.fisher_exact(2, 2, 0, 2) == pytest.approx(1 / 3)
    assert stats.fisher_exact(7, 20, 0, 20) == pytest.approx(0.008316008)
    assert stats.fisher_exact(3, 8, 1, 9) == pytest.approx(0.294117647)
    assert stats.fisher_exact(0, 0, 1, 2) == 1.0


def _row(config: str, workload: str, metric: str, values: list[float], **params: Any) -> Row:
    mean = sum(values) / len(values)
    return Row(
        config=config, fs="ext4", workload=workload, chain="", knobs={}, params=params,
        metric=metric, unit="s" if metric == "seconds" else "count",
        better="lower", status="ok", message="", n=len(values), mean=mean, sd=None,
        ci95=None, cv=None, values=values, trials={"ok": len(values)}, headline=0,
    )  # fmt: skip


def test_safety_lines_put_speed_and_crash_results_side_by_side() -> None:
    rows = [
        _row("ordered", "untar", "seconds", [10.0, 10.2, 9.9]),
        _row("writeback", "untar", "seconds", [9.2, 9.3, 9.1]),
        _row("ordered", "crash", "crashes", [20], pattern="replace-rename"),
        _row("ordered", "crash", "damaged_crashes", [0], pattern="replace-rename"),
        _row("writeback", "crash", "crashes", [20], pattern="replace-rename"),
        _row("writeback", "crash", "damaged_crashes", [7], pattern="replace-rename"),
        _row("writeback", "crash", "files_empty", [31], pattern="replace-rename"),
    ]
    ordered, writeback = safety_lines(rows)
    assert ordered.baseline and ordered.speed == [] and not ordered.damaged
    assert ordered.crash == [
        "replace-rename: nothing lost in 20 crashes; volatile-cache states not tested"
    ]
    assert writeback.speed[0].startswith("untar: 9% faster (Welch p"), writeback.speed
    assert writeback.damaged
    assert writeback.crash == [
        "replace-rename: 7/20 crashes damaged (31 files empty); 0/20 on ordered, "
        "Fisher p = 0.008; volatile-cache states not tested"
    ]
    assert safety_lines([r for r in rows if r.workload != "crash"]) == []
    cache = [
        _row("ordered", "crash", "cache_states", [20], pattern="fsync-append"),
        _row("ordered", "crash", "cache_damaged", [1], pattern="fsync-append"),
        _row("ordered", "crash", "cache_acked_lost", [3], pattern="fsync-append"),
    ]
    text, damaged = crash_text("fsync-append", [*rows[2:4], *cache])
    assert damaged and text == (
        "fsync-append: nothing lost in 20 crashes; volatile cache: 1/20 states damaged "
        "(3 acknowledged ops lost)"
    )


def test_the_ack_port_is_a_virtio_serial_port_into_a_host_file(tmp_path: Path) -> None:
    m = Machine(
        kernel=tmp_path / "k", initrd=tmp_path / "i", root_overlay=tmp_path / "r",
        scratch=tmp_path / "s", share=tmp_path, console_log=tmp_path / "c",
        ports=(("fsbench.acks", tmp_path / "acks.log"),),
    )  # fmt: skip
    argv = m.argv()
    assert "virtio-serial-pci,id=vser0" in argv
    assert f"file,id=port0,path={tmp_path / 'acks.log'}" in argv
    assert "virtserialport,bus=vser0.0,chardev=port0,name=fsbench.acks" in argv
    assert "virtio-serial-pci,id=vser0" not in Machine(
        kernel=tmp_path, initrd=tmp_path, root_overlay=tmp_path, scratch=None,
        share=tmp_path, console_log=tmp_path,
    ).argv()  # fmt: skip


def _log(path: Path, entries: list[tuple[int, int, int, bytes]], sectorsize: int = 512) -> None:
    """A dm-log-writes log in the kernel's format: (sector, sectors, flags, data or mark)."""
    out = bytearray(logwrites.SUPER.pack(logwrites.MAGIC, 1, len(entries), sectorsize))
    out += bytes(sectorsize - len(out))
    for sector, sectors, flags, data in entries:
        mark = data if flags & logwrites.MARK else b""
        head = logwrites.ENTRY.pack(sector, sectors, flags, len(data)) + mark
        out += head + bytes(sectorsize - len(head))
        if not flags & (logwrites.MARK | logwrites.DISCARD):
            out += data
    path.write_bytes(bytes(out))


def test_a_volatile_cache_state_from_the_kernels_log_format(tmp_path: Path) -> None:
    W, F, M = 0, logwrites.FLUSH, logwrites.MARK
    log = tmp_path / "log"
    _log(
        log,
        [
            (0, 1, W, b"A" * 512),  # the filesystem before the pattern
            (0, 0, F, b""),
            (0, 0, M, b"ready"),
            (1, 1, W, b"B" * 512),
            (0, 0, F, b""),  # flush point 4: B durable
            (0, 0, M, b"ack-1"),
            (2, 2, W, b"C" * 1024),  # pending: a volatile cache may or may not have them
            (4, 1, W, b"D" * 512),
            (0, 0, F, b""),
            (0, 0, M, b"ack-2"),
        ],
    )
    sectorsize, entries = logwrites.read_log(str(log))
    assert sectorsize == 512 and [e.mark for e in entries if e.mark] == ["ready", "ack-1", "ack-2"]
    states = set()
    for seed in range(40):
        state = logwrites.choose(entries, random.Random(seed))
        assert state is not None
        # A flush point, or the log's end as the cut left it (nothing after it).
        assert entries[state.point].durable_point or (state.point, state.pending) == (9, 0)
        assert state.point >= 2  # never before the pattern's setup
        states.add((state.point, tuple(state.subset)))
        if state.point == 4:
            assert state.pending == 2 and set(state.subset) <= {6, 7} and state.acked == 0
        if state.point == 9:
            assert state.acked == 2  # both marks are in the log: both promised
    assert {p for p, _ in states} == {4, 8, 9} and len(states) > 3
    target = tmp_path / "disk"
    target.write_bytes(bytes(512 * 8))
    state = logwrites.State(point=4, subset=[7], pending=2, acked=0)
    logwrites.replay(str(log), entries, 512, state, str(target))
    disk = target.read_bytes()
    assert disk[:1024] == b"A" * 512 + b"B" * 512
    assert disk[1024:2048] == bytes(1024)  # C stayed in the lost cache
    assert disk[2048:2560] == b"D" * 512
    acks = [{"ready": True}, {"n": 0}, {"n": 1}]
    assert logwrites.marked_acks(acks, logwrites.State(8, [], 0, 1)) == acks[:2]


def test_without_barriers_the_only_state_is_the_log_as_the_cut_left_it(tmp_path: Path) -> None:
    """A filesystem mounted with barrier=0 never flushes: its writes after mkfs never reach
    the log (dm-log-writes logs a write once a flush covers it), only the marks of its
    acknowledgements do, so the state promises every acknowledged record and holds none."""
    W, F, M = 0, logwrites.FLUSH, logwrites.MARK
    log = tmp_path / "log"
    marks = [(0, 0, M, m) for m in (b"ready", b"ack-0", b"ack-1")]
    _log(log, [(0, 1, W, b"A" * 512), (0, 0, F, b""), *marks])
    entries = logwrites.read_log(str(log))[1]
    for seed in range(5):
        assert logwrites.choose(entries, random.Random(seed)) == logwrites.State(4, [], 0, 2)
    acks = [{"ready": True}, {"n": 0}, {"n": 1}]
    assert logwrites.marked_acks(acks, logwrites.State(4, [], 0, 2)) == acks


def test_a_log_without_setup_or_magic_gives_no_state(tmp_path: Path) -> None:
    log = tmp_path / "log"
    _log(log, [(0, 1, 0, b"A" * 512), (0, 0, logwrites.FLUSH, b"")])
    assert logwrites.choose(logwrites.read_log(str(log))[1], random.Random(1)) is None
    log.write_bytes(bytes(4096))
    assert logwrites.read_log(str(log)) == (512, [])


def test_the_mark_ioctl_is_the_kernels_dm_target_msg() -> None:
    assert logwrites._DM_IOCTL.size == 312  # sizeof(struct dm_ioctl)
    assert logwrites._DM_TARGET_MSG == 0xC138FD0E  # DM_TARGET_MSG from <linux/dm-ioctl.h>
    assert " " not in logwrites.ACK_MARK  # the kernel splits a message at spaces


def test_an_ad_hoc_crash_run_plans_no_warmup_and_one_repetition() -> None:
    from fsbench.cli import planflags

    def built(*names: str) -> Any:
        flags = planflags.PlanFlags(fs=["ext4"], workload=list(names), target_kind="vm")
        return planflags.build(flags).plan

    alone = built("crash")
    assert alone.warmup == 0 and alone.reps == 1
    beside = built("untar", "crash")  # untar warms: the plan keeps its warm-up round
    assert beside.warmup == 1


def test_a_count_reads_with_its_n_in_rows_and_tables() -> None:
    from fsbench.analysis.rows import build_rows
    from fsbench.reports.tables import fmt_value
    from fsbench.store.records import MetricRecord

    def trial(seq: int, rep: int, damaged: int) -> TrialRecord:
        return TrialRecord(
            seq=seq, rep=rep, step=0, chain="", cell_key="k", config="ext4", fs="ext4",
            mkfs_options=[], mount_options="", workload="crash", status="ok",
            params={"pattern": "replace-rename", "crashes": 5},
            metrics=[MetricRecord("damaged_crashes", damaged, "count", "lower")],
            provenance={"over": {"n": 5, "of": "crashes"}},
        )  # fmt: skip

    (row,) = build_rows([trial(0, 1, 2), trial(1, 2, 1)])
    assert row.over == {"n": 10, "of": "crashes"} and row.as_dict()["over"]["n"] == 10
    assert fmt_value(row) == "3 (10 crashes)"
    plain = trial(0, 1, 2)
    plain.provenance = {}
    assert build_rows([plain])[0].over is None


def test_counts_out_of_n_are_judged_by_fishers_exact_test() -> None:
    from fsbench.analysis.design import Design
    from fsbench.analysis.verdicts import decide_rows

    def damaged(config: str, k: int, n: int) -> Row:
        row = _row(config, "crash", "damaged_crashes", [k])
        row.over = {"n": n, "of": "crashes"}
        return row

    clear = decide_rows([("ordered", damaged("ordered", 0, 20)), ("wb", damaged("wb", 7, 20))],
                        Design())  # fmt: skip
    assert clear is not None and clear.kind == "order" and clear.best == "ordered"
    (pair,) = clear.pairs
    assert pair.test == "Fisher" and pair.p == pytest.approx(0.008316008)
    assert "Fisher's exact test p = 0.008" in clear.text
    close = decide_rows([("a", damaged("a", 1, 5)), ("b", damaged("b", 2, 5))], Design())
    assert close is not None and close.kind == "undecided" and close.pairs[0].test == "Fisher"
    # Without N (an older store, or a workload without events) it stays Welch.
    plain = decide_rows([("a", _row("a", "crash", "damaged_crashes", [1, 2])),
                         ("b", _row("b", "crash", "damaged_crashes", [5, 6]))],
                        Design())  # fmt: skip
    assert plain is not None and plain.pairs[0].test == "Welch"


def test_a_table_of_counts_out_of_n_states_fishers_rule() -> None:
    from fsbench.reports.tables import build_tables

    rows = []
    for config, k in (("ordered", 0), ("wb", 7)):
        row = _row(config, "crash", "damaged_crashes", [k], pattern="replace-rename")
        row.over = {"n": 20, "of": "crashes"}
        rows.append(row)
    (table,) = build_tables(rows)
    assert "Fisher's exact test" in table.legend and table.verdicts[0] is not None
    assert table.verdicts[0].pairs[0].test == "Fisher" and table.verdicts[0].kind == "order"
    seconds = [_row(c, "untar", "seconds", [1.0, 1.1]) for c in ("a", "b")]
    assert "Fisher" not in build_tables(seconds)[0].legend
    assert "Welch" in build_tables(seconds)[0].legend


def test_a_kept_case_shows_what_its_volatile_cache_state_lost() -> None:
    from fsbench.reports.html.safety import safety_section

    crash = _crash({"verdict": {"acked": 5}, "fsck_before": {"clean": True, "exit": 0,
                    "recovery_pending": False, "output": ""}})  # fmt: skip
    crash.check["cache"] = {
        "verdict": {
            "acked": 3,
            "lost": 2,
            "damage": [{"kind": "lost", "path": "log", "detail": "record 1 of 3 acknowledged"}],
        },  # fmt: skip
        "fsck_after": {"clean": True, "exit": 0, "recovery_pending": False, "output": ""},
    }
    assert crash.failing()
    record = TrialRecord(
        seq=0, rep=1, step=0, chain="", cell_key="k", config="ext4", fs="ext4",
        mkfs_options=[], mount_options="", workload="crash", status="ok",
        params={"pattern": "fsync-append", "crashes": 1},
    )  # fmt: skip
    replay = host.replay_command(FsConfig(type="ext4"), record, crash.seed)
    record.provenance = {"crash": {"pattern": "fsync-append", "failing": [crash.kept(replay)]}}
    rows = [_row("ext4", "crash", "damaged_crashes", [0], pattern="fsync-append")]
    html = safety_section(rows, [record])
    assert "Damage in the volatile-cache state:" in html
    assert "record 1 of 3 acknowledged" in html and "volatile-cache state: 2 lost" in html
