"""Each shipped exporter writes any document: every block of a document that holds one of
each, in the terminal, markdown, CSV, JSON and HTML; a format no exporter has is refused in
one line naming those there are."""

from __future__ import annotations

import csv
import html
import io
import json
from pathlib import Path

import pytest

from fsbench.reports import document as d
from fsbench.reports import export, formats
from fsbench.system.errors import FsbenchError

TABLE = d.Table(
    "alloc: seconds",
    d.columns(["config", "write-4k"], numeric=["write-4k"]),
    ((d.Cell("ext4"), d.Cell("1.20 ± 0.05 (3)", "best", 1.2)), (d.Cell("xfs|2"), d.Cell("2.4"))),
    caption="mean ± 95% CI (n)",
    summary=(d.Cell("verdict", "muted"), d.Cell("ext4 > xfs", "good")),
    footnotes=("xfs: one trial failed",),
    legend="verdict: Welch",
)
DOCUMENT = d.Document(
    "toy",
    "a document of every block",
    (
        d.Title("every block", "made for a test"),
        d.Facts((d.Fact("host", "Linux 6.1"), d.Fact("", "scale tiny"))),
        TABLE,
        d.Verdicts((d.Verdict("ext4", ("2x faster", "no damage"), "warn"),), "Safety", "why"),
        d.Notes(("a note",)),
        d.Preformatted("the log", "git bisect start\n"),
        d.Chart(
            "toy-chart",
            "a chart",
            "commits",
            "seconds",
            (d.Interval("c1", 1.0, 2.0, "bad", x=0, mean=1.5),),
            (d.Interval("good (95% CI)", 0.5, 0.8, "good"),),
        ),  # fmt: skip
    ),
    {"answer": 42},
    d.Records(("config", "values", "params", "missing"), (("ext4", [1.5, None], {"b": 1}, None),)),
)
TEXTS = ("Linux 6.1", "scale tiny", "alloc: seconds", "ext4 > xfs", "xfs: one trial failed",
         "verdict: Welch", "2x faster", "a note", "git bisect start")  # fmt: skip


@pytest.mark.parametrize("fmt", ["table", "md", "html"])
def test_every_block_is_written(fmt: str, tmp_path: Path) -> None:
    text = export.write(DOCUMENT, fmt, export.Options(charts=tmp_path))
    shown = html.unescape(text) if fmt == formats.HTML else text
    assert [t for t in TEXTS if t not in shown] == [], fmt


def test_the_terminal_shows_the_byline_and_markdown_the_title() -> None:
    table = export.write(DOCUMENT, formats.TABLE)
    md = export.write(DOCUMENT, formats.MARKDOWN)
    assert table.startswith("made for a test\nhost: Linux 6.1\nscale tiny\n")
    assert md.startswith("## every block\n\n- host: Linux 6.1\n- scale tiny\n")
    assert "| ext4 | **1.20 ± 0.05 (3)** |" in md and "| xfs\\|2 | 2.4 |" in md
    assert "|---|---:|" in md and "| _verdict_ | _ext4 > xfs_ |" in md
    assert "- **ext4**: 2x faster; no damage" in md and "\x1b[" not in table


def test_csv_writes_the_records_and_json_the_payload() -> None:
    rows = list(csv.reader(io.StringIO(export.write(DOCUMENT, formats.CSV))))
    assert rows == [["config", "values", "params", "missing"], ["ext4", "1.5 -", '{"b": 1}', ""]]
    assert json.loads(export.write(DOCUMENT, formats.JSON)) == {"answer": 42}
    # A document without records: its tables, a value where a cell has one.
    bare = d.Document("toy", "t", (TABLE,), {})
    assert export.write(bare, formats.CSV).splitlines()[1] == "ext4,1.2"


def test_a_page_embeds_its_charts_and_keeps_them_when_asked(tmp_path: Path) -> None:
    page = export.write(DOCUMENT, formats.HTML, export.Options(charts=tmp_path))
    assert page.startswith("<!DOCTYPE html>") and page.count("data:image/svg+xml;base64,") == 1
    assert {p.name for p in tmp_path.iterdir()} == {"toy-chart.png", "toy-chart.svg"}
    assert '<td class="num best">1.20 ± 0.05 (3)</td>' in page


def test_an_unknown_format_is_refused_naming_every_exporter() -> None:
    with pytest.raises(FsbenchError, match=r"unknown format 'pdf' \(known: table, md, csv"):
        export.exporter("pdf")
    assert set(export.EXPORTERS.all()) == set(formats.REPORT)
    assert [name for name, e in export.EXPORTERS.all().items() if e.draws] == [formats.HTML]
