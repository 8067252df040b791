"""`fsbench explain` on real filesystems (loop image, bpftrace on the kernel's
tracepoints): the mechanism is named where it must be and not where it must not.

One source run of three fs_mark configs, each file fsync'ed: ext4 twice alike (labels a
and b: an A/A pair) and ext4 mounted `sync` (every write and create waits for the
journal). Its explain run (instrumented trials, tracers attached) must name, for `sync`
against `a`, more cache flushes per fsync and more device writes, with most of the gap
in the threads' time blocked (journal, flushes, device I/O), not on the CPU; and for the
A/A pair, no mechanism at all; its page draws the two configs' block requests and their
stacks compared. The explain run is a run of its own, kind `explain`, whose trials never
enter the source run; `fsbench run --explain` makes both at once, and the source run's
report then says why under its verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsbench.store.results import Store
from tests.helpers import fsbench

pytestmark = pytest.mark.integration

BLOCKED = ("offcpu_journal_s", "offcpu_flush_s", "offcpu_device_io_s")
CPU = ("workload_cpu_user_s", "workload_cpu_system_s")


def _plan(tmp: Path) -> Path:
    plan = tmp / "plan.toml"
    plan.write_text(
        f"""
name = "sync-against-default"
fs = [
  {{type = "ext4", label = "a"}},
  {{type = "ext4", label = "b"}},
  {{type = "ext4", mount = "sync", label = "sync"}},
]
workload = [{{name = "fs_mark", params = {{files = 300}}}}]
scale = "tiny"
reps = 1
warmup = 0
seed = 11
[target]
image_size = "1G"
workdir = "{tmp / "work"}"
"""
    )
    return plan


# An A/A pair that must name nothing: alone, as every such test (tests/conftest.py); CI
# once saw "blocked on the journal" named for it while other workers loaded the machine.
@pytest.mark.alone
def test_explain_names_flushes_for_sync_and_nothing_for_an_aa_pair(tmp_path: Path) -> None:
    db = str(tmp_path / "e.db")
    # The counted run, then its instrumented pass (`fsbench explain 1`) at once.
    ran = fsbench("run", str(_plan(tmp_path)), "--db", db, "--explain", timeout=1800)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "explain: run 2, 9 instrumented trials in " in ran.stderr, ran.stderr[-2000:]
    said = fsbench("explain", "2", "--db", db, "--format", "json")  # its document again
    assert said.returncode == 0, said.stderr[-3000:]
    doc = json.loads(said.stdout)
    assert (doc["run"], doc["source"]) == (2, 1)
    by_pair = {tuple(e["configs"]): e for e in doc["explanation"]}
    assert set(by_pair) == {("a", "b"), ("a", "sync"), ("b", "sync")}

    sync = by_pair[("a", "sync")]
    found = {m["mechanism"]: m for m in sync["mechanisms"]}
    named = [m["mechanism"] for m in sync["mechanisms"] if m["verdict"] == "different"]
    assert "flushes_per_fsync" in named, named
    assert found["flushes_per_fsync"]["ratio"] > 1.5  # sync: more flushes, not fewer
    assert "dev_write_requests" in named and found["dev_write_requests"]["ratio"] > 1
    blocked = sum(found[m]["values"][1] - found[m]["values"][0] for m in BLOCKED)
    cpu = sum(found[m]["values"][1] - found[m]["values"][0] for m in CPU)
    assert sync["gap_s"] > 0 and blocked > 0.5 * sync["gap_s"] and blocked > 5 * abs(cpu)
    assert sync["top"]["sync"]["offcpu"], "the stacks that carry the gap are shown"

    twins = by_pair[("a", "b")]
    assert [m for m in twins["mechanisms"] if m["verdict"] == "different"] == []
    assert {m["verdict"] for m in twins["mechanisms"]} <= {"equivalent", "undecided"}

    store = Store(db)
    source, explained = store.get_run(1), store.get_run(2)
    assert (explained.kind, explained.facts["source"]) == ("explain", 1)
    assert len(store.run_trials(source)) == 3  # the instrumented trials are not the run's
    page = fsbench("report", "2", "--db", db, "--format", "md")
    assert page.returncode == 0 and "cache flushes and FUA writes per fsync" in page.stdout

    # The views of the explain run's page: the block requests of both configs side by
    # side and their stacks compared. Under sync the journal is waited for in the write
    # and create paths (fsync's own wait may shrink: the data is on disk already), so
    # the most changed stack may be one that shrank; a journal wait is among those grown.
    sizes = sync["histograms"]["dev.write_size"]
    assert set(sizes["configs"]) == {"a", "sync"} and sum(sizes["configs"]["sync"]) > 0
    assert sum(sync["histograms"]["dev.queue_depth"]["configs"]["a"]) > 0
    top = sync["stack_diff"]["offcpu"]["top"]
    grown = [s for s in top if s["values"][1] > s["values"][0]]
    assert any("jbd2_" in s["stack"] for s in grown), top

    # The source run's report says why under its verdicts, from this explain run.
    counted = json.loads(fsbench("report", "1", "--db", db, "--format", "json").stdout)
    why = {tuple(w["configs"]): w for w in counted["why"]}
    assert set(why) == {("a", "b"), ("a", "sync"), ("b", "sync")}, why
    assert why[("a", "b")]["line"].endswith("no mechanism decided different")
    assert why[("a", "b")]["named"] == []
    named = {m["mechanism"]: m["ratio"] for m in why[("a", "sync")]["named"]}
    assert named.get("flushes_per_fsync", 0) > 1.5, named
    text = fsbench("report", "1", "--db", db, "--format", "md").stdout
    assert "- why sync against a: " in text and "why: fsbench explain 2 " in text
    page = tmp_path / "run1.html"
    assert fsbench("report", "1", "--db", db, "--format", "html", "-o", str(page)).returncode == 0
    html = page.read_text()
    assert '<tr class="why"' in html and "why sync against a: " in html
    explained = tmp_path / "explain2.html"
    said = fsbench("report", "2", "--db", db, "--format", "html", "-o", str(explained))
    assert said.returncode == 0 and 'alt="offcpu: sync against a"' in explained.read_text()
