"""What the reports say of the statistics of every row: n, outliers among the values,
warm-up values apart, the difference the noise lets a row detect, the repetitions a 5%
difference needs, flags with their meanings; the CSV columns; the calibration page and
the warning on later runs. Runs made by the real repetition loop with a fake executor."""

from __future__ import annotations

import csv
import io
import json
import random
import re
from html import escape
from pathlib import Path

from fsbench.analysis import aa_check as calibration
from fsbench.analysis import validity
from fsbench.analysis.rows import Row
from fsbench.execute import loop as matrix
from fsbench.plan import model as planning
from fsbench.plan.model import FsConfig, Plan, WorkloadSpec
from fsbench.reports import html, source
from fsbench.store.results import Store
from fsbench.store.runkinds import CALIBRATION
from fsbench.system import numbers
from fsbench.workloads.base import Scale
from tests.fakes import FakeExecutor, Measure, Ran
from tests.helpers import report_as


def _plan(reps: int = 6, seed: int = 1234) -> Plan:
    return Plan(
        fs=[FsConfig(type="ext4"), FsConfig(type="xfs")],
        workload=[WorkloadSpec(name="alloc", params={"method": "write-4k"})],
        scale=Scale.TINY,
        reps=reps,
        seed=seed,
    )


def _run(store: Store, plan: Plan, measure: Measure, kind: str = "run") -> int:
    cells = planning.expand(plan)
    outcome = matrix.run(
        plan,
        cells,
        store,
        argv=["fsbench"],
        overrides={},
        executor=FakeExecutor(plan, cells, measure),
        kind=kind,
    )
    return outcome.run_id


def _noisy(cv: float, seed: int, scale: dict[str, float] | None = None) -> Measure:
    rng = random.Random(seed)

    def measure(ran: Ran) -> float:
        return (scale or {}).get(ran.slot.cell.config.display, 1.0) * (1 + rng.gauss(0, cv))

    return measure


STEADY = (1.5, 1.0, 1.02, 0.98, 1.01, 0.99, 1.03)  # by rep: the warm-up (0) is slow


def _with_outlier(ran: Ran) -> float:
    """xfs's 4th counted repetition is wild; the rest steady."""
    if ran.slot.cell.config.type == "xfs" and ran.slot.rep == 4:
        return 9.0
    return STEADY[ran.slot.rep]


def _reps_row(page: str, config: str) -> str:
    """The repetitions table's row of a config (one workload, one headline metric)."""
    block = page.split('class="reps"', 1)[1].split("</details>", 1)[0]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", block, re.S)
    return next(r for r in rows if f">{config}</th>" in r)


def _row(store: Store, rid: int, config: str) -> Row:
    return next(
        r for r in source.load(store, rid).rows if r.config == config and r.metric == "seconds"
    )


def test_html_shows_n_outliers_warmups_and_what_the_noise_detects(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    rid = _run(store, _plan(), _with_outlier)
    xfs, ext4 = _row(store, rid, "xfs"), _row(store, rid, "ext4")
    assert xfs.n == 6 and xfs.outliers == [xfs.values.index(9.0)] and xfs.warmup_values
    assert xfs.min_detectable is not None and xfs.reps_for_5pct is None  # far too noisy
    assert ext4.min_detectable is not None and ext4.reps_for_5pct is not None
    page = html.render_html(source.load(store, rid), [])
    row = _reps_row(page, "xfs")
    assert '<td class="num">6</td>' in row  # n
    # Every counted value, in the order they ran, the outlier marked (never dropped).
    assert re.search(r'<mark class="outlier"[^>]*>9</mark>', row)
    for v in xfs.values:
        assert (f"{v:.4g}" if v != 9.0 else "9") in row
    # The warm-up value apart, not counted.
    assert 'class="warmup" title="warm-up, not counted"' in row
    assert f"{xfs.warmup_values[0]:.4g}" in row
    assert "warm-up (not counted)" in page
    # What n and the noise let this row see, and what 5% would take.
    assert f"±{numbers.share(xfs.min_detectable)}" in row and "could detect" in page
    assert "beyond reach" in row
    # Every flag with its meaning from the registry.
    assert ">outliers</span>" in row and escape(validity.meaning("outliers")) in row
    assert "repetition" in row  # the detail: which one, with its value
    ext4_row = _reps_row(page, "ext4")
    assert "<mark" not in ext4_row
    assert (
        f"±{numbers.share(ext4.min_detectable)}" in ext4_row
        and f"n={ext4.reps_for_5pct}" in ext4_row
    )
    # The raw values mark the warm-up trials.
    assert '<tr class="warmup">' in page


def test_csv_columns_and_the_new_statistics(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    rid = _run(store, _plan(), _with_outlier)
    loaded = source.load(store, rid)
    text = report_as("csv", loaded.run, loaded.rows)
    header = text.splitlines()[0].split(",")
    assert header == [
        "run",
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
        "ci95_low",
        "ci95_high",
        "cv",
        "values",
        "warmup_values",
        "outliers",
        "min_detectable",
        "reps_for_5pct",
        "flags",
        "verdict",
        "ranking",
        "why",
    ]
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == len(loaded.rows)
    by_config = {r["config"]: r for r in rows if r["metric"] == "seconds"}
    xfs, got = _row(store, rid, "xfs"), by_config["xfs"]
    assert [float(v) for v in got["values"].split()] == xfs.values
    assert [float(v) for v in got["warmup_values"].split()] == xfs.warmup_values
    assert [int(i) for i in got["outliers"].split()] == xfs.outliers
    assert float(got["min_detectable"]) == xfs.min_detectable
    assert got["reps_for_5pct"] == "" and xfs.reps_for_5pct is None
    assert "outliers" in got["flags"].split()
    ext4, got = _row(store, rid, "ext4"), by_config["ext4"]
    assert int(got["reps_for_5pct"]) == ext4.reps_for_5pct
    assert got["outliers"] == "" and ext4.outliers == []
    assert json.loads(got["params"])["method"] == "write-4k"


def test_calibration_page_and_the_warning_on_later_runs(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    cal = _run(store, calibration.aa_plan(_plan(5, 3)), _noisy(0.05, 1), CALIBRATION.name)
    page = html.render_html(source.load(store, cal), [])
    assert "What this machine resolves" in page and 'id="calibration"' in page
    (item,) = calibration.analyze(store.get_run(cal), store.get_trials(cal))
    section = page.split('id="calibration"', 1)[1].split("</section>", 1)[0]
    assert f"{item.cv:.1%}" in section and f"±{item.resolvable():.0%} (n=5)" in section
    for d in calibration.DIFFERENCES:
        assert f"{d:.0%}?" in section
    assert "n=" in section or ">yes<" in section
    assert "calibration-warning" not in page  # a calibration is not checked against itself

    # ext4 and xfs 2% apart at n = 3: below what this machine resolves -> a warning near
    # the top that names the calibration run, and the flag's meaning.
    close = _run(store, _plan(3, 4), _noisy(0.05, 2, {"xfs": 1.02}))
    loaded = source.load(store, close)
    page = html.render_html(loaded, [])
    assert loaded.calibration_run == cal
    warning = page.split('id="calibration-warning"', 1)[1].split("</div>", 1)[0]
    assert f"Below calibration run {cal}" in warning
    assert escape(validity.meaning("below-calibration")) in warning
    assert page.index('id="calibration-warning"') < page.index("<nav")
    assert ">below-calibration</span>" in page  # on the rows, with its meaning
    text = report_as("table", loaded.run, loaded.rows, calibration_run=cal)
    assert f"calibration: run {cal} of this host and kernel; in 1 comparison" in text
    md = report_as("md", loaded.run, loaded.rows, calibration_run=cal)
    assert f"- calibration: run {cal}" in md

    # 3x apart: clearly resolvable -> no warning, a quiet line naming the calibration.
    far = _run(store, _plan(3, 5), _noisy(0.05, 3, {"xfs": 3.0}))
    page = html.render_html(source.load(store, far), [])
    assert "calibration-warning" not in page
    assert f"calibration: run {cal} of this host and kernel; every difference" in page
