"""Charts: every function writes valid PNG and SVG files and returns their paths."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from fsbench.analysis.rows import Row
from fsbench.analysis.stats import summarize
from fsbench.reports import charts
from fsbench.reports.charts.style import wrap

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def make_row(
    config: str,
    values: list[float],
    metric: str = "seconds",
    params: dict[str, Any] | None = None,
    workload: str = "alloc",
    unit: str = "s",
    better: str = "lower",
    status: str = "ok",
    headline: int | None = None,
) -> Row:
    s = summarize(values)
    return Row(
        config=config,
        fs=config.split()[0],
        workload=workload,
        chain="",
        knobs={},
        params=params or {},
        metric=metric,
        unit=unit,
        better=better,
        status=status,
        message="",
        n=s.n,
        mean=s.mean,
        sd=s.sd,
        ci95=list(s.ci95) if s.ci95 else None,
        cv=s.cv,
        values=values,
        trials={status: 3},
        headline=headline,
    )


def assert_valid(paths: list[Path], count: int) -> None:
    assert len(paths) == count
    for path in paths:
        assert path.exists() and path.stat().st_size > 2000
        if path.suffix == ".png":
            assert path.read_bytes()[:8] == PNG_MAGIC
        else:
            assert path.suffix == ".svg"
            root = ET.parse(path).getroot()
            assert root.tag == "{http://www.w3.org/2000/svg}svg"
            assert b"http://" not in path.read_bytes().replace(b"http://www.w3.org/", b"")


ALLOC_HEADLINE = {"seconds": 0, "fragments": 1, "extents": 2}  # as the run stored it


def alloc_rows() -> list[Row]:
    rows: list[Row] = []
    for method, base in (("fallocate", 0.05), ("write-4k", 0.9)):
        params = {"method": method, "size": "64M"}
        for config, k, frags in (("ext4", 1.0, 2), ("xfs", 0.8, 1), ("ext2 <b>&</b>", 1.3, 40)):
            if config.startswith("ext2") and method == "fallocate":
                rows += [
                    make_row(config, [], m, params, status="unsupported", unit=u)
                    for m, u in (("seconds", "s"), ("fragments", "count"), ("extents", "count"))
                ]
                continue
            v = base * k
            rows.append(make_row(config, [v, v * 1.05, v * 0.95], "seconds", params))
            rows.append(make_row(config, [frags] * 3, "fragments", params, unit="count"))
            rows.append(make_row(config, [frags + 1] * 3, "extents", params, unit="count"))
            rows.append(make_row(config, [v * 0.9] * 3, "write_seconds", params))
    for r in rows:
        r.headline = ALLOC_HEADLINE.get(r.metric or "")
    return rows


def test_bar_and_layout_charts(tmp_path: Path) -> None:
    rows = alloc_rows()
    bars = charts.bar_charts(rows, tmp_path, formats=("png", "svg"))
    assert_valid(bars, 6)  # seconds, fragments, extents: the alloc headline metrics
    assert not any("write-seconds" in p.name for p in bars)  # not a headline metric
    layout = charts.layout_charts(rows, tmp_path)
    assert_valid(layout, 2)
    assert {p.name for p in layout} == {"layout-alloc.png", "layout-alloc.svg"}


def test_long_labels_and_no_sweep(tmp_path: Path) -> None:
    rows = [
        make_row("ext4 -O ^has_journal,data=writeback", [1.0, 1.1, 0.9], workload="untar"),
        make_row("xfs -m crc=0 logbufs=8", [1.4, 1.5, 1.3], workload="untar"),
        make_row("btrfs", [2.0], workload="untar"),  # n = 1: no whisker
    ]
    (chart,) = charts.bar_chart_set(rows, tmp_path, formats=("svg",))
    assert chart.kind == "bar" and chart.size[0] < chart.size[1] * 4
    assert_valid(list(chart.paths), 1)


@pytest.mark.parametrize(
    "label, lines",
    [
        ("ext4", ["ext4"]),
        (
            "ext4 data=writeback,journal_async_commit",
            ["ext4 data=writeback,", "journal_async_commit"],
        ),
        ("ext4 -O ^metadata_csum,uninit_bg", ["ext4 -O", "^metadata_csum,", "uninit_bg"]),
        ("method=write-4k vm.dirty_ratio=20", ["method=write-4k", "vm.dirty_ratio=20"]),
        ("x" * 45, ["x" * 20, "x" * 20, "x" * 5]),  # no break point: cut, nothing lost
    ],
)
def test_labels_wrap_at_spaces_and_commas(label: str, lines: list[str]) -> None:
    assert wrap(label).split("\n") == lines


def test_rows_grow_with_wrapped_labels(tmp_path: Path) -> None:
    short = [make_row(f"ext4 opt{i}", [1.0, 1.1], workload="untar") for i in range(12)]
    long = [
        make_row(f"ext4 data=writeback,journal_async_commit,opt{i}", [1.0, 1.1], workload="untar")
        for i in range(12)
    ]
    (a,) = charts.bar_chart_set(short, tmp_path / "a", formats=("svg",))
    (b,) = charts.bar_chart_set(long, tmp_path / "b", formats=("svg",))
    assert b.size[1] > a.size[1] * 1.3  # three-line labels get taller rows


def test_line_chart_for_a_numeric_sweep(tmp_path: Path) -> None:
    rows = [
        make_row(
            config,
            [k * c, k * c * 1.1, k * c * 0.9],
            "mb_per_s",
            {"clients": c, "duration": 3},
            "dbench",
            "MB/s",
            "higher",
        )
        for config, k in (("ext4", 10.0), ("xfs", 12.0))
        for c in (1, 4, 16)
    ]
    assert charts.numeric_sweep(rows) == "clients"
    paths = charts.line_charts(rows, tmp_path, formats=("png", "svg"))
    assert_valid(paths, 2)
    assert paths[0].name == "line-dbench-mb-per-s-clients.png"


def test_no_line_chart_without_numeric_sweep(tmp_path: Path) -> None:
    assert charts.line_charts(alloc_rows(), tmp_path) == []


def timeline(config: str, n: int, method: str = "write-4k") -> charts.Timeline:
    samples = [
        {
            "t": 0.1 * (i + 1),
            "read_bps": 1e6 * (i % 3),
            "write_bps": 2e8 if i % 4 else 0.0,
            "util_pct": 80.0,
            "cpu_user_pct": 10.0,
            "cpu_sys_pct": 30.0,
            "cpu_iowait_pct": 20.0,
            "dirty_bytes": 0.0,
            "writeback_bytes": 0.0,
        }
        for i in range(n)
    ]
    return charts.Timeline(config, "", "alloc", {"method": method}, {}, 1, samples, 1)


def test_timeline_chart(tmp_path: Path) -> None:
    tls = [
        timeline("ext4", 12),
        timeline("xfs", 9),
        timeline("btrfs", 2),
        timeline("btrfs", 1, "fallocate"),
    ]
    made = charts.timeline_chart_set(tls, tmp_path, formats=("png", "svg"))
    # The fallocate cell has one sample only: nothing worth drawing. The write-4k one has
    # a panel pair per config, btrfs's short one too.
    assert len(made) == 1 and "method=write-4k" in made[0].title
    assert made[0].size[0] >= 9 and made[0].size[1] > 3 * 2.9
    assert_valid(list(made[0].paths), 2)


def test_first_rep_timelines_pick_the_first_rep_with_samples() -> None:
    class T:
        def __init__(self, tid: int, rep: int, seq: int, config: str, status: str = "ok"):
            self.id, self.rep, self.seq, self.step = tid, rep, seq, 0
            self.config, self.chain, self.workload = config, "", "alloc"
            self.params: dict[str, Any] = {"method": "write-4k"}
            self.knobs: dict[str, str] = {}
            self.status = status

    trials = [
        T(1, 1, 0, "ext4", "failed"),
        T(2, 1, 1, "xfs"),
        T(3, 2, 2, "ext4"),
        T(4, 2, 3, "xfs"),
    ]
    data = {2: [{"t": 0.1}], 3: [{"t": 0.1}], 4: [{"t": 0.1}]}
    got = charts.first_rep_timelines(trials, lambda tid: data.get(tid, []))
    assert [(t.config, t.rep, t.trial_id) for t in got] == [("ext4", 2, 3), ("xfs", 1, 2)]


@pytest.mark.parametrize(
    "text, expected",
    [("alloc: fragments", "alloc-fragments"), ("<script>", "script"), ("", "chart")],
)
def test_slug(text: str, expected: str) -> None:
    assert charts.slug(text) == expected


def test_headline_metrics_are_the_stored_ones(tmp_path: Path) -> None:
    """Charts follow Row.headline (what the run stored), in its order; a workload the run
    stored no headline for gets every metric rather than none."""
    rows = alloc_rows()
    for r in rows:
        r.headline = {"fragments": 0}.get(r.metric or "")
    (chart,) = charts.bar_chart_set(rows, tmp_path / "a", formats=("svg",))
    assert chart.metric == "fragments"
    for r in rows:
        r.headline = None
    made = charts.bar_chart_set(rows, tmp_path / "b", formats=("svg",))
    assert [c.metric for c in made] == ["seconds", "fragments", "extents", "write_seconds"]


def test_timelines_skip_the_warm_up() -> None:
    """The warm-up (rep 0) is not what the tables count: its timeline is not drawn."""

    class T:
        def __init__(self, tid: int, rep: int, seq: int) -> None:
            self.id, self.rep, self.seq, self.step = tid, rep, seq, 0
            self.config, self.chain, self.workload = "ext4", "", "alloc"
            self.params: dict[str, Any] = {"method": "write-4k"}
            self.knobs: dict[str, str] = {}
            self.status = "ok"

    got = charts.first_rep_timelines([T(1, 0, 0), T(2, 1, 1)], lambda tid: [{"t": 0.1}])
    assert [(t.rep, t.trial_id) for t in got] == [(1, 2)]


def test_a_log_axis_reaches_down_to_the_smallest_bar() -> None:
    """14 ms fallocates beside 3 s of write() calls: every bar shows (the make run report
    had the fallocate bars below a log axis starting at 0.5 s)."""
    import matplotlib.pyplot as plt

    from fsbench.reports.charts.bars import bars_for, draw_bars

    rows = [
        make_row(c, v, params={"method": m})
        for m, vals in (("fallocate", [0.014, 0.015, 0.016]), ("write-4k", [2.9, 3.0, 3.1]))
        for c, v in (("ext4", vals), ("xfs", [x * 1.1 for x in vals]))
    ]
    bars, _, _ = bars_for(rows, "seconds")
    fig, ax = plt.subplots()
    try:
        draw_bars(ax, bars, {"ext4": "C0", "xfs": "C1"}, horizontal=True, factor=1.0)
        assert ax.get_xscale() == "log"
        assert ax.get_xlim()[0] <= 0.014 and ax.get_xlim()[1] >= 3.1
    finally:
        plt.close(fig)
