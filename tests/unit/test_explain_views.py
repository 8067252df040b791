"""What a run's report and its explain run's report say of an explained pair, built from a
real store filled through its own API (tests/explained_runs.py: `sync` waits PLANTED
seconds a trial more in the journal, flushes three times as often, writes 4 KiB requests
at depth 1 where `a` writes 64 KiB ones at depth 4): the line under the verdict in every
format, the differential flame graph's most changed stack, the histograms' values, and
the page's images drawn by matplotlib."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from fsbench.reports import document as d
from fsbench.reports import explain, export, run_report
from fsbench.reports.charts.flame import relative, tree
from fsbench.reports.html.page import html_report
from fsbench.store.results import Store
from tests.explained_runs import DEVICE, JOURNAL, PLANTED, explained_store

Runs = tuple[Store, int, int]


@pytest.fixture
def runs(tmp_path: Path) -> Iterator[Runs]:
    store, source, explained = explained_store(str(tmp_path / "e.db"))
    yield store, source, explained
    store.close()


def _ratio(line: str, label: str) -> float:
    found = re.search(rf"{re.escape(label)} ([0-9.]+)x as much", line)
    assert found, line
    return float(found.group(1))


def test_the_verdict_row_says_why_in_every_format(runs: Runs) -> None:
    store, source, explained = runs
    document = run_report.build(store, source, d.Wants())
    (table,) = [b for b in document.blocks if isinstance(b, d.Table)]
    (line,) = table.why
    assert line.startswith("why sync against a: blocked on the journal ")
    assert _ratio(line, "blocked on the journal") > 2  # sync waits longer, not shorter
    assert _ratio(line, "cache flushes and FUA writes per fsync") == pytest.approx(3, rel=0.1)
    assert "(explained: " in line
    assert not [b for b in document.blocks if isinstance(b, d.Verdicts) and b.title == "Why"]

    said = {f: export.write(document, f) for f in ("table", "md", "csv", "json")}
    assert f"- {line}" in said["md"] and "why: fsbench explain 2 " in said["md"]
    assert "why sync against a: blocked on the journal" in said["table"]
    records = list(csv.DictReader(io.StringIO(said["csv"])))
    assert {r["config"]: r["why"] for r in records} == {"a": line, "sync": line}
    (pair,) = json.loads(said["json"])["why"]
    assert (pair["configs"], pair["explain_run"], pair["line"]) == (["a", "sync"], 2, line)
    assert pair["named"][0]["mechanism"] == "offcpu_journal_s" and pair["named"][0]["ratio"] > 2
    page = html_report(store, source)
    assert '<tr class="why" title="fsbench explain 2: instrumented trials' in page
    assert "why sync against a: blocked on the journal" in page and 'id="why"' not in page


def test_a_run_never_explained_has_no_line(tmp_path: Path) -> None:
    store, source, _ = explained_store(str(tmp_path / "e.db"), explained=False)
    document = run_report.build(store, source, d.Wants())
    assert all(not b.why for b in document.blocks if isinstance(b, d.Table))
    assert "why" not in document.payload and "why " not in export.write(document, "md")
    store.close()


def _views(document: d.Document) -> dict[str, d.Block]:
    return {
        b.title.split(":")[0]: b
        for b in document.blocks
        if isinstance(b, d.FlameDiff | d.Histogram)
    }


def test_the_stack_that_grew_leads_the_flame_graph(runs: Runs) -> None:
    store, _, explained = runs
    document = explain.report(store, explained, d.Wants())
    offcpu = _views(document)["offcpu"]
    assert isinstance(offcpu, d.FlameDiff) and (offcpu.a, offcpu.b) == ("a", "sync")
    top = offcpu.ranked()[0]
    assert top == (JOURNAL, pytest.approx(1.0), pytest.approx(1.0 + PLANTED))
    assert {s for s, _, _ in offcpu.stacks} == {JOURNAL, DEVICE}  # idle waits left out
    frames = tree(offcpu.stacks).children["[D]"].children["fs_mark"].children["do_fsync"]
    journal = frames.children["ext4_sync_file"]
    assert (journal.a, journal.b) == (pytest.approx(1.0), pytest.approx(1.0 + PLANTED))
    assert frames.b - frames.a == pytest.approx(PLANTED)  # the change reaches the root
    device = frames.children["file_write_and_wait_range"]
    assert relative(journal) == pytest.approx(PLANTED / (1 + PLANTED)) and relative(device) == 0
    profile = _views(document)["profile"]
    assert isinstance(profile, d.FlameDiff) and profile.unit == "share of samples"
    payload = document.payload["explanation"][0]["stack_diff"]
    assert payload["offcpu"]["top"][0]["stack"] == JOURNAL
    assert payload["offcpu"]["top"][0]["values"] == pytest.approx([1.0, 1.0 + PLANTED])


def test_histograms_side_by_side(runs: Runs) -> None:
    store, _, explained = runs
    document = explain.report(store, explained, d.Wants())
    sizes = _views(document)["write request sizes"]
    assert isinstance(sizes, d.Histogram)
    assert sizes.buckets == ("4.0 KiB", "8.0 KiB", "64.0 KiB")
    assert dict(sizes.series) == {"a": (0.0, 10.0, 100.0), "sync": (100.0, 10.0, 0.0)}
    depth = _views(document)["queue depth at each request's issue"]
    assert isinstance(depth, d.Histogram) and depth.buckets == ("1", "4")
    assert dict(depth.series) == {"a": (0.0, 110.0), "sync": (110.0, 0.0)}
    said = document.payload["explanation"][0]["histograms"]
    assert said["dev.write_size"]["configs"]["sync"] == [100.0, 10.0, 0.0]
    assert said["dev.queue_depth"]["buckets"] == ["1", "4"]
    md = export.write(document, "md")
    assert "#### write request sizes: sync against a" in md and "| 64.0 KiB | 100 | 0 |" in md


def test_the_page_embeds_the_drawn_images(runs: Runs, tmp_path: Path) -> None:
    store, _, explained = runs
    document = explain.report(store, explained, d.Wants(charts=True))
    charts = tmp_path / "charts"
    page = export.write(document, "html", export.Options(charts=charts))
    assert page.count('src="data:image/svg+xml;base64,') == 4
    assert 'alt="offcpu: sync against a"' in page and "the stacks that changed most" in page
    (flame,) = charts.glob("flame-offcpu-*.png")
    # The journal's frames grew: the graph is red where they are, wider than the rest.
    pixels = np.asarray(Image.open(flame).convert("RGB")).astype(int)
    r, g, b = pixels[..., 0], pixels[..., 1], pixels[..., 2]
    assert ((r > g + 60) & (r > b + 60)).mean() > 0.05
    assert len(list(charts.glob("hist-*.svg"))) == 2
