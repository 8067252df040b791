"""The per-second series charts: from stored trials (provenance `series` and `steady`) to
PNG and SVG, counted repetitions only, steady state marked; the scale_to_mem sweep's
axis; the HTML page's over-time section, read from the store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from matplotlib import rc_context

from fsbench.reports import charts, html
from fsbench.reports.charts import series as sc
from fsbench.reports.charts.style import STYLE
from fsbench.store.records import MetricRecord, TrialRecord
from fsbench.store.results import Store
from tests.unit.test_reports_charts import PNG_MAGIC, assert_valid, make_row

RULE = "3 s window: spread <= 10% or slope <= 0.1% of the mean per s"


def stored_series(level: float, seconds: int = 12, stall: int | None = None) -> dict[str, Any]:
    t = [float(i) for i in range(seconds)]
    # ramp-up over 3 s, then flat; a stall second where asked
    mib = [level * min(1.0, (i + 1) / 3) * (0.2 if i == stall else 1.0) for i in range(seconds)]
    return {
        "mib_s": {"unit": "MiB/s", "better": "higher", "t": t, "v": mib},
        "write_clat_p50_us": {"unit": "us", "better": "lower", "t": t, "v": [80.0] * seconds},
        "write_clat_p99_us": {
            "unit": "us",
            "better": "lower",
            "t": t,
            "v": [900.0 * (20 if i == stall else 1) for i in range(seconds)],
        },
    }


def steady(start: float | None, judged: bool = True) -> dict[str, Any]:
    return {
        "series": "mib_s",
        "reached": start is not None,
        "start_s": start,
        "window_s": 3,
        "mean": 100.0 if start is not None else None,
        "rule": RULE,
        "judged": judged,
    }


def trial(
    seq: int,
    rep: int,
    config: str,
    level: float,
    start: float | None = 2.0,
    status: str = "ok",
    stall: int | None = None,
    **params: Any,
) -> TrialRecord:
    p = {"profile": "seq-write", "size": "1G", **params}
    return TrialRecord(
        seq=seq,
        rep=rep,
        cell_key=f"{config}|fio|{json.dumps(p)}",
        config=config,
        fs=config.split()[0],
        mkfs_options=[],
        mount_options="",
        workload="fio",
        params=p,
        status=status,
        provenance={"series": stored_series(level, stall=stall), "steady": steady(start)}
        if status == "ok"
        else {},
        metrics=[MetricRecord("write_mib_s", level, "MiB/s", "higher")] if status == "ok" else [],
        id=seq + 1,
    )


def trials() -> list[TrialRecord]:
    out = []
    seq = 0
    for rep in (0, 1, 2):
        for config, level in (("ext4", 400.0), ("xfs", 500.0)):
            out.append(
                trial(seq, rep, config, level, start=2.0 + rep, stall=5 if rep == 2 else None)
            )
            seq += 1
    out.append(trial(seq, 3, "xfs", 500.0, status="failed"))
    return out


def test_counted_trials_only() -> None:
    got = charts.trial_series(trials())
    # the warm-up (rep 0) and the failed trial are left out, as the tables leave them out
    assert [(ts.config, ts.rep) for ts in got] == [
        ("ext4", 1),
        ("xfs", 1),
        ("ext4", 2),
        ("xfs", 2),
    ]
    assert got[0].steady is not None and got[0].steady["start_s"] == 3.0


def test_renders_png_and_svg_per_cell(tmp_path: Path) -> None:
    made = charts.series_chart_set(charts.trial_series(trials()), tmp_path, formats=("png", "svg"))
    assert len(made) == 1
    (chart,) = made
    assert chart.kind == "series" and chart.workload == "fio"
    assert_valid(list(chart.paths), 2)
    png = chart.path("png")
    assert png is not None and png.read_bytes()[:8] == PNG_MAGIC


def test_a_cell_per_params_and_short_series_skipped(tmp_path: Path) -> None:
    ts = charts.trial_series(
        [trial(0, 1, "ext4", 1.0, size="1G"), trial(1, 1, "ext4", 1.0, size="2G")]
    )
    short = charts.TrialSeries(
        "ext4", "", "fio", {"profile": "seq-write", "size": "4G"}, {}, 1,
        {"mib_s": {"unit": "MiB/s", "better": "higher", "t": [0.0, 1.0], "v": [5.0, 5.0]}},
    )  # fmt: skip
    made = charts.series_chart_set([*ts, short], tmp_path, formats=("svg",))
    assert [c.title for c in made] == [
        "fio, size=1G: per second",
        "fio, size=2G: per second",
    ]  # 2 s of series is no curve worth drawing


def test_steady_state_marked_and_told(tmp_path: Path) -> None:
    group = charts.trial_series(trials())
    group.append(
        charts.TrialSeries(
            "btrfs", "", "fio", dict(group[0].params), {}, 1,
            stored_series(300.0), steady(None),
        )
    )  # fmt: skip
    colors = {"ext4": "#0072B2", "xfs": "#E69F00", "btrfs": "#009E73"}
    with rc_context(STYLE):
        fig, _ = sc.draw_series(group, "", colors)
    throughput, latency = fig.axes[0], fig.axes[1]
    marks = [
        (line.get_color(), list(line.get_xdata()))
        for line in throughput.lines
        if line.get_marker() == "v"
    ]
    # a ▼ where each counted repetition's steady state began, in its config's colour
    assert sorted(marks) == sorted(
        [("#0072B2", [3.0]), ("#0072B2", [4.0]), ("#E69F00", [3.0]), ("#E69F00", [4.0])]
    )
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "ext4: steady from 3-4 s (2/2 reps)" in legend
    assert "btrfs: never steady (1 reps)" in legend
    assert {"p50", "p99", "steady state began"} <= set(legend)
    assert throughput.get_yscale() == "linear" and latency.get_yscale() == "log"
    assert latency.get_title(loc="left") == "write_clat_us: p50, p99"


def test_too_short_to_judge_is_said() -> None:
    runs = [
        charts.TrialSeries("ext4", "", "fio", {}, {}, 1, stored_series(1.0), steady(None, False))
    ]
    assert sc._steady_label("ext4", runs) == "ext4: too short to judge steady state"


def test_raw_and_rolling_mean() -> None:
    assert sc.rolling_mean([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]) == pytest.approx(
        [2.0, 2.5, 3.0, 4.0, 4.5, 5.0]
    )
    t, mean = sc.mean_by_second([([0.0, 1.0, 2.0], [1.0, 2.0, 3.0]), ([0.0, 1.0], [3.0, 4.0])])
    assert (t, mean) == ([0.0, 1.0, 2.0], [2.0, 3.0, 3.0])


def test_engine_series_panels() -> None:
    """The engine's names: ops_per_s the steady series, mb_per_s not drawn beside it,
    lat_p50_us and lat_p99_us one family."""
    t = [float(i) for i in range(5)]
    series = {
        "ops_per_s": {"unit": "ops/s", "better": "higher", "t": t, "v": [9.0] * 5},
        "mb_per_s": {"unit": "MB/s", "better": "higher", "t": t, "v": [1.0] * 5},
        "lat_p50_us": {"unit": "us", "better": "lower", "t": t, "v": [2.0] * 5},
        "lat_p99_us": {"unit": "us", "better": "lower", "t": t, "v": [400.0] * 5},
    }
    verdict = {**steady(1.0), "series": "ops_per_s"}
    group = [charts.TrialSeries("xfs", "", "fileserver", {}, {}, 1, series, verdict)]
    assert [(p.title, p.names, p.log) for p in sc._panels(group)] == [
        ("ops_per_s", ["ops_per_s"], False),
        ("lat_us: p50, p99", ["lat_p50_us", "lat_p99_us"], True),
    ]
    # no steady series (threaded-io's phases): every throughput series its own panel
    group = [charts.TrialSeries("xfs", "", "fileserver", {}, {}, 1, series, None)]
    assert [p.title for p in sc._panels(group)][:2] == ["ops_per_s", "mb_per_s"]


def test_scale_to_mem_sweep_reads_working_set_over_memory(tmp_path: Path) -> None:
    rows = [
        make_row(
            config,
            [v, v * 1.05, v * 0.95],
            "read_mib_s",
            {"threads": threads, "scale_to_mem": f},
            "fio",
            "MiB/s",
            "higher",
        )
        for config, k in (("ext4", 1.0), ("xfs", 1.2))
        for threads in (1, 4)
        for f, v in ((0.5, 3000.0 * k), (2.0, 400.0 * k), (4.0, 300.0 * k))
    ]
    for r in rows:
        r.knobs = {"mem": "256M"}
    # scale_to_mem is the x axis even where another numeric parameter varies too
    assert charts.numeric_sweep(rows) == "scale_to_mem"
    made = charts.line_chart_set(rows, tmp_path, formats=("png",))
    assert [c.title for c in made] == ["fio: read_mib_s by working set / memory"]
    assert_valid(list(made[0].paths), 1)


def test_html_page_draws_the_stored_series(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    rid = store.create_run(
        name="series",
        fsbench_version="0.1.0",
        argv=["fsbench", "run"],
        plan={"scale": "tiny", "reps": 2},
        overrides={},
        schedule=[],
        host={"hostname": "box", "kernel": "6.18.0"},
        target={"kind": "loop", "summary": "loop image"},
    )
    for t in trials():
        t.id = None
        store.record_trials(rid, [t])
    page = html.html_report(store, rid)
    assert "Over time: throughput and latency percentiles per second (1)" in page
    assert 'alt="fio: per second"' in page


def test_pgbench_series_panels() -> None:
    """pgbench's names (workloads/pgbench.py): tps the steady series, lat_p99_ms."""
    t = [float(i) for i in range(6)]
    series = {
        "tps": {"unit": "tx/s", "better": "higher", "t": t, "v": [500.0] * 6},
        "lat_p99_ms": {"unit": "ms", "better": "lower", "t": t, "v": [4.0] * 6},
    }
    verdict = {**steady(2.0), "series": "tps"}
    group = [charts.TrialSeries("ext4", "", "pgbench", {}, {}, 1, series, verdict)]
    assert [(p.title, p.unit, p.log, p.steady) for p in sc._panels(group)] == [
        ("tps", "tx/s", False, True),
        ("lat_ms: p99", "ms", True, False),
    ]
