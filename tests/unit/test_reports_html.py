"""The HTML page: structure, escaping of everything from plans and tools, no network."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from fsbench.reports import html, source
from fsbench.store.features import FeatureRow, FeatureTable, Result
from fsbench.store.records import MetricRecord, TrialRecord
from fsbench.store.results import Store

EVIL = "<script>alert(1)</script>"
EVIL_DETAIL = "<img src=x onerror=alert(2)>"
# What the run stored of its workload and of `fsbench features`: the page shows these,
# whatever the fsbench that renders it knows.
STORED_FACTS = {
    "summary": f"as stored with the run {EVIL}",
    "headline": ["seconds", "fragments"],
    "params": {"method": "how the file is made", "size": "the file's size"},
}
FEATURES = FeatureTable(
    filesystems=["ext4", "xfs", "btrfs"],
    features=[
        FeatureRow(
            name="reflink copy",
            question="Does cp --reflink=always share extents?",
            results={
                "ext4": Result(supported="no", note=f"stored note {EVIL}"),
                "xfs": Result(supported="yes", value="1 shared extent(s)"),
                "btrfs": Result(supported="yes", value="1 shared extent(s)"),
            },
        )
    ],
    kernel="6.18.0",
)


class Page(HTMLParser):
    """The parts of a page the tests look at."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.ids: list[str] = []
        self.h2: list[str] = []
        self.srcs: list[str] = []
        self.hrefs: list[str] = []
        self.details = 0
        self._in_h2 = False
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        a = dict(attrs)
        if a.get("id"):
            self.ids.append(a["id"] or "")
        if tag == "img":
            self.srcs.append(a.get("src") or "")
        if tag == "a":
            self.hrefs.append(a.get("href") or "")
        if tag == "details":
            self.details += 1
        if tag == "h2":
            self._in_h2 = True
            self.h2.append("")
        for name in a:
            assert not name.startswith("on"), f"event handler attribute {name} on <{tag}>"

    def handle_endtag(self, tag: str) -> None:
        if tag == "h2":
            self._in_h2 = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._in_h2:
            self.h2[-1] += data


def _trial(
    seq: int,
    rep: int,
    config: str,
    method: str,
    seconds: float,
    status: str = "ok",
    message: str = "",
    detail: str = "",
    provenance: dict[str, object] | None = None,
    fs: str = "xfs",
) -> TrialRecord:
    params = {"method": method, "size": "64M"}
    metrics = []
    if status == "ok":
        metrics = [
            MetricRecord("seconds", seconds, "s", "lower"),
            MetricRecord("fragments", 1 if fs == "xfs" else 2, "count", "lower"),
            MetricRecord("extents", 1 if fs == "xfs" else 3, "count", "lower"),
        ]
    samples = [
        {
            "t": 0.1 * (i + 1),
            "read_bps": 0.0,
            "write_bps": 1e8,
            "util_pct": 90.0,
            "cpu_user_pct": 5.0,
            "cpu_sys_pct": 40.0,
            "cpu_iowait_pct": 30.0,
            "dirty_bytes": 0.0,
            "writeback_bytes": 0.0,
        }
        for i in range(5 if status == "ok" else 0)
    ]
    return TrialRecord(
        seq=seq,
        rep=rep,
        cell_key=f"{config}|alloc|{json.dumps(params)}",
        config=config,
        fs=fs,
        mkfs_options=["-O", "^has_journal"] if fs == "ext4" else [],
        mount_options="i_version" if fs == "ext4" else "",
        workload="alloc",
        params=params,
        status=status,
        message=message,
        detail=detail,
        provenance=provenance or {},
        metrics=metrics,
        samples=samples,
    )


@pytest.fixture
def store(tmp_path: Path) -> tuple[Store, int]:
    store = Store(tmp_path / "r.db")
    rid = store.create_run(
        name=f"demo {EVIL}",
        fsbench_version="0.1.0",
        argv=["fsbench", "run", "--fs", f"xfs:label={EVIL}", "--workload", "alloc"],
        plan={"scale": "tiny", "reps": 3, "name": EVIL},
        overrides={"method": ["fallocate", "write-4k"]},
        schedule=[],
        host={
            "hostname": "box",
            "kernel": "6.18.0",
            "cpu": "AMD EPYC <b>",
            "cpus": 2,
            "memory_bytes": 8 << 30,
            "tools": {"mke2fs": f"mke2fs 1.47.0 {EVIL}"},
        },
        workloads={"alloc": STORED_FACTS},
        features=FEATURES.model_dump(mode="json"),
        target={
            "kind": "loop",
            "summary": "loop image 1.0 GiB on ext4 (/dev/sdq, <b>, rotational), direct I/O on",
            "size_bytes": 1 << 30,
            "backing_fs": "ext4",
            "backing_device": "/dev/sdq",
            "backing_model": EVIL,
            "rotational": True,
            "direct_io": True,
        },
    )
    notes = [
        {
            "option": "i_version",
            "kind": "ignored",
            "where": "mount",
            "evidence": f"kernel: EXT4-fs: Ignoring removed i_version option {EVIL}",
        }
    ]
    seq = 0
    for rep in (1, 2, 3):
        for config, fs, k in (("ext4 i_version", "ext4", 1.3), (EVIL, "xfs", 1.0)):
            for method, base in (("fallocate", 0.05), ("write-4k", 1.0)):
                prov: dict[str, object] = {
                    "option_notes": notes if fs == "ext4" else [],
                    "flags": {"short": f"timed phase 0.05 s {EVIL}"}
                    if method == "fallocate"
                    else {},
                    "mkfs": {"argv": [f"mkfs.{fs}", "-q", "/dev/loop0"]},
                    "mount": {"effective": ["rw", "relatime"]},
                }
                value = base * k * (1 + 0.01 * rep)
                store.record_trials(
                    rid, [_trial(seq, rep, config, method, value, provenance=prov, fs=fs)]
                )
                seq += 1
        store.record_trials(
            rid,
            [
                _trial(
                    seq,
                    rep,
                    "ext2",
                    "fallocate",
                    0,
                    status="unsupported",
                    message=f"fallocate(2): Operation not supported {EVIL}",
                    detail=EVIL_DETAIL,
                    fs="ext2",
                )
            ],
        )
        seq += 1
    store.finish_run(rid, "finished")
    return store, rid


def _page(store: tuple[Store, int]) -> str:
    s, rid = store
    return html.render_html(source.load(s, rid), [])


def test_every_string_is_escaped(store: tuple[Store, int]) -> None:
    text = _page(store)
    assert EVIL not in text and "<img src=x" not in text and "<b>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "&lt;img src=x onerror=alert(2)&gt;" in text
    page = Page(text)
    assert "script" not in page.tags  # the page has no script at all, and data adds none
    # The label reads as itself once the browser unescapes it.
    assert any(EVIL in chunk for chunk in page.text)


def test_structure(store: tuple[Store, int]) -> None:
    page = Page(_page(store))
    assert page.h2 == [
        "Summary",
        "Machine, target and plan",
        "alloc",
        "Filesystem features",
        "Unsupported and failed cells",
        "Ignored options",
        "Validity flags",
        "Raw values",
    ]
    for section in ("summary", "provenance", "features", "problems", "options", "flags", "raw"):
        assert section in page.ids and f"#{section}" in page.hrefs
    assert len(page.ids) == len(set(page.ids))  # anchors are unique
    assert page.details >= 4  # tool versions, plan, tool output, raw values
    assert page.tags.count("table") >= 8


def test_content(store: tuple[Store, int]) -> None:
    text = _page(store)
    # provenance: host, kernel, target, tools, command line
    for fact in (
        "Linux 6.18.0",
        "2 × AMD EPYC &lt;b&gt;",
        "8.0 GiB",
        "loop image 1.0 GiB on ext4 (/dev/sdq, &lt;b&gt;, rotational)",
        "<dt>size</dt><dd>1.0 GiB</dd>",
        "<dt>backing model</dt><dd>&lt;script&gt;",
        "mke2fs 1.47.0",
        "fsbench run --fs",
    ):
        assert fact in text, fact
    # orders: constant fragments 1 vs 2 are exact; seconds differ by 30%
    assert 'class="num best"' in text and '<span class="badge best">order</span>' in text
    # unsupported cell with its message and the tool's output
    assert "Operation not supported" in text and "tool output" in text
    # ignored option with its evidence, validity flag with its detail
    assert "Ignoring removed i_version option" in text
    assert "timed phase 0.05 s" in text and ">short<" in text
    # raw values: every trial
    assert text.count("<tr>") >= 15


def test_no_network(store: tuple[Store, int]) -> None:
    text = _page(store)
    lowered = text.lower()
    for needle in ("<link", "@import", "url(", 'src="http', 'href="http', "<iframe"):
        assert needle not in lowered


def test_write_run_report(store: tuple[Store, int], tmp_path: Path) -> None:
    s, rid = store
    out = tmp_path / "out"
    paths = html.write_run_report(s, rid, out)
    assert paths[0] == out / "report.html"
    assert all(p.exists() and p.parent == out for p in paths)
    pngs = [p for p in paths if p.suffix == ".png"]
    svgs = [p for p in paths if p.suffix == ".svg"]
    assert pngs and len(pngs) == len(svgs)
    assert any(p.name.startswith("timeline-") for p in pngs)
    page = Page(paths[0].read_text())
    assert len(page.srcs) == len(svgs)
    assert all(src.startswith("data:image/svg+xml;base64,") for src in page.srcs)


def test_the_page_is_made_of_what_the_run_stored(
    store: tuple[Store, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workload summaries, headline metrics and the features table come from the run, not
    from the live workload registry or the features file of this machine."""
    import fsbench.store.features
    import fsbench.workloads

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a report asked the live code instead of the store")

    for module, name in (
        (fsbench.workloads, "get"),
        (fsbench.workloads, "all_workloads"),
        (fsbench.store.features, "load_features"),
        (fsbench.execute.features, "load_features"),
    ):
        monkeypatch.setattr(module, name, refuse)
    s, rid = store
    text = html.html_report(s, rid)
    assert "as stored with the run &lt;script&gt;" in text
    assert "how the file is made" in text  # the parameters' meanings
    assert "stored note &lt;script&gt;" in text and "fsb-features" in text
    assert "btrfs" not in text.split('id="features"')[1].split("</section>")[0]
    # The stored headline (seconds, fragments) decides the tables and charts: no extents.
    assert "alloc: seconds" in text and "alloc: fragments" in text
    assert "alloc: extents" not in text


def test_no_report_module_imports_the_workload_registry() -> None:
    import ast
    import importlib
    import pkgutil

    import fsbench.reports

    for info in pkgutil.walk_packages(fsbench.reports.__path__, "fsbench.reports."):
        module = importlib.import_module(info.name)
        tree = ast.parse(Path(str(module.__file__)).read_text())
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                names = [base, *(f"{base}.{a.name}" for a in node.names)]
            for name in names:
                assert not name.startswith("fsbench.workloads"), (info.name, name)
                assert not name.startswith("fsbench.store.runfacts"), (info.name, name)
                assert "load_features" not in name and "features.store" not in name, (
                    info.name,
                    name,
                )


def test_the_summary_evidence_never_contradicts_its_answer(store: tuple[Store, int]) -> None:
    """Each summary row's badge is its comparison's kind; the evidence beside an undecided
    or equivalent answer prints no p, and the JSON report says the same kinds."""
    import re

    from tests.helpers import report_as

    text = _page(store)
    summary = text[
        text.index('id="summary"') : text.index("</section>", text.index('id="summary"'))
    ]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", summary, flags=re.S)
    answered = [r for r in rows if 'class="badge' in r]
    assert answered
    kinds = []
    for row in answered:
        kind = re.search(r'class="badge [a-z]+">([a-z]+)</span>', row)
        assert kind is not None, row
        kinds.append(kind.group(1))
        evidence = row.split("</td>")[-2]
        if kind.group(1) != "order":
            assert "p =" not in evidence and "p &lt;" not in evidence, row
    loaded = source.load(store[0], store[1])
    doc = json.loads(report_as("json", loaded.run, loaded.rows))
    headline = [c["verdict"]["kind"] for c in doc["comparisons"] if c["headline"]]
    assert sorted(kinds) == sorted(headline)
