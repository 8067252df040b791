"""Store round trip and the report formats, on a run built from known trial values, in
each backend (SQLite, and a real PostgreSQL the tests start: tests/pgcluster.py)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy.exc import IntegrityError

from fsbench.analysis.rows import build_rows
from fsbench.reports import export
from fsbench.store.records import MetricRecord, TrialRecord
from fsbench.store.results import Store
from fsbench.system import numbers
from tests.helpers import report_as


def _trial(
    seq: int,
    rep: int,
    config: str,
    fs: str,
    method: str,
    status: str = "ok",
    seconds: float | None = None,
    fragments: float = 1,
    message: str = "",
    notes: list[dict[str, str]] | None = None,
) -> TrialRecord:
    params = {"method": method, "size": "64M"}
    metrics = []
    if status == "ok":
        metrics = [
            MetricRecord("seconds", seconds or 0.0, "s", "lower"),
            MetricRecord("fragments", fragments, "count", "lower"),
        ]
    return TrialRecord(
        seq=seq,
        rep=rep,
        cell_key=f"{config}|alloc|{json.dumps(params, sort_keys=True)}",
        config=config,
        fs=fs,
        mkfs_options=[],
        mount_options="",
        workload="alloc",
        params=params,
        status=status,
        message=message,
        started_at="t0",
        finished_at="t1",
        provenance={"option_notes": notes or [], "flags": {}},
        metrics=metrics,
    )


@pytest.fixture
def store(store_db: str) -> Iterator[Store]:
    made = Store(store_db)
    yield made
    made.close()


@pytest.fixture
def run_id(store: Store) -> int:
    rid = store.create_run(
        name="alloc",
        fsbench_version="0.1.0",
        argv=["fsbench", "run"],
        plan={"scale": "tiny", "reps": 3},
        overrides={},
        schedule=[],
        host={"kernel": "6.18"},
        target={"kind": "loop", "size_bytes": 1 << 30, "direct_io": True},
    )
    ignored = [
        {
            "option": "i_version",
            "kind": "ignored",
            "where": "mount",
            "evidence": "kernel: EXT4-fs: Ignoring removed i_version option",
        }
    ]
    seq = 0
    for rep, (a, b) in enumerate([(1.0, 2.0), (1.2, 2.2), (1.4, 2.4)], start=1):
        for config, fs, method, value in [
            ("ext4 i_version", "ext4", "fallocate", a * 0.01),
            ("ext4 i_version", "ext4", "write-4k", a),
            ("xfs", "xfs", "fallocate", b * 0.01),
            ("xfs", "xfs", "write-4k", b),
        ]:
            store.record_trials(
                rid,
                [
                    _trial(
                        seq,
                        rep,
                        config,
                        fs,
                        method,
                        seconds=value,
                        notes=ignored if fs == "ext4" else None,
                    )
                ],
            )
            seq += 1
    store.record_trials(
        rid,
        [
            _trial(
                seq,
                1,
                "ext2",
                "ext2",
                "fallocate",
                status="unsupported",
                message="fallocate(2): Operation not supported on ext2",
            )
        ],
    )
    store.record_trials(rid, [_trial(seq + 1, 1, "ext2", "ext2", "write-4k", seconds=3.0)])
    store.finish_run(rid, "finished")
    return rid


def test_store_round_trip(store: Store, run_id: int) -> None:
    run = store.get_run(run_id)
    assert run.status == "finished" and run.finished_at
    trials = store.get_trials(run_id)
    assert len(trials) == 14
    assert trials[0].metrics[0] == MetricRecord("seconds", 0.01, "s", "lower")
    assert store.latest_run_id() == run_id
    assert store.integrity() == "ok"


def test_one_trial_per_schedule_slot(store: Store, run_id: int) -> None:
    with pytest.raises(IntegrityError, match="one_trial_per_slot|UNIQUE"):
        store.record_trials(run_id, [_trial(0, 1, "xfs", "xfs", "fallocate", seconds=1.0)])


def test_rows_summarise_per_cell(store: Store, run_id: int) -> None:
    rows = build_rows(store.get_trials(run_id))
    xfs = next(
        r
        for r in rows
        if r.config == "xfs" and r.params["method"] == "write-4k" and r.metric == "seconds"
    )
    assert xfs.n == 3 and xfs.mean == pytest.approx(2.2) and xfs.values == [2.0, 2.2, 2.4]
    assert xfs.ci95 is not None and xfs.ci95[0] < 2.2 < xfs.ci95[1]
    ext2 = [r for r in rows if r.config == "ext2" and r.params["method"] == "fallocate"]
    assert {r.metric for r in ext2} == {"seconds", "fragments"}
    assert all(
        r.status == "unsupported" and r.n == 0 and "not supported" in r.message for r in ext2
    )


def test_json_document_is_the_documented_interface(store: Store, run_id: int) -> None:
    doc = json.loads(report_as("json", store.get_run(run_id), build_rows(store.get_trials(run_id))))
    assert doc["run"] == run_id
    row = doc["rows"][0]
    for key in (
        "config",
        "fs",
        "workload",
        "params",
        "metric",
        "unit",
        "better",
        "status",
        "message",
        "n",
        "mean",
        "sd",
        "ci95",
        "values",
    ):
        assert key in row
    assert row["params"] == {"method": "fallocate", "size": "64M"}


def test_markdown_table(store: Store, run_id: int) -> None:
    md = report_as("md", store.get_run(run_id), build_rows(store.get_trials(run_id)))
    assert "### alloc: seconds, lower is better" in md
    assert "| config \\ method | fallocate | write-4k |" in md
    assert "| xfs | 0.0220 ± 0.0050 (3) | 2.20 ± 0.50 (3) |" in md
    assert "| ext2 | unsupported [2] | 3 (1) |" in md
    assert "| ext2 | unsupported [" in md
    assert "Ignoring removed i_version option" in md  # ignored option beside the result
    assert "_mean ± 95% CI (n) · size=64M_" in md


def test_csv(store: Store, run_id: int) -> None:
    rows = list(
        csv.DictReader(
            io.StringIO(
                report_as("csv", store.get_run(run_id), build_rows(store.get_trials(run_id)))
            )
        )
    )
    r = next(
        r
        for r in rows
        if r["config"] == "xfs"
        and r["metric"] == "seconds"
        and json.loads(r["params"])["method"] == "write-4k"
    )
    assert float(r["mean"]) == pytest.approx(2.2) and r["n"] == "3"
    assert r["values"] == "2.0 2.2 2.4"


def test_terminal_table(store: Store, run_id: int) -> None:
    text = report_as(
        "table", store.get_run(run_id), build_rows(store.get_trials(run_id)), all_metrics=True
    )
    assert "alloc: seconds" in text and "alloc: fragments (count, lower is better)" in text
    assert "unsupported" in text and "2.20 ± 0.50 (3)" in text


@pytest.mark.parametrize(
    "mean, half, text",
    [
        (2.2034, 0.4971, "2.20 ± 0.50"),
        (0.0299, 0.0246, "0.030 ± 0.025"),
        (1234.5, 56.0, "1,234 ± 56"),
        (1.0, 0.0, "1 ± 0"),
        (8.0, None, "8"),
        (0.1234, None, "0.123"),
    ],
)
def test_mean_rounded_to_its_uncertainty(mean: float, half: float | None, text: str) -> None:
    assert numbers.mean_ci(mean, half) == text


def _open_store(path: str) -> str:
    Store(path).close()
    return "ok"


def test_many_processes_open_a_new_store_at_once(new_db: Callable[[], str]) -> None:
    import multiprocessing

    # Several fresh stores: the loser of a race can trip over every table in turn.
    dbs = [db for db in (new_db() for _ in range(12)) for _ in range(8)]
    with multiprocessing.get_context("fork").Pool(8) as pool:
        assert pool.map(_open_store, dbs) == ["ok"] * len(dbs)
    for db in set(dbs):
        store = Store(db)
        assert [r.id for r in store.list_runs()] == [] and store.migrated == []
        store.close()


def test_every_report_format_has_its_exporter() -> None:
    from fsbench.reports import formats

    assert set(export.EXPORTERS.all()) == set(formats.REPORT)
