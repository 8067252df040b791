"""Verdicts in reports: every pair of configs ordered, equivalent or undecided, with the
evidence that decided, and the tables, markdown and terminal showing the same answers."""

from __future__ import annotations

from typing import Any

from fsbench.analysis.decisions import Decision
from fsbench.analysis.design import Design
from fsbench.analysis.rows import Row
from fsbench.analysis.stats import summarize
from fsbench.analysis.verdicts import decide_rows
from fsbench.reports.tables import Table, build_tables
from fsbench.store.records import RunRecord
from fsbench.system.hostkeys import Host
from tests.helpers import report_as


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
    host=Host.read({"kernel": "6.18"}),
    target={"kind": "loop", "size_bytes": 1 << 30, "direct_io": True},
)

FAST = [1.00, 1.02, 0.98, 1.01]
SLOW = [1.30, 1.31, 1.29, 1.30]
NOISY = [0.8, 1.3, 1.0, 1.3]


def rank(labelled: list[tuple[str, Row]], design: Design | None = None) -> Decision:
    found = decide_rows(labelled, design or Design())
    assert found is not None
    return found


def test_an_order_lower_is_better() -> None:
    v = rank([("xfs", make_row("xfs", SLOW)), ("ext4", make_row("ext4", FAST))])
    assert v.kind == "order" and v.best == "ext4" and v.worst == "xfs"
    assert v.ranking == "ext4 < xfs (1.3×)"
    (pair,) = v.pairs
    assert pair.winner == "ext4" and pair.p is not None and pair.p < 0.001
    assert "ext4 better than xfs" in v.text and "Welch" in v.text and "CI" in v.text


def test_higher_is_better_is_respected() -> None:
    rows = [
        ("xfs", make_row("xfs", SLOW, metric="mb_per_s", better="higher", unit="MB/s")),
        ("ext4", make_row("ext4", FAST, metric="mb_per_s", better="higher", unit="MB/s")),
    ]
    v = rank(rows)
    assert v.kind == "order" and v.best == "xfs" and v.short == "xfs > ext4 (1.3×)"


def test_noise_leaves_a_pair_undecided_with_the_n_that_would_decide() -> None:
    v = rank([("ext4", make_row("ext4", FAST)), ("xfs", make_row("xfs", NOISY))])
    assert v.kind == "undecided" and v.best == ""
    (pair,) = v.pairs
    assert pair.kind == "undecided" and pair.needed is not None and pair.needed > 4
    assert v.short == f"undecided: n≈{pair.needed} would decide"
    # No p beside an answer it does not support.
    assert "p =" not in v.text and "p <" not in v.text


def test_equivalent_within_the_margin() -> None:
    twin = [1.01, 1.00, 0.99, 1.02]
    v = rank([("ext4", make_row("ext4", FAST)), ("xfs", make_row("xfs", twin))])
    assert v.kind == "equivalent"
    (pair,) = v.pairs
    assert pair.ci is not None and 0.95 <= pair.ci[0] and pair.ci[1] <= 1.05
    assert "ext4 ≈ xfs" in v.text and "90% CI" in v.text and "within ±5%" in v.text
    narrow = rank([("ext4", make_row("ext4", FAST)), ("xfs", make_row("xfs", twin))],
                  Design(margin=0.001))  # fmt: skip
    assert narrow.kind == "undecided"


def test_a_ranking_with_no_single_best_still_names_the_worst() -> None:
    """ext4 and xfs cannot be told apart; both beat btrfs by far: an order all the same."""
    close = [1.01, 0.99, 1.05, 0.93]
    v = rank(
        [
            ("ext4", make_row("ext4", FAST)),
            ("xfs", make_row("xfs", close)),
            ("btrfs", make_row("btrfs", [4.3, 4.5, 4.4, 4.6])),
        ]
    )
    assert v.kind == "order" and v.best == "" and v.worst == "btrfs"
    assert v.tiers == [["ext4", "xfs"], ["btrfs"]] or v.tiers == [["xfs", "ext4"], ["btrfs"]]
    assert v.ranking.endswith("< btrfs (4.4-4.5×)")
    assert v.decided >= 2


def test_holm_correction_over_the_pairs() -> None:
    """p ~ 0.03 against each of three configs: an order alone, not after Holm."""
    best = [1.0, 1.1, 1.2]
    other = [1.25, 1.35, 1.45]
    alone = rank([("a", make_row("a", best)), ("b", make_row("b", other))])
    assert alone.kind == "order"
    assert alone.pairs[0].p is not None and 0.01 < alone.pairs[0].p < 0.05
    many = rank([("a", make_row("a", best))] + [(c, make_row(c, other)) for c in "bcd"])
    assert all(p.kind != "order" for p in many.pairs if "a" in (p.a, p.b))


def test_one_rep_is_not_tested() -> None:
    v = rank([("ext4", make_row("ext4", [1.0])), ("xfs", make_row("xfs", [2.0]))])
    assert v.kind == "undecided" and v.short == "undecided: n < 3"


def test_nothing_to_compare() -> None:
    assert decide_rows([("ext4", make_row("ext4", FAST))], Design()) is None
    unsupported = make_row("ext2", [], status="unsupported")
    assert decide_rows([("ext4", make_row("ext4", FAST)), ("ext2", unsupported)], Design()) is None


def test_exact_counts_are_an_order_without_a_test() -> None:
    """Extents read through FIEMAP are exact: 2 is not 3, on every repetition."""

    def extents(config: str, k: int) -> tuple[str, Row]:
        return config, make_row(config, [k, k], metric="extents", unit="count")

    v = rank([extents("ext4", 7), extents("xfs", 2), extents("btrfs", 3)])
    assert v.kind == "order" and v.ranking == "xfs < btrfs (1.5×) < ext4 (2.3×)"
    assert all(p.test == "exact" and p.p is None for p in v.pairs)
    assert "p <" not in v.text and "p =" not in v.text
    same = rank([extents("a", 2), extents("b", 2)])
    assert same.kind == "equivalent" and same.pairs[0].test == "exact"


def test_a_tool_that_rounds_differs_by_no_more_than_its_step() -> None:
    """postmark prints whole seconds: 3 and 4 every time may be 3.9 and 4.0."""

    def whole(config: str, s: float) -> tuple[str, Row]:
        row = make_row(config, [s, s, s])
        row.resolution = 1.0
        return config, row

    v = rank([whole("a", 3), whole("b", 4)])
    assert v.kind == "undecided" and v.pairs[0].test == "resolution"
    assert "resolution" in v.text
    assert rank([whole("a", 3), whole("b", 6)]).kind == "order"


def _sweep_rows() -> list[Row]:
    rows = []
    for method, (a, b) in {"fallocate": (FAST, SLOW), "write-4k": (FAST, NOISY)}.items():
        params = {"method": method, "size": "64M"}
        rows.append(make_row("ext4", a, params=params))
        rows.append(make_row("xfs", b, params=params))
    return rows


def test_swept_table_marks_the_best_per_column() -> None:
    (table,) = build_tables(_sweep_rows())
    assert table.columns == ["fallocate", "write-4k"]
    assert table.best == {(0, 0)}  # ext4 on fallocate; write-4k is noise
    assert table.verdict_cells[0] == "ext4 < xfs (1.3×)"
    assert table.verdict_cells[1].startswith("undecided: n≈")
    assert "Welch" in table.legend and "TOST" in table.legend


def test_metric_columns_are_ranked_each() -> None:
    rows = [
        make_row("ext4", FAST),
        make_row("ext4", [2, 2, 2, 2], metric="fragments", unit="count"),
        make_row("xfs", SLOW),
        make_row("xfs", [1, 1, 1, 1], metric="fragments", unit="count"),
    ]
    (table,) = build_tables(rows, all_metrics=True)
    assert table.best == {(0, 0), (1, 1)}
    assert table.verdict_cells[1] == "xfs < ext4 (2×)"


def test_single_config_has_no_verdict_row() -> None:
    (table,) = build_tables([make_row("ext4", FAST)])
    assert table.verdicts == [] and table.legend == ""
    md = report_as("md", RUN, [make_row("ext4", FAST)])
    assert "verdict" not in md


def test_markdown_bold_best_and_verdict_row() -> None:
    md = report_as("md", RUN, _sweep_rows())
    assert "| ext4 | **1.002 ± 0.027 (4)** | 1.002 ± 0.027 (4) |" in md
    assert "| _verdict_ | _ext4 < xfs (1.3×)_ | _undecided: n≈" in md
    assert "| xfs | 1.300 ± 0.013 (4) |" in md  # the loser is not bold


def test_terminal_table_has_a_verdict_row() -> None:
    text = report_as("table", RUN, _sweep_rows())
    assert "verdict" in text and "ext4 < xfs (1.3×)" in text and "undecided" in text


def test_every_format_states_the_same_verdicts() -> None:
    """JSON carries each comparison's verdict with its pairs; CSV, markdown and the
    terminal say the same kind and ranking."""
    import csv
    import io
    import json

    rows = _sweep_rows()
    doc = json.loads(report_as("json", RUN, rows))
    found = {c["dims"]["method"]: c["verdict"] for c in doc["comparisons"]}
    assert found["fallocate"]["kind"] == "order"
    assert found["fallocate"]["ranking"] == "ext4 < xfs (1.3×)"
    (pair,) = found["fallocate"]["pairs"]
    assert pair["kind"] == "order" and pair["better"] == "ext4" and pair["test"] == "Welch"
    assert pair["p"] < 0.001 and pair["ci"] is not None
    assert found["write-4k"]["kind"] == "undecided"
    assert found["write-4k"]["pairs"][0]["needed"] > 4
    table = list(csv.DictReader(io.StringIO(report_as("csv", RUN, rows))))
    by_method = {json.loads(r["params"])["method"]: r for r in table}
    assert by_method["fallocate"]["verdict"] == "order"
    assert by_method["fallocate"]["ranking"] == found["fallocate"]["ranking"]
    assert by_method["write-4k"]["verdict"] == "undecided"
    md = report_as("md", RUN, rows)
    assert found["fallocate"]["ranking"] in md


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


def test_a_legend_says_each_columns_looks_when_they_differ() -> None:
    """The budget plans each group's looks: a table whose columns are groups with
    different looks says each one's, never the first column's for all."""
    pair = [("ext4", make_row("ext4", FAST)), ("xfs", make_row("xfs", SLOW))]
    one, four = Design(True, 3, 3), Design(True, 3, 4)
    table = Table("t", "", "config", ["fallocate", "write-4k"], [], verdicts=[])
    table.verdicts = [rank(pair, one), rank(pair, four)]
    assert "looks by column: fallocate: one look at n=3 | write-4k: a look after each " in (
        table.legend
    )
    assert "round from n=3 to 4, Pocock boundaries for those looks" in table.legend
    table.verdicts = [rank(pair, four), rank(pair, four)]
    assert "by column" not in table.legend and "from n=3 to 4" in table.legend
