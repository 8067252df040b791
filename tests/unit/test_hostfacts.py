"""Host facts that explain a run's numbers."""

from __future__ import annotations

from pathlib import Path

from fsbench.analysis import history
from fsbench.reports.html.provenance import host_items
from fsbench.reports.tables import machine_line
from fsbench.store.records import RunRecord, TrialRecord
from fsbench.system.hostfacts import free_page_reporting
from fsbench.system.hostkeys import Host

# Feature bits as the kernel prints them (bit 0 first): bits 1, 2 and 5 set is a balloon
# with a stats queue, deflate on OOM and free page reporting.
REPORTING = "0110010" + "0" * 57
NOT_REPORTING = "0110000" + "0" * 57


def device(root: Path, name: str, kind: str, features: str, bound: bool = True) -> None:
    d = root / name
    d.mkdir(parents=True)
    (d / "device").write_text(kind + "\n")
    (d / "features").write_text(features + "\n")
    if bound:
        (d / "driver").mkdir()


def test_a_reporting_balloon_is_seen(tmp_path: Path) -> None:
    device(tmp_path, "virtio0", "0x0002", REPORTING)  # a block device: its bits mean other things
    device(tmp_path, "virtio1", "0x0005", REPORTING)
    assert free_page_reporting(tmp_path)


def test_no_reporting_without_the_feature_or_the_driver(tmp_path: Path) -> None:
    assert not free_page_reporting(tmp_path)  # no virtio at all (bare metal)
    device(tmp_path, "virtio0", "0x0005", NOT_REPORTING)
    device(tmp_path, "virtio1", "0x0002", REPORTING)
    device(tmp_path, "virtio2", "0x0005", REPORTING, bound=False)
    assert not free_page_reporting(tmp_path)


def _run(host: dict[str, object]) -> RunRecord:
    return RunRecord(
        id=1, name="quick", status="finished", created_at="2026-11-29T00:00:00",
        finished_at=None, fsbench_version="0.1.0", argv=[], plan={}, overrides={},
        schedule=[], target={},
        host=Host.read({"kernel": "6.18", "cpus": 2, "cpu": "EPYC", **host}),
    )  # fmt: skip


def test_the_report_header_says_when_the_host_takes_free_memory_back() -> None:
    said = "free memory reported to the hypervisor"
    assert said in machine_line(_run({"free_page_reporting": True}))
    assert said not in machine_line(_run({"free_page_reporting": False}))
    assert said not in machine_line(_run({}))  # a run stored before the fact was kept


def test_the_report_header_says_when_the_cpus_were_held_out_of_deep_idle() -> None:
    said = "CPUs held out of deep idle"
    assert said in machine_line(_run({"cpu_latency_us": 0}))
    assert said not in machine_line(_run({"cpu_latency_us": 2_000_000_000}))  # no request
    assert said not in machine_line(_run({}))  # a run stored before the fact was kept


def test_the_provenance_names_the_idle_driver_and_the_request() -> None:
    items = dict(host_items(_run({"cpuidle_driver": "haltpoll", "cpu_latency_us": 0})))
    assert items["cpuidle"] == "haltpoll, held out of deep idle (latency 0)"
    items = dict(host_items(_run({"cpuidle_driver": "haltpoll", "cpu_latency_us": 2_000_000_000})))
    assert items["cpuidle"] == "haltpoll, no latency request"
    items = dict(host_items(_run({"cpuidle_driver": "intel_idle", "cpu_latency_us": 20})))
    assert items["cpuidle"] == "intel_idle, latency request 20 us"
    assert dict(host_items(_run({})))["cpuidle"] is None  # stored before: nothing claimed


def test_history_sees_the_cpus_held_out_of_deep_idle_as_a_change() -> None:
    """A series whose runs began with and without the wake-up latency held differs in that
    fact (0 is a value, not a missing one); runs stored before it say nothing of it."""
    trial = TrialRecord(
        seq=0, rep=1, cell_key="k", config="ext4", fs="ext4", mkfs_options=[],
        mount_options="", workload="alloc", params={}, status="ok",
    )  # fmt: skip
    held = history.facts_of(_run({"cpu_latency_us": 0, "cpuidle_driver": "haltpoll"}), trial)
    free = history.facts_of(_run({"cpu_latency_us": 2_000_000_000}), trial)
    assert held["host cpu_latency_us"] == "0"
    assert free["host cpu_latency_us"] == "2000000000"
    assert held["host cpuidle_driver"] == "haltpoll"
    assert "host cpu_latency_us" not in history.facts_of(_run({}), trial)
