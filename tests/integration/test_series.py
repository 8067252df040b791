"""Per-second series and working sets sized to memory, for real: fio and the engine's
fileserver through the real runner on a loop image record one point per second and a
steady-state verdict; fio's logs stay off the filesystem and are removed; a run swept by
scale_to_mem under a mem cap gives a row per factor, reads more from the device for the
larger one, and its report draws the curve against working set / memory; the same two
working sets read twice in one trial under that cap: the smaller one's second read comes
from the page cache, the larger one's from the device again."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fsbench.store.records import TrialRecord
from fsbench.system import engine, memcap
from tests.helpers import fsbench
from tests.integration.test_memcap import read_twice
from tests.runcell import Bench, flags, loop_bench, metrics

pytestmark = pytest.mark.integration
MIB = 1 << 20


@pytest.fixture(scope="module")
def bench() -> Iterator[Bench]:
    yield from loop_bench(2 << 30)


def one_per_second(record: TrialRecord, name: str, unit: str) -> list[float]:
    series = record.provenance["series"][name]
    assert series["unit"] == unit
    n = len(series["t"])
    assert n >= 1 and series["t"] == [float(i) for i in range(n)], series
    assert len(series["v"]) == n and all(v > 0 for v in series["v"]), series
    values: list[float] = series["v"]
    return values


def steady_entry(record: TrialRecord, name: str, window: int = 3) -> dict[str, Any]:
    """The runner's verdict: judged when the series covers the tiny window, a start and
    steady_<name> when reached, the not-steady flag when judged and never reached."""
    verdict: dict[str, Any] = record.provenance["steady"]
    assert verdict["series"] == name and verdict["window_s"] == window
    n = len(record.provenance["series"][name]["t"])
    assert verdict["judged"] == (n >= window)
    if verdict["reached"]:
        assert verdict["start_s"] is not None and f"steady_{name}" in metrics(record)
    assert ("not-steady" in flags(record)) == (verdict["judged"] and not verdict["reached"])
    return verdict


@pytest.mark.skipif(shutil.which("fio") is None, reason="no fio")
def test_fio_seq_write_records_seconds_and_removes_its_logs(bench: Bench) -> None:
    (record,) = bench.trial("ext4", "fio", size="1G")  # ~1-4 s of writing here
    assert record.status == "ok", f"{record.message}\n{record.detail}"
    seconds = metrics(record)["seconds"].value
    mib = one_per_second(record, "mib_s", "MiB/s")
    assert len(mib) <= seconds + 1
    p50 = one_per_second(record, "write_clat_p50_us", "us")
    p99 = one_per_second(record, "write_clat_p99_us", "us")
    assert all(a <= b for a, b in zip(p50, p99, strict=True))
    steady_entry(record, "mib_s")
    # the logs went beside the mount point, not onto the filesystem, and are gone
    assert not list(bench.workdir.glob("fsbench-fio-logs-*"))
    with bench.mounted("ext4") as mnt:
        assert sorted(p.name for p in mnt.iterdir()) == ["fsbench-fio.0", "lost+found"]


@pytest.mark.skipif(shutil.which("fio") is None, reason="no fio")
def test_fio_time_based_has_every_second_of_its_runtime(bench: Bench) -> None:
    (record,) = bench.trial("xfs", "fio", profile="rand-rw-16k-direct", runtime=3, size="32M")
    assert record.status == "ok", f"{record.message}\n{record.detail}"
    # fio logs seconds 0 and 1; the last one comes from its totals
    assert len(one_per_second(record, "mib_s", "MiB/s")) == 3
    for ddir in ("read", "write"):
        assert len(one_per_second(record, f"{ddir}_clat_p99_us", "us")) == 3
    assert steady_entry(record, "mib_s")["judged"]


@pytest.mark.skipif(engine.find_engine() is None, reason="fsbench-engine not built")
def test_fileserver_records_seconds_and_a_steady_verdict(bench: Bench) -> None:
    (record,) = bench.trial("xfs", "fileserver", threads=2, duration=4)
    assert record.status == "ok", f"{record.message}\n{record.detail}"
    ops = one_per_second(record, "ops_per_s", "ops/s")
    assert len(ops) == 4  # seconds 0-3 of the measured phase, after the warm-up
    assert len(one_per_second(record, "mb_per_s", "MB/s")) == 4
    p50 = one_per_second(record, "lat_p50_us", "us")
    p99 = one_per_second(record, "lat_p99_us", "us")
    assert all(a <= b for a, b in zip(p50, p99, strict=True))
    # the seconds add up to the engine's own count
    total = metrics(record)["ops"].value
    assert sum(ops) == pytest.approx(total, rel=0.02)
    # what prepare laid out: 80 of the tiny fileset's 100 files of ~128 KiB
    assert 2 * MIB < metrics(record)["fileset_bytes"].value < 40 * MIB
    assert metrics(record)["prepare_seconds"].value > 0
    assert steady_entry(record, "ops_per_s")["judged"]


@pytest.mark.skipif(shutil.which("fio") is None, reason="no fio")
# alone: its second read counts on the page cache, which another worker's cold trial
# drops (a cold fresh-clone make test read 222 MB the second time, not 128).
@pytest.mark.alone
def test_scale_to_mem_sweeps_the_working_set_across_the_cap(workdir: Path) -> None:
    if os.geteuid() != 0 or memcap.hierarchy() is None:
        pytest.skip("needs root and a memory cgroup")
    db = workdir / "r.db"
    res = fsbench(
        "run", "--fs", "ext4", "--workload", "fio", "--set", "profile=seq-read",
        "--knob", "mem=256M", "--set", "scale_to_mem=0.5,2", "--scale", "tiny",
        "--reps", "1", "--warmup", "0", "--image-size", "1G",
        "--workdir", str(workdir / "work"), "--db", str(db), "--json", timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    rows = out["rows"]
    read = {r["params"]["scale_to_mem"]: r["mean"] for r in rows if r["metric"] == "read_mib_s"}
    assert set(read) == {0.5, 2.0} and all(v > 0 for v in read.values())
    device = {
        r["params"]["scale_to_mem"]: r["mean"] for r in rows if r["metric"] == "device_read_bytes"
    }
    # 128 MiB and 512 MiB read cold: the device serves each whole data set
    assert device[0.5] >= 0.9 * 128 * MIB and device[2.0] >= 0.9 * 512 * MIB
    assert device[2.0] > 3 * device[0.5]
    # A cold read reads from the device with or without a cap; a second read in the same
    # trial shows the cap: 0.5x the cap stays cached, 2x is read from the device again.
    again = {f: read_twice(workdir, int(f * 256), "256M", "1G")["256M"] for f in (0.5, 2.0)}
    assert 0.9 * 128 * MIB <= again[0.5] <= 1.1 * 128 * MIB, again  # once: then cached
    assert again[2.0] >= 1.8 * 512 * MIB, again  # twice from the device
    page = workdir / "report.html"
    rep = fsbench("report", str(out["run"]), "--db", str(db), "--format", "html", "-o", str(page))
    assert rep.returncode == 0, rep.stderr
    assert 'alt="fio: read_mib_s by working set / memory"' in page.read_text()
