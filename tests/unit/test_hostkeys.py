"""The registry of host facts (system/hostkeys.py): every key with its type, check and
formatter; facts refused where they are written, read forward from any older store (extra
keys kept, missing ones None, a value failing its check kept and flagged); every fixture
store's host printed as before the registry; and no host fact read by string elsewhere."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from fsbench.reports import export, formats, hosts, run_report, source
from fsbench.reports.compare.sections import _where
from fsbench.reports.html.markup import facts
from fsbench.reports.html.provenance import host_items
from fsbench.reports.tables import machine_line
from fsbench.store.results import Store
from fsbench.store.schema import runs
from fsbench.system import hostfacts
from fsbench.system.errors import FsbenchError
from fsbench.system.hostkeys import KEYS, Host

SRC = Path(__file__).resolve().parents[2] / "src" / "fsbench"
DATA = Path(__file__).resolve().parents[1] / "data" / "stores"
# The fixture stores written before host facts had a registry (host-lines.json's); those
# written after (v12.db) only read back as stored.
BEFORE_THE_REGISTRY = ("v5.db", "v6-fleet.db", "v6.db", "v7.db", "v8.db")

# Per key: a value it keeps and how every report prints it, and a value it refuses.
GOOD: dict[str, tuple[Any, str]] = {
    "hostname": ("vm", "vm"),
    "kernel": ("6.18.44-fc-v669", "6.18.44-fc-v669"),
    "kernel_version": ("#1 SMP PREEMPT_DYNAMIC @0", "#1 SMP PREEMPT_DYNAMIC @0"),
    "machine": ("x86_64", "x86_64"),
    "cpu": ("AMD EPYC", "AMD EPYC"),
    "cpus": (2, "2"),
    "memory_bytes": (25276502016, "23.5 GiB"),
    "cpufreq_governor": ("schedutil", "schedutil"),
    "cpuidle_driver": ("haltpoll", "haltpoll"),
    "cpu_latency_us": (0, "0"),
    "dirty_ratio": ("20", "20"),
    "dirty_background_ratio": ("10", "10"),
    "free_page_reporting": (True, "True"),
    "python": ("3.11.7", "3.11.7"),
    "fsbench_version": ("0.1.0", "0.1.0"),
    "fsbench_commit": ("bcdd466", "bcdd466"),
    "tools": ({"mkfs.xfs": "mkfs.xfs version 6.1.0", "fs_mark": None},
              "fs_mark: not found; mkfs.xfs: mkfs.xfs version 6.1.0"),
}  # fmt: skip
BAD: dict[str, tuple[Any, str]] = {
    "hostname": ("two\nlines", "'hostname' = 'two\\nlines' is not one line of text"),
    "kernel": (6, "'kernel' = 6 is not str"),
    "kernel_version": ("", "'kernel_version' = '' is not one line of text"),
    "machine": (["x86_64"], "'machine' = ['x86_64'] is not str"),
    "cpu": (1.5, "'cpu' = 1.5 is not str"),
    "cpus": (0, "'cpus' = 0 is not a positive number"),
    "memory_bytes": ("24G", "'memory_bytes' = '24G' is not int"),
    "cpufreq_governor": ("", "'cpufreq_governor' = '' is not one line of text"),
    "cpuidle_driver": ("", "'cpuidle_driver' = '' is not one line of text"),
    "cpu_latency_us": (-1, "'cpu_latency_us' = -1 is not a number at least 0"),
    "dirty_ratio": (20, "'dirty_ratio' = 20 is not str"),
    "dirty_background_ratio": ("110", "'dirty_background_ratio' = '110' is not a whole "
                               "percentage (0-100)"),
    "free_page_reporting": (1, "'free_page_reporting' = 1 is not bool"),
    "python": ("", "'python' = '' is not one line of text"),
    "fsbench_version": (0.1, "'fsbench_version' = 0.1 is not str"),
    "fsbench_commit": ("", "'fsbench_commit' = '' is not one line of text"),
    "tools": ({"mke2fs": 1}, "'tools' = {'mke2fs': 1} is not dict[str, str | None]"),
}  # fmt: skip


def test_every_key_has_a_type_a_meaning_a_check_and_a_formatter() -> None:
    assert set(GOOD) == set(KEYS) == set(BAD)
    for name, key in KEYS.items():
        assert key.fact.meaning and key.type is not None and key.fact.check.test
        value, shown = GOOD[name]
        assert key.refuses(value) == "" and key.refuses(None) == ""
        assert Host.write({name: value}).shown(name) == shown, name
        assert Host.read({}).shown(name) is None  # not kept: None, never a made-up value
    assert KEYS["memory_bytes"].fact.unit == "bytes" and KEYS["cpus"].fact.unit == "CPUs"


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_value_is_refused_in_one_line_where_it_is_written(name: str) -> None:
    value, why = BAD[name]
    with pytest.raises(FsbenchError) as refused:
        Host.write({**{k: v for k, (v, _) in GOOD.items()}, name: value})
    assert str(refused.value) == f"host fact {why}"
    assert "\n" not in str(refused.value)  # one line: a value is shown by its repr


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_value_read_from_an_old_store_is_kept_and_flagged(name: str) -> None:
    value, why = BAD[name]
    stored = {"kernel": "6.1", name: value}
    host = Host.read(stored)
    assert host.flagged == {name: why} and host.value(name) is None
    assert host.stored() == stored and host.others() == {name: value}


def test_an_unknown_key_is_refused_where_written_and_kept_where_read() -> None:
    with pytest.raises(
        FsbenchError, match="^host fact 'kernal' is not in fsbench.system.hostkeys$"
    ):
        Host.write({"kernal": "6.18"})
    # A run stored by another fsbench: keys it knew and this one does not, keys it lacked.
    old = {"hostname": "vm", "kernel": "6.1", "numa_nodes": 2, "tools": {"mke2fs": "1.46"}}
    host = Host.read(old)
    assert host.hostname == "vm" and host.cpus is None and host.memory_bytes is None
    assert host.others() == {"numa_nodes": 2} and not host.flagged
    assert host.stored() == old and list(host.stored()) == list(old)  # its order, too
    assert json.dumps(host.stored()) == json.dumps(old)
    with pytest.raises(KeyError):
        host.shown("numa_nodes")  # not a registry key: printed as stored, by no formatter


def test_what_this_host_collects_is_in_the_registry() -> None:
    made = hostfacts.host(["ext4"], {})
    assert set(made.stored()) <= set(KEYS) and not made.flagged
    assert made.kernel and made.cpus and made.tools and "mke2fs" in made.tools


def test_the_store_refuses_bad_facts_and_reads_an_older_fsbench_forward(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    args: dict[str, Any] = {"name": "t", "fsbench_version": "0", "argv": [], "plan": {},
                            "overrides": {}, "schedule": [], "target": {}}  # fmt: skip
    with pytest.raises(FsbenchError, match="^host fact 'cpus' = '2' is not int$"):
        store.create_run(host={"kernel": "6.18", "cpus": "2"}, **args)
    assert store.list_runs() == []  # nothing of the refused run was written
    run_id = store.create_run(host={"kernel": "6.18", "cpus": 2}, **args)
    # What an older fsbench kept: a key this one lacks, one it did not have, a bad value.
    old = {"kernel": "6.1", "memory_bytes": "lots", "swap": "none"}
    with store.engine.begin() as conn:
        conn.execute(update(runs).where(runs.c.id == run_id).values(host=json.dumps(old)))
    run = store.get_run(run_id)
    assert run.host.kernel == "6.1" and run.host.cpus is None
    assert run.host.flagged == {"memory_bytes": "'memory_bytes' = 'lots' is not int"}
    # Reports go on: the JSON report keeps the record as stored, the header says what it
    # could not read, the HTML lists it with the reason.
    report = json.loads(export.write(run_report.of(source.load(store, run_id)), formats.JSON))
    assert report["host"] == old
    assert machine_line(run) == (
        "host: Linux 6.1, None x None, ? RAM; stored facts unreadable here: "
        "'memory_bytes' = 'lots' is not int"
    )
    items = dict(host_items(run))
    assert items["memory"] is None and items["swap"] == "none"
    assert items["memory bytes"] == "lots ('memory_bytes' = 'lots' is not int)"
    store.close()


def test_every_fixture_store_reads_back_as_stored(tmp_path: Path) -> None:
    seen = 0
    for db in sorted(DATA.glob("*.db")):
        shutil.copyfile(db, tmp_path / db.name)
        store = Store(tmp_path / db.name)
        with store.engine.connect() as conn:
            raw = dict(conn.execute(runs.select().with_only_columns(runs.c.id, runs.c.host)).all())
        for run in store.list_runs():
            assert json.dumps(run.host.stored()) == raw[run.id] and not run.host.flagged
            seen += 1
        store.close()
    assert seen == 15


def test_every_fixture_store_prints_its_host_as_before_the_registry(tmp_path: Path) -> None:
    """host-lines.json: what fsbench printed of each fixture run's host before host facts
    had a registry (the header line, the HTML machine card, compare's header, the hosts
    table of compare --by host and a fleet run), made by the fsbench of that commit."""
    before = json.loads((DATA / "host-lines.json").read_text())
    now = {}
    for db in (DATA / name for name in BEFORE_THE_REGISTRY):
        shutil.copyfile(db, tmp_path / db.name)
        store = Store(tmp_path / db.name)
        for run in store.list_runs():
            now[f"{db.name} {run.id}"] = {
                "header": machine_line(run),
                "html": facts(host_items(run)),
                "compare": _where(run),
                "hosts": hosts.facts_of(run),
            }
        store.close()
    assert now == before


# Where host facts may be read by their keys' names: the registry and its writer.
OWNERS = {SRC / "system" / "hostkeys.py", SRC / "system" / "hostfacts.py"}
# Keys of the same names in other records (a guest's "vm" facts, a target's description,
# a workload's facts): read there by string, as those records' own keys.
SHARED = {"kernel", "kernel_version", "fsbench_version", "tools"}
READS = [
    re.compile(r"\bhost\s*(\.get\(|\[)"),  # run.host, or a variable named host
    re.compile(r"\bh\s*(\.get\(|\[)\s*[\"']"),  # the reports' short name for it
    re.compile(r"stored\(\)\s*(\.get\(|\[)"),  # Host.stored(): the record as kept
    re.compile(
        r"(\.get\(|\[)\s*[\"'](" + "|".join(sorted(set(KEYS) - SHARED)) + r")[\"']"
    ),  # a host-only key, from anything
]


def test_no_host_fact_is_read_by_string_outside_the_registry() -> None:
    found = [
        f"{path.relative_to(SRC)}:{number}: {line.strip()}"
        for path in sorted(SRC.rglob("*.py"))
        if path not in OWNERS
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if any(pattern.search(line) for pattern in READS)
    ]
    assert found == [], "read these through Host (system/hostkeys.py): " + "\n".join(found)


def test_the_check_catches_a_read_by_string() -> None:
    # The patterns above find what the readers used to write.
    for line in ('h.get("memory_bytes")', "run.host.get('kernel')", "host['cpus']",
                 'member.host.stored()["kernel"]', 'facts.get("cpufreq_governor")'):  # fmt: skip
        assert any(p.search(line) for p in READS), line
    for line in ("run.host.kernel", 'h.shown("memory_bytes")', 'guest.get("kernel")'):
        assert not any(p.search(line) for p in READS), line
