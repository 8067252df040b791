"""fio's per-second logs (workloads/fio/logs.py) on fixed samples written by fio 3.33
(tests/data/fio_logs): a 2-job seq-write at 40 MiB/s a job (`sw_*`) and a 2-job 3 s
time-based O_DIRECT randrw (`rr_*`), each with its `--output-format=json+` (the whole
run's histogram bins and percentiles, to check the per-second ones against)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from fsbench.workloads.fio import logs
from fsbench.workloads.fio.parse import parse_fio_json

DATA = Path(__file__).resolve().parents[1] / "data" / "fio_logs"


def per_second(prefix: str) -> logs.PerSecond:
    bw = sorted(DATA.glob(f"{prefix}_bw.*.log"))
    hist = sorted(DATA.glob(f"{prefix}_clat_hist.*.log"))
    assert len(bw) == len(hist) == 2
    return logs.read_logs((p.read_text() for p in bw), (p.read_text() for p in hist))


def run_json(prefix: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / f"{prefix}.json").read_text())
    return data


def test_the_options_log_every_second_under_the_directory(tmp_path: Path) -> None:
    opts = dict(logs.log_options(tmp_path))
    assert opts == {
        "write_bw_log": f"{tmp_path}/fsbench",
        "log_avg_msec": "1000",
        "write_hist_log": f"{tmp_path}/fsbench",
        "log_hist_msec": "1000",
    }


@pytest.mark.parametrize(
    "time_ms, second",
    [(999, 0), (1000, 0), (1025, 0), (1899, 0), (1901, 1), (2001, 1), (3500, 2), (40, 0)],
)
def test_the_second_a_line_closes(time_ms: int, second: int) -> None:
    assert logs.second_of(time_ms) == second


def test_bandwidth_sums_the_jobs_per_second() -> None:
    got = per_second("sw")
    assert list(got.mib_s) == ["write"]
    t, v = got.total_mib_s()
    # job 1: 41942, 40960, 41001 KiB/s; job 2: 40960, 41984, 41001
    assert t == [0.0, 1.0, 2.0]
    assert v == pytest.approx([82902 / 1024, 82944 / 1024, 82002 / 1024])
    # the 3.2 s run's last, partial second is not logged by fio
    assert run_json("sw")["jobs"][0]["job_runtime"] > 3000


def test_both_directions_of_a_mixed_run() -> None:
    got = per_second("rr")
    assert sorted(got.mib_s) == ["read", "write"]
    t, v = got.total_mib_s()
    assert t == [0.0, 1.0]  # a 3 s time-based run: its last second is not logged
    assert v[0] == pytest.approx((89200 + 89600 + 87696 + 90224) / 1024)
    for ddir in ("read", "write"):
        ts, p99 = got.percentile_series(ddir, 99.0)
        _, p50 = got.percentile_series(ddir, 50.0)
        assert ts == [0.0, 1.0]
        assert all(0 < a <= b for a, b in zip(p50, p99, strict=True))


def test_bin_values_are_fios_own() -> None:
    """Every bin the logs count is one fio's json+ output names (its plat_idx_to_val), and
    never with more I/Os than the whole run had there."""
    for prefix, ddirs in (("sw", ["write"]), ("rr", ["read", "write"])):
        got = per_second(prefix)
        job = run_json(prefix)["jobs"][0]
        for ddir in ddirs:
            whole = {int(k): c for k, c in job[ddir]["clat_ns"]["bins"].items()}
            logged: dict[int, int] = {}
            for counts in got.hist[ddir].values():
                for value, c in zip(got.bin_values, counts, strict=True):
                    if c:
                        logged[int(value)] = logged.get(int(value), 0) + c
            assert logged and set(logged) <= set(whole), (prefix, ddir)
            assert all(logged[k] <= whole[k] for k in logged)
            # most of the run is in the logs (all but its last, unlogged window)
            assert sum(logged.values()) > 0.5 * sum(whole.values())


def test_percentiles_as_fio_computes_them() -> None:
    """The rule on the whole run's bins gives fio's own JSON percentiles, exactly."""
    for prefix, ddirs in (("sw", ["write"]), ("rr", ["read", "write"])):
        job = run_json(prefix)["jobs"][0]
        for ddir in ddirs:
            clat = job[ddir]["clat_ns"]
            pairs = sorted((int(k), c) for k, c in clat["bins"].items())
            values, counts = [float(k) for k, _ in pairs], [c for _, c in pairs]
            for pct, key in ((50.0, "50.000000"), (99.0, "99.000000"), (99.9, "99.900000")):
                assert logs.percentile(values, counts, pct) == clat["percentile"][key]


def test_one_second_by_hand() -> None:
    # 99 I/Os in bin 100 (100 ns), 1 in bin 1000: p50 = 100 ns, p99 = 100 ns, p99.5 the tail
    counts = [0] * logs.PLAT_NR
    counts[100], counts[1000] = 99, 1
    values = logs.bin_values(logs.PLAT_NR)
    assert logs.percentile(values, counts, 50.0) == 100.0
    assert logs.percentile(values, counts, 99.0) == 100.0
    assert logs.percentile(values, counts, 99.5) == logs.plat_idx_to_val(1000)
    assert logs.percentile(values, [0] * logs.PLAT_NR, 50.0) is None


def test_coarse_and_prio_lines() -> None:
    """log_hist_coarseness=1 (928 bins, pairs merged) and a priority column are read."""
    bins = [0] * (logs.PLAT_NR // 2)
    bins[600] = 7
    text = "1003, 1, 4096, " + ", ".join(map(str, bins)) + "\n"
    text += "2004, 1, 0, 4096, " + ", ".join(map(str, bins)) + "\n"  # time, ddir, prio, bs
    got = logs.read_logs([], [text])
    assert sorted(got.hist["write"]) == [0, 1]
    ts, p50 = got.percentile_series("write", 50.0)
    pair = (logs.plat_idx_to_val(1200) + logs.plat_idx_to_val(1201)) / 2 / 1000
    assert ts == [0.0, 1.0] and p50 == [pytest.approx(pair)] * 2


def test_an_empty_or_foreign_log_gives_nothing() -> None:
    got = logs.read_logs(["", "garbage\n"], ["1000, 1, 4096, 1, 2, 3\n"])
    assert got.total_mib_s() == ([], []) and got.hist == {}


def test_the_last_partial_second_comes_from_fios_totals() -> None:
    """fio logs no partial window: the tail is the totals less the logged seconds, and every
    second's histogram together is then the whole run's, with fio's own percentiles."""
    for prefix in ("sw", "rr"):
        got = per_second(prefix)
        (group,) = parse_fio_json((DATA / f"{prefix}.json").read_text())
        logged = {ddir: sorted(per) for ddir, per in got.mib_s.items()}
        got.add_tail(group.directions)
        for ddir, d in group.directions.items():
            seconds = sorted(got.mib_s[ddir])
            assert seconds == [*logged[ddir], len(logged[ddir])]  # one more: the tail
            # the bytes of every second add up to the run's
            left = d.runtime_ms / 1000 - len(logged[ddir])
            total = sum(got.mib_s[ddir][s] * (1 if s < seconds[-1] else left) for s in seconds)
            assert total * (1 << 20) == pytest.approx(d.io_bytes, rel=1e-9)
            # the histograms of every second add up to the run's
            merged = [sum(c) for c in zip(*got.hist[ddir].values(), strict=True)]
            assert sum(merged) == d.total_ios
            for pct, suffix in ((50.0, "p50"), (99.0, "p99"), (99.9, "p99_9")):
                value = logs.percentile(got.bin_values, merged, pct)
                assert value is not None
                assert value / 1000 == pytest.approx(d.clat_percentiles_us[suffix])
    # the 3.25 s seq-write: 3 logged seconds and a quarter; the 3 s randrw: 2 and a whole one
    sw, rr = per_second("sw"), per_second("rr")
    sw.add_tail(parse_fio_json((DATA / "sw.json").read_text())[0].directions)
    rr.add_tail(parse_fio_json((DATA / "rr.json").read_text())[0].directions)
    assert sw.total_mib_s()[0] == [0.0, 1.0, 2.0, 3.0]
    assert rr.total_mib_s()[0] == [0.0, 1.0, 2.0]
    assert 150 < rr.total_mib_s()[1][2] < 400  # ~170 MiB/s each direction in the others


def test_a_run_under_a_second_is_one_point() -> None:
    (group,) = parse_fio_json((DATA / "sw.json").read_text())
    short = {"write": replace(group.directions["write"], runtime_ms=400)}
    got = logs.read_logs([], [])
    got.add_tail(short)
    t, v = got.total_mib_s()
    assert t == [0.0] and v == [pytest.approx(256 / 0.4)]
    assert got.percentile_series("write", 99.0)[0] == [0.0]
    # a tail under MIN_TAIL_S is no point
    tiny = {"write": replace(group.directions["write"], runtime_ms=3100)}
    got = per_second("sw")
    got.add_tail(tiny)
    assert got.total_mib_s()[0] == [0.0, 1.0, 2.0]
    # its I/Os join the last logged second: every I/O is still in some second
    assert sorted(got.hist["write"]) == [0, 1, 2]
    assert sum(sum(c) for c in got.hist["write"].values()) == group.directions["write"].total_ios


def test_what_fio_holds_of_histograms_stays_bounded() -> None:
    """fio keeps a 15 KB copy per logged window, job and direction until it ends: a long
    many-job run logs its histograms over wider windows."""
    quick = [("numjobs", "1"), ("rw", "randrw"), ("time_based", "1"), ("runtime", "10s")]
    assert logs.hist_interval_s(quick) == 1
    seq = [("numjobs", "4"), ("rw", "write"), ("size", str(2 << 30))]  # 8 GiB: ~82 s guessed
    assert logs.hist_interval_s(seq) == 1
    big = [("numjobs", "64"), ("rw", "randrw"), ("time_based", "1"), ("runtime", "600s")]
    k = logs.hist_interval_s(big)
    assert k == 17 and 64 * 2 * (600 / k) * logs.HIST_ENTRY_BYTES <= logs.HIST_BUDGET
    assert dict(logs.log_options(Path("/x"), k))["log_hist_msec"] == "17000"
    # windows of 2 s: lines closing at ~2 s and ~4 s are windows 0 and 1, at t = 0 and 2
    bins = [0] * logs.PLAT_NR
    bins[300] = 5
    line = ", ".join(map(str, bins))
    got = logs.read_logs([], [f"2004, 0, 4096, {line}\n4010, 0, 4096, {line}\n"], hist_s=2)
    assert sorted(got.hist["read"]) == [0, 1]
    assert got.percentile_series("read", 50.0)[0] == [0.0, 2.0]
