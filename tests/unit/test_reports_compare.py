"""`fsbench compare`: matching cells of two runs, ratio B/A, verdicts, geometric means."""

from __future__ import annotations

import json
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fsbench.analysis.rows import Row
from fsbench.analysis.stats import summarize
from fsbench.cli.app import app
from fsbench.reports import compare as cmp
from fsbench.reports import export
from fsbench.store.records import MetricRecord, RunRecord, TrialRecord
from fsbench.store.results import Store
from fsbench.system.hostkeys import Host


def make_row(
    config: str,
    values: list[float],
    metric: str | None = "seconds",
    better: str = "lower",
    unit: str = "s",
    method: str = "write-4k",
    status: str = "ok",
    knobs: dict[str, str] | None = None,
    headline: int | None = 0,
) -> Row:
    s = summarize(values)
    return Row(
        config=config,
        fs=config,
        workload="alloc",
        chain="",
        knobs=knobs or {},
        params={"method": method, "size": "64M"},
        metric=metric,
        unit=unit,
        better=better,
        status=status,
        message="" if status == "ok" else "not supported",
        n=s.n,
        mean=s.mean,
        sd=s.sd,
        ci95=list(s.ci95) if s.ci95 else None,
        cv=s.cv,
        values=values,
        trials={status: 3},
        headline=headline,
    )


def run_record(rid: int, kernel: str) -> RunRecord:
    return RunRecord(
        id=rid,
        name="alloc",
        status="finished",
        created_at="2026-01-01T00:00:00",
        finished_at=None,
        fsbench_version="0.1.0",
        argv=[],
        plan={"scale": "tiny", "reps": 3},
        overrides={},
        schedule=[],
        host=Host.read({"kernel": kernel, "tools": {"mke2fs": "1.47.0"}}),
        target={"kind": "loop"},
    )


A_FAST = [1.00, 1.02, 0.98, 1.01]
B_SLOWER = [1.25, 1.27, 1.23, 1.26]
NOISY = [0.6, 1.5, 1.0, 1.3]


def test_match_and_verdicts() -> None:
    rows_a = [
        make_row("ext4", A_FAST),
        make_row("xfs", A_FAST),
        make_row("btrfs", A_FAST),  # only in A
    ]
    rows_b = [
        make_row("ext4", B_SLOWER),  # slower: seconds up
        make_row("xfs", NOISY),  # within noise
        make_row("ext2", A_FAST),  # only in B
    ]
    result = cmp.compare_rows(rows_a, rows_b)
    by_config = {c.key.config: c for c in result.cells}
    assert set(by_config) == {"ext4", "xfs"}
    ext4 = by_config["ext4"]
    # B/A of the geometric means: the ratio the log-scale test and its interval are about.
    assert ext4.ratio == pytest.approx(
        statistics.geometric_mean(B_SLOWER) / statistics.geometric_mean(A_FAST), rel=1e-9
    )
    assert ext4.ratio_ci is not None and ext4.ratio_ci[0] < ext4.ratio < ext4.ratio_ci[1]
    assert ext4.verdict == cmp.WORSE and ext4.text == "slower by 25%"
    assert by_config["xfs"].verdict == cmp.UNDECIDED and "would decide" in by_config["xfs"].text
    assert [k.config for k in result.only_a] == ["btrfs"]
    assert [k.config for k in result.only_b] == ["ext2"]
    assert result.compared == 2


def test_higher_is_better_and_non_speed_metrics() -> None:
    a = [make_row("ext4", [100, 101, 99], metric="mb_per_s", better="higher", unit="MB/s")]
    b = [make_row("ext4", [125, 126, 124], metric="mb_per_s", better="higher", unit="MB/s")]
    (cell,) = cmp.compare_rows(a, b).cells
    assert cell.verdict == cmp.BETTER and cell.text == "faster by 25%"
    a = [make_row("ext4", [2, 2, 2], metric="fragments", unit="count")]
    b = [make_row("ext4", [3, 3, 3], metric="fragments", unit="count")]
    (cell,) = cmp.compare_rows(a, b, all_metrics=True).cells
    assert cell.verdict == cmp.WORSE and cell.text == "worse by 50%"


@pytest.mark.parametrize(
    "ratio, better, unit, metric, text",
    [
        (0.8, "lower", "s", "seconds", "faster by 20%"),
        (1.25, "higher", "MB/s", "mb_per_s", "faster by 25%"),
        (0.95, "higher", "files/s", "files_per_s", "slower by 5.0%"),
        (0.5, "lower", "count", "fragments", "better by 50%"),
    ],
)
def test_change_text(ratio: float, better: str, unit: str, metric: str, text: str) -> None:
    assert cmp.change_text(ratio, better, unit, metric) == text


def test_false_orders_controlled_over_every_cell_compared() -> None:
    """One cell at p ~ 0.03 is an order alone, not among six equal ones (BH)."""
    a, b = [1.0, 1.1, 1.2], [1.25, 1.35, 1.45]
    alone = cmp.compare_rows([make_row("ext4", a)], [make_row("ext4", b)])
    assert alone.cells[0].verdict == cmp.WORSE
    assert alone.cells[0].p_adjusted == pytest.approx(alone.cells[0].p)
    same = [1.0, 1.05, 1.1]
    rows_a = [make_row("ext4", a)] + [make_row(f"c{i}", same) for i in range(5)]
    rows_b = [make_row("ext4", b)] + [make_row(f"c{i}", same) for i in range(5)]
    many = cmp.compare_rows(rows_a, rows_b)
    ext4 = next(c for c in many.cells if c.key.config == "ext4")
    assert ext4.verdict == cmp.UNDECIDED
    assert ext4.p_adjusted is not None and ext4.p is not None and ext4.p_adjusted > ext4.p


def test_unsupported_side_is_not_compared() -> None:
    a = [make_row("ext2", [], status="unsupported", method="fallocate")]
    b = [make_row("ext2", A_FAST, method="fallocate")]
    result = cmp.compare_rows(a, b)
    (cell,) = result.cells
    assert cell.verdict == cmp.NOT_COMPARED and "A unsupported" in cell.text
    assert cell.ratio is None and result.compared == 0


def test_knobs_and_params_are_part_of_the_key() -> None:
    a = [make_row("ext4", A_FAST, knobs={"vm.dirty_ratio": "1"})]
    b = [make_row("ext4", A_FAST, knobs={"vm.dirty_ratio": "20"})]
    result = cmp.compare_rows(a, b)
    assert result.cells == [] and len(result.only_a) == 1 and len(result.only_b) == 1


def test_geometric_mean_per_workload_and_metric() -> None:
    rows_a, rows_b = [], []
    for method, factor in (("fallocate", 2.0), ("write-4k", 0.5), ("mmap", 1.0)):
        rows_a.append(make_row("ext4", A_FAST, method=method))
        rows_b.append(make_row("ext4", [v * factor for v in A_FAST], method=method))
    (gm,) = cmp.compare_rows(rows_a, rows_b).geomeans
    assert (gm.workload, gm.metric, gm.cells) == ("alloc", "seconds", 3)
    assert gm.ratio == pytest.approx(1.0)
    assert gm.counts == {cmp.WORSE: 1, cmp.BETTER: 1, "equivalent": 1}


def test_headline_metrics_unless_all() -> None:
    def rows() -> list[Row]:
        return [
            make_row("ext4", A_FAST),
            make_row("ext4", A_FAST, metric="write_seconds", headline=None),
        ]

    assert {c.key.metric for c in cmp.compare_rows(rows(), rows()).cells} == {"seconds"}
    assert {c.key.metric for c in cmp.compare_rows(rows(), rows(), all_metrics=True).cells} == {
        "seconds",
        "write_seconds",
    }
    # The headline is what the run stored (Row.headline); a run that stored none for a
    # workload compares every metric rather than none.
    bare = [make_row("ext4", A_FAST, m, headline=None) for m in ("seconds", "write_seconds")]
    assert {c.key.metric for c in cmp.compare_rows(bare, bare).cells} == {
        "seconds",
        "write_seconds",
    }


def _doc() -> dict[str, Any]:
    a, b = run_record(1, "6.1"), run_record(2, "6.18")
    rows_a = [make_row("ext4", A_FAST), make_row("btrfs", A_FAST)]
    rows_b = [make_row("ext4", B_SLOWER), make_row("ext2", [], status="failed")]
    result = cmp.compare_runs(a, rows_a, b, rows_b)
    return json.loads(export.write(cmp.document(a, b, result), "json"))


def test_json_document_is_stable() -> None:
    doc = _doc()
    assert list(doc) == [
        "a",
        "b",
        "ratio",
        "test",
        "metrics",
        "differences",
        "cells",
        "geomeans",
        "only_a",
        "only_b",
    ]
    assert doc["a"]["kernel"] == "6.1" and doc["b"]["id"] == 2
    assert {"what": "host.kernel", "a": "6.1", "b": "6.18"} in doc["differences"]
    (cell,) = doc["cells"]
    assert set(cell) == {
        "host",
        "config",
        "chain",
        "workload",
        "params",
        "knobs",
        "metric",
        "unit",
        "better",
        "a",
        "b",
        "ratio",
        "ratio_ci",
        "ratio_ci_level",
        "p",
        "p_adjusted",
        "verdict",
        "text",
    }
    assert cell["a"]["n"] == 4 and cell["verdict"] == "worse"
    assert doc["only_a"][0]["config"] == "btrfs" and doc["only_b"][0]["config"] == "ext2"
    assert doc["geomeans"][0]["ratio"] == pytest.approx(cell["ratio"])


def test_json_has_no_nan() -> None:
    a = [make_row("ext4", [0.0, 0.0, 0.0])]
    b = [make_row("ext4", [1.0, 1.0, 1.0])]
    result = cmp.compare_rows(a, b)
    text = export.write(cmp.document(run_record(1, "x"), run_record(2, "x"), result), "json")
    assert "NaN" not in text and "Infinity" not in text
    assert result.cells[0].ratio is None


def test_text_and_markdown() -> None:
    a, b = run_record(1, "6.1"), run_record(2, "6.18")
    result = cmp.compare_runs(
        a,
        [make_row("ext4", A_FAST), make_row("btrfs", A_FAST)],
        b,
        [make_row("ext4", B_SLOWER)],
    )
    document = cmp.document(a, b, result)
    text = export.write(document, "table", export.Options(width=200))
    assert "slower by 25%" in text and "geometric mean" in text
    assert "only in A" in text and "btrfs · alloc · method=write-4k size=64M · seconds" in text
    assert "differs: host.kernel: 6.1 → 6.18" in text
    md = export.write(document, "md")
    assert "**slower by 25%**" in md and "| config | metric | A | B | B/A |" in md


def _trial(
    seq: int, rep: int, config: str, seconds: float, knobs: dict[str, str] | None = None
) -> TrialRecord:
    params = {"method": "write-4k", "size": "64M"}
    return TrialRecord(
        knobs=knobs or {},
        seq=seq,
        rep=rep,
        cell_key=f"{config}|alloc",
        config=config,
        fs=config,
        mkfs_options=[],
        mount_options="",
        workload="alloc",
        params=params,
        status="ok",
        metrics=[MetricRecord("seconds", seconds, "s", "lower")],
    )


def test_cli_compare_json(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    store = Store(db)
    ids = []
    for kernel, values in (("6.1", A_FAST), ("6.18", B_SLOWER)):
        rid = store.create_run(
            name="alloc",
            fsbench_version="0.1.0",
            argv=["fsbench", "run"],
            plan={"scale": "tiny", "reps": 4},
            overrides={},
            schedule=[],
            host={"kernel": kernel},
            target={"kind": "loop"},
        )
        for i, v in enumerate(values):
            store.record_trials(rid, [_trial(i, i + 1, "ext4", v)])
        store.finish_run(rid, "finished")
        ids.append(rid)
    runner = CliRunner()
    res = runner.invoke(app, ["compare", str(ids[0]), str(ids[1]), "--db", str(db), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["cells"][0]["verdict"] == "worse"
    res = runner.invoke(app, ["compare", str(ids[0]), str(ids[1]), "--db", str(db), "-f", "md"])
    assert res.exit_code == 0 and "slower by 25%" in res.output
    res = runner.invoke(app, ["compare", str(ids[0]), str(ids[1]), "--db", str(db)])
    assert res.exit_code == 0 and "slower by 25%" in res.output


def test_cli_compare_by_kernel_within_one_run(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    store = Store(db)
    rid = store.create_run(
        name="kernels",
        fsbench_version="0.1.0",
        argv=["fsbench", "run"],
        plan={"scale": "tiny", "reps": 4},
        overrides={},
        schedule=[],
        host={"kernel": "host"},
        target={"kind": "vm"},
    )
    seq = 0
    for kernel, ext4, xfs in (("6.1", A_FAST, A_FAST), ("6.12", B_SLOWER, A_FAST)):
        for rep, (e, x) in enumerate(zip(ext4, xfs, strict=True), start=1):
            for config, value in (("ext4", e), ("xfs", x)):
                store.record_trials(rid, [_trial(seq, rep, config, value, {"kernel": kernel})])
                seq += 1
    store.finish_run(rid, "finished")
    runner = CliRunner()
    res = runner.invoke(app, ["compare", str(rid), "--by", "kernel", "--db", str(db), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    verdicts = {c["config"]: c["verdict"] for c in doc["cells"]}
    assert verdicts == {"ext4": "worse", "xfs": "equivalent"}
    assert all(c["knobs"] == {} for c in doc["cells"])  # matched without the kernel knob
    assert "kernel=6.1" in doc["a"]["name"] and "kernel=6.12" in doc["b"]["name"]
    res = runner.invoke(app, ["compare", str(rid), "--by", "kernel=6.12,6.1", "--db", str(db)])
    assert res.exit_code == 0 and "faster by" in res.output
    for bad, message in (
        (["--by", "scheduler"], "no dimension 'scheduler'"),
        (["--by", "kernel=6.1,5.4"], "no '5.4'"),
        (["--by", "kernel=6.1"], "choose two"),
        (["2", "--by", "kernel"], "give RUN_A only"),
        ([], "needs RUN_B"),
    ):
        res = runner.invoke(app, ["compare", str(rid), *bad, "--db", str(db)])
        assert res.exit_code != 0, bad
        assert message in res.output + str(res.exception), (bad, res.output, res.exception)


def test_a_difference_within_the_resolution_is_none() -> None:
    """A tool that prints whole seconds: 3 against 4 every time is one step, not a winner."""
    a = [replace(make_row("ext4", [3.0, 3.0, 3.0]), resolution=1.0)]
    b = [replace(make_row("ext4", [4.0, 4.0, 4.0]), resolution=1.0)]
    (cell,) = cmp.compare_rows(a, b).cells
    assert cell.verdict == cmp.UNDECIDED and "resolution of 1" in cell.text
    b = [replace(make_row("ext4", [5.0, 5.0, 5.0]), resolution=1.0)]
    (cell,) = cmp.compare_rows(a, b).cells
    assert cell.verdict == cmp.WORSE


def test_any_dimension_splits_rows_alike() -> None:
    """A dimension is data: one that is not a knob (here the fleet host) splits and
    matches rows through the same path as a knob does."""
    rows = [
        replace(make_row("ext4", A_FAST), host="h1"),
        replace(make_row("ext4", B_SLOWER), host="h2"),
    ]
    host = cmp.Dimension(
        "host", lambda r: [r.host] if r.host else [], lambda r: replace(r, host="")
    )
    assert host.levels(rows) == ["h1", "h2"]
    (cell,) = cmp.compare_rows(host.split(rows, "h1"), host.split(rows, "h2")).cells
    assert cell.verdict == cmp.WORSE and cell.key.host == ""
    knobbed = [
        make_row("ext4", A_FAST, knobs={"kernel": "6.1"}),
        make_row("ext4", B_SLOWER, knobs={"kernel": "6.12"}),
    ]
    level_a, level_b, result = cmp.compare_within(7, knobbed, "kernel")
    assert (level_a, level_b) == ("6.1", "6.12") and result.cells[0].verdict == cmp.WORSE
    # Without a host dimension a fleet's cells keep their hosts apart.
    (cell,) = cmp.compare_rows(rows[:1], rows[:1]).cells
    assert cell.key.label == "h1 · ext4"


def test_formats_are_named_once(tmp_path: Path) -> None:
    """Every command refuses an unknown format in the same words, from one list: the
    exporters registered, each of which writes every command's document."""
    from fsbench.reports import formats

    db = str(tmp_path / "r.db")
    Store(db).close()
    runner = CliRunner()
    for argv in (
        ["compare", "1", "2", "-f", "xml"],
        ["report", "1", "-f", "xml"],
        ["history", "-f", "xml"],
    ):
        res = runner.invoke(app, [*argv, "--db", db])
        assert res.exit_code != 0
        said = res.output + str(res.exception)
        assert f"(known: {', '.join(formats.REPORT)})" in said, said
    assert formats.listed(formats.REPORT) == "table, md, csv, json or html"


def test_cli_compare_by_a_sysctl_knob_within_one_run(tmp_path: Path) -> None:
    """`--by` works for any knob: --by vm.dirty_ratio=1,20 as --by kernel does."""
    db = tmp_path / "r.db"
    store = Store(db)
    rid = store.create_run(
        name="dirty",
        fsbench_version="0.1.0",
        argv=["fsbench", "run"],
        plan={"scale": "tiny", "reps": 4},
        overrides={},
        schedule=[],
        host={"kernel": "host"},
        target={"kind": "loop"},
    )
    seq = 0
    for ratio, ext4, xfs in (("1", B_SLOWER, A_FAST), ("20", A_FAST, A_FAST)):
        for rep, (e, x) in enumerate(zip(ext4, xfs, strict=True), start=1):
            for config, value in (("ext4", e), ("xfs", x)):
                knobs = {"vm.dirty_ratio": ratio, "scheduler": "none"}
                store.record_trials(rid, [_trial(seq, rep, config, value, knobs)])
                seq += 1
    store.finish_run(rid, "finished")
    runner = CliRunner()
    argv = ["compare", str(rid), "--by", "vm.dirty_ratio=1,20", "--db", str(db), "--json"]
    res = runner.invoke(app, argv)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    verdicts = {c["config"]: c["verdict"] for c in doc["cells"]}
    assert verdicts["ext4"] == cmp.BETTER and verdicts["xfs"] != cmp.BETTER  # ext4 faster
    # Matched without the knob compared, with every other knob kept.
    assert all(c["knobs"] == {"scheduler": "none"} for c in doc["cells"])
    assert "vm.dirty_ratio=1" in doc["a"]["name"] and "vm.dirty_ratio=20" in doc["b"]["name"]
    res = runner.invoke(app, ["compare", str(rid), "--by", "vm.dirty_ratio", "--db", str(db)])
    assert res.exit_code == 0 and "faster by 20%" in res.output, res.output
    res = runner.invoke(
        app, ["compare", str(rid), "--by", "vm.dirty_ratio=20,1", "--db", str(db), "--json"]
    )
    assert res.exit_code == 0, res.output
    assert {c["config"]: c["verdict"] for c in json.loads(res.output)["cells"]}["ext4"] == cmp.WORSE
    res = runner.invoke(app, ["compare", str(rid), "--by", "vm.dirty_ratio=1,40", "--db", str(db)])
    assert res.exit_code != 0 and "no '40'" in res.output + str(res.exception)
