"""Significance in reports: a best config is called only when Welch + Holm say so."""

from __future__ import annotations

from typing import Any

import pytest

from fsbench.records import RunRecord
from fsbench.reports import render
from fsbench.reports.ranking import NO_CLEAR, TOO_FEW, fmt_change, rank_rows
from fsbench.reports.rows import Row
from fsbench.reports.tables import build_tables
from fsbench.stats import summarize


def make_row(
    config: str,
    values: list[float],
    metric: str = "seconds",
    better: str = "lower",
    unit: str = "s",
    params: dict[str, Any] | None = None,
    workload: str = "alloc",
    status: str = "ok",
) -> Row:
    s = summarize(values)
    return Row(
        config=config,
        fs=config.split()[0],
        workload=workload,
        chain="",
        knobs={},
        params=params if params is not None else {"size": "64M"},
        metric=metric,
        unit=unit,
        better=better,
        status=status,
        message="" if status == "ok" else "fallocate(2): Operation not supported",
        n=s.n,
        mean=s.mean,
        sd=s.sd,
        ci95=list(s.ci95) if s.ci95 else None,
        cv=s.cv,
        values=values,
        trials={status: max(1, len(values))},
    )


RUN = RunRecord(
    id=7,
    name="t",
    status="finished",
    created_at="2026-01-01T00:00:00",
    finished_at=None,
    fsbench_version="0.1.0",
    argv=["fsbench", "run"],
    plan={"scale": "tiny", "reps": 3},
    overrides={},
    schedule=[],
    host={"kernel": "6.18"},
    target={"kind": "loop", "size_bytes": 1 << 30, "direct_io": True},
)

FAST = [1.00, 1.02, 0.98, 1.01]
SLOW = [1.30, 1.31, 1.29, 1.30]
NOISY = [0.5, 1.6, 1.0, 1.4]


def test_clear_winner_lower_is_better() -> None:
    v = rank_rows([("xfs", make_row("xfs", SLOW)), ("ext4", make_row("ext4", FAST))])
    assert v is not None and v.significant and v.tested
    assert (v.best, v.runner_up) == ("ext4", "xfs")
    assert v.margin == "-23%"
    assert v.short == "ext4: -23% vs xfs"
    assert "Welch" in v.text and "Holm" in v.text


def test_higher_is_better_is_respected() -> None:
    rows = [
        ("xfs", make_row("xfs", SLOW, metric="mb_per_s", better="higher", unit="MB/s")),
        ("ext4", make_row("ext4", FAST, metric="mb_per_s", better="higher", unit="MB/s")),
    ]
    v = rank_rows(rows)
    assert v is not None and v.significant
    assert v.best == "xfs" and v.margin == "+30%"


def test_noise_gives_no_clear_difference() -> None:
    v = rank_rows([("ext4", make_row("ext4", FAST)), ("xfs", make_row("xfs", NOISY))])
    assert v is not None and not v.significant
    assert v.short == NO_CLEAR
    assert v.text.startswith(NO_CLEAR)


def test_best_must_beat_every_other_config() -> None:
    """A clear lead over the slowest is not enough when the runner-up is within noise."""
    close = [1.01, 0.99, 1.03, 0.97]
    v = rank_rows(
        [
            ("ext4", make_row("ext4", FAST)),
            ("xfs", make_row("xfs", close)),
            ("btrfs", make_row("btrfs", SLOW)),
        ]
    )
    assert v is not None and not v.significant


def test_holm_correction_over_the_comparisons() -> None:
    """p ~ 0.03 against each of three configs: significant alone, not after Holm (x3)."""
    best = [1.0, 1.1, 1.2]
    other = [1.25, 1.35, 1.45]
    alone = rank_rows([("a", make_row("a", best)), ("b", make_row("b", other))])
    assert alone is not None and alone.significant
    assert alone.p_adjusted is not None and 0.01 < alone.p_adjusted < 0.05
    many = rank_rows(
        [("a", make_row("a", best))] + [(c, make_row(c, other)) for c in ("b", "c", "d")]
    )
    assert many is not None and not many.significant


def test_one_rep_is_not_tested() -> None:
    v = rank_rows([("ext4", make_row("ext4", [1.0])), ("xfs", make_row("xfs", [2.0]))])
    assert v is not None and not v.significant and not v.tested
    assert v.short == TOO_FEW


def test_nothing_to_compare() -> None:
    assert rank_rows([("ext4", make_row("ext4", FAST))]) is None
    assert rank_rows([("ext4", make_row("ext4", FAST)), ("ext2", None)]) is None
    unsupported = make_row("ext2", [], status="unsupported")
    assert rank_rows([("ext4", make_row("ext4", FAST)), ("ext2", unsupported)]) is None


def test_constant_values_differ_with_certainty() -> None:
    """Fragment counts are often exact: 1 vs 2 every time is a difference."""
    v = rank_rows(
        [
            ("xfs", make_row("xfs", [1, 1, 1], metric="fragments", unit="count")),
            ("ext4", make_row("ext4", [2, 2, 2], metric="fragments", unit="count")),
        ]
    )
    assert v is not None and v.significant and v.best == "xfs"
    assert v.short == "xfs: 2× lower vs ext4"


@pytest.mark.parametrize(
    "ratio, text",
    [
        (0.77, "-23%"),
        (1.3, "+30%"),
        (0.955, "-4.5%"),
        (2.5, "2.5× higher"),
        (0.1, "10× lower"),
        (0.0, "-100%"),
        (None, "n/a"),
    ],
)
def test_fmt_change(ratio: float | None, text: str) -> None:
    assert fmt_change(ratio, "lower") == text


def _sweep_rows() -> list[Row]:
    rows = []
    for method, (a, b) in {"fallocate": (FAST, SLOW), "write-4k": (FAST, NOISY)}.items():
        params = {"method": method, "size": "64M"}
        rows.append(make_row("ext4", a, params=params))
        rows.append(make_row("xfs", b, params=params))
    return rows


def test_swept_table_marks_the_winner_per_column() -> None:
    (table,) = build_tables(_sweep_rows())
    assert table.columns == ["fallocate", "write-4k"]
    assert table.best == {(0, 0)}  # ext4 on fallocate; write-4k is noise
    assert table.verdict_cells == ["ext4: -23% vs xfs", NO_CLEAR]
    assert "Welch" in table.legend


def test_metric_columns_are_ranked_each() -> None:
    rows = [
        make_row("ext4", FAST),
        make_row("ext4", [2, 2, 2, 2], metric="fragments", unit="count"),
        make_row("xfs", SLOW),
        make_row("xfs", [1, 1, 1, 1], metric="fragments", unit="count"),
    ]
    (table,) = build_tables(rows, all_metrics=True)
    assert table.best == {(0, 0), (1, 1)}
    assert table.verdict_cells[1] == "xfs: 2× lower vs ext4"


def test_single_config_has_no_verdict_row() -> None:
    (table,) = build_tables([make_row("ext4", FAST)])
    assert table.verdicts == [] and table.legend == ""
    md = render.render_markdown(RUN, [make_row("ext4", FAST)])
    assert "verdict" not in md


def test_markdown_bold_winner_and_verdict_row() -> None:
    md = render.render_markdown(RUN, _sweep_rows())
    assert "| ext4 | **1.002 ± 0.027 (4)** | 1.002 ± 0.027 (4) |" in md
    assert "| _verdict_ | _ext4: -23% vs xfs_ | _no clear difference_ |" in md
    assert "| xfs | 1.300 ± 0.013 (4) |" in md  # the loser is not bold


def test_terminal_table_has_a_verdict_row() -> None:
    text = render.render_text(RUN, _sweep_rows())
    assert "verdict" in text and "ext4: -23% vs xfs" in text and NO_CLEAR in text


def test_power_note_the_noisiest_row_decides() -> None:
    from dataclasses import replace

    from fsbench.reports.tables import power_note

    steady = replace(make_row("ext4", [1.0, 1.001, 0.999]), min_detectable=0.004, reps_for_5pct=2)
    wild = replace(make_row("xfs", [0.1, 3.0, 0.5]), min_detectable=4.0, reps_for_5pct=None)
    assert power_note([steady]).endswith("a 5% difference is within reach")
    assert power_note([steady, wild]).endswith(
        "a 5% difference is beyond any sane number of repetitions here"
    )
    middling = replace(wild, min_detectable=0.2, reps_for_5pct=40)
    assert power_note([steady, middling]).endswith("needs n=40 per config (--reps 40)")
