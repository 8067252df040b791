"""Every figure the README, the guides (docs/*.md) and engine/README.md print is one of
three kinds, each in a marked passage (bench/figures.py says how): a measurement of
fsbench's benches (`<!-- bench: -->`, the result file and the key of each value), a
constant of the code (`<!-- code: -->`, the module and the attribute of each value), or
an example's output compared whole by the test the passage names (`<!-- example: -->`).
A figure is its value at its printed precision. The check proves itself: each figure
changed by one unit of its last digit fails it, and a number outside a passage that looks
like a figure (a decimal point, a percent sign, a unit, a thousands separator) fails the
parser unless the allowlist says, with its reason, why it is none."""

from __future__ import annotations

import re
import sys
from decimal import Decimal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import figures  # noqa: E402


def test_every_published_figure_is_its_value_at_its_printed_precision() -> None:
    assert figures.check_all() == []


def test_every_document_is_checked_and_the_benches_quoted_are_marked() -> None:
    names = {str(p.relative_to(ROOT)) for p in figures.documents()}
    assert {"README.md", "engine/README.md", "docs/engine.md", "docs/statistics.md"} <= names
    assert names >= {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    cited = {
        name.split("-")[0].removesuffix(".json")
        for path in figures.documents()
        for p in figures.passages(path.read_text(), path.name)
        for name in p.files.values()
    }
    assert {
        "engine_vs_filebench",
        "fio_fidelity",
        "fsmark_fidelity",
        "monitor_overhead",
        "fleet_scale",
        "tune_vs_grid",
    } <= cited


def one_unit_more(text: str) -> str:
    """A printed number plus one unit of its last digit, printed the same way."""
    plain = text.replace(",", "")
    decimals = len(plain.partition(".")[2])
    value = Decimal(plain) + Decimal(1).scaleb(-decimals)
    out = f"{value:,.{decimals}f}" if "," in text else f"{value:.{decimals}f}"
    return out


def test_one_unit_more() -> None:
    assert one_unit_more("1.133") == "1.134"
    assert one_unit_more("0.99") == "1.00"
    assert one_unit_more("25") == "26"
    assert one_unit_more("1,742.5") == "1,742.6"
    assert one_unit_more("9") == "10"


def _mutated(text: str, printed: figures.Printed) -> str:
    lines = text.splitlines()
    line = lines[printed.line - 1]
    assert line[printed.start : printed.end] == printed.text
    lines[printed.line - 1] = (
        line[: printed.start] + one_unit_more(printed.text) + line[printed.end :]
    )
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "doc",
    [
        p
        for p in figures.documents()
        if figures.all_passages(p.read_text())
        != figures.passages(p.read_text(), kinds=("example",))
    ],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_a_figure_one_unit_off_fails_the_check(doc: Path) -> None:
    """Every figure of every bench or code passage, changed by one unit of its last
    printed digit in a copy of the text (1.133 -> 1.134, 25 -> 26, 3.6% -> 3.7%), fails
    the check of its passage; a number marked `_` (no figure) is left alone."""
    text = doc.read_text()
    name = str(doc.relative_to(ROOT))
    changed = 0
    for passage in figures.passages(text, name, kinds=("bench", "code")):
        assert figures.check_passage(passage) == []
        for fig in figures.figures(passage):
            if fig.key == "_":
                continue
            copy = _mutated(text, fig.printed)
            (again,) = [p for p in figures.all_passages(copy, name) if p.line == passage.line]
            problems = figures.check_passage(again)
            assert problems, f"{name} line {fig.printed.line}: {fig.printed.text} -> " + (
                f"{one_unit_more(fig.printed.text)} passes ({fig.key})"
            )
            changed += 1
    assert changed > 0


def test_the_parser_catches_a_figure_outside_a_passage() -> None:
    for text in (
        "The engine was 1.13x (1.01-1.20) filebench.",
        "The cell came out equivalent (0.99-1.04).",
        "fsbench wrote 2,341 MiB/s.",
        "Pooled over 162 pairs the engine is ahead.",
        "The first trial took 3.2 s, the second 1.7 s.",
        "The sampler's overhead was 4.3% at load average 28.",
        "On xfs it made fileserver ~10% slower than filebench.",
        # what the heuristic let through: a score, a growth, a level with no word near
        "| ext4 | 300 | 0.811 / 0.812 |",
        "quick's kernel tree grows 12% in 300 pulls",
        "| 3 | 1.8% | 1.1% |",
        "78,579 files",
        "cut 6-7 s into it",
        "on an 8 GiB image, 64M at tiny, 4K a file",
        # a design constant too is checked against its code, in a code passage
        "Two configs are equivalent when the 90% CI of their ratio is within 1 ± 5%.",
        "pgbench with the database at 0.5x and 2x the memory it may use.",
        # what fsbench prints, quoted in a code span or shown in a block, is read as prose
        "`--margin 0.05` (default) and `1.13x (0.99-1.04)` in a code span.",
        "```\nfsbench run --reps 5   # 1.13x (1.01-1.20)\n```",
        "```text\next4 1.13 ± 0.02 (5)\n```",
        "```\nfsbench: 3 runs\n```",
    ):
        assert figures.unmarked(text), text
    # what a user types (a command, an option, a setting, a plan), dates, file names, bare
    # counts and allowed numbers are no figure
    for text in (
        "`--margin 0.05` (default), `size=16M`, `-I 256`, `fsbench run --reps 5`.",
        "```\nfsbench run --reps 5 --set size=16M \\\n    --margin 0.05   # until decided\n```",
        '```toml\n[[workload]]\nsize = "16M"\nfullness = 0.7\n```',
        '```json input\n{"schema": 1, "fullness": 0.8}\n```',
        "On 2026-11-27 18:30 UTC, engine_vs_filebench-24-rounds.json, 3 configs, n = 10.",
        "write-4k and fallocate(2) under Linux 6.18.44, pytest below 9.2.",
    ):
        assert figures.unmarked(text) == [], text
    # inside a passage a figure is checked against its key, not scanned
    marked = (
        "<!-- bench: monitor_overhead.json\nresults.ratio_with_without\n-->\n"
        "The ratio was 1.04x (measured).\n<!-- /bench -->\n"
    )
    assert figures.unmarked(marked) == []
    assert figures.check(marked) == []


def test_every_allowed_number_says_why_it_is_no_figure() -> None:
    for allowed in figures.ALLOWED:
        assert len(allowed.reason.split()) >= 2, allowed
        re.compile(allowed.pattern)


def test_a_code_passage_is_the_constant_it_names() -> None:
    body = "on an 8 GiB image, within ±5%"
    keys = "targets.DEFAULT_IMAGE_SIZE/GiB design.DEFAULT_MARGIN"
    head = "<!-- code: fsbench.plan.targets fsbench.analysis.design"
    ok = f"{head}\n{keys}\n-->\n{body}\n<!-- /code -->\n"
    assert figures.check(ok) == []
    assert figures.unmarked(ok) == []
    assert figures.check(ok.replace("8 GiB", "9 GiB"))  # the code's value, not another
    assert figures.check(ok.replace("±5%", "±6%"))
    # a key reads the code it names: a constant alone, or an unknown attribute, is refused
    assert figures.check(ok.replace("design.DEFAULT_MARGIN", "0.05"))
    assert figures.check(ok.replace("design.DEFAULT_MARGIN", "design.NO_SUCH"))
    assert figures.check(ok.replace("fsbench.analysis.design", "os.path"))
    # an engine constant is read from its Rust source
    rust = "<!-- code: engine/src/fileset.rs\nfileset.DIR_GAMMA_SHAPE\n-->\nshape 1.5\n"
    rust += "<!-- /code -->\n"
    assert figures.check(rust) == [] and figures.check(rust.replace("1.5", "1.6"))
    # a passage is closed by its own kind
    assert figures.check(ok.replace("<!-- /code -->", "<!-- /bench -->"))


def test_an_example_passage_names_the_test_that_compares_it() -> None:
    ok = (
        "<!-- example: tests/unit/test_readme_example.py -->\n"
        "run 1: 7 repetitions\n<!-- /example -->\n"
    )
    assert figures.check(ok) == [] and figures.unmarked(ok) == []
    assert figures.check(ok.replace("test_readme_example", "test_no_such"))
    assert figures.check(ok, "docs/aging.md")  # that test does not read aging.md


def _passage(keys: str, body: str, files: str = "monitor_overhead.json") -> str:
    return f"<!-- bench: {files}\n{keys}\n-->\n{body}\n<!-- /bench -->\n"


def test_the_marker_rules() -> None:
    ok = _passage("results.with.mean_s results.reps", "0.80 s with it at n = 8 each.")
    assert figures.check(ok) == []

    def one(text: str, what: str) -> None:
        problems = figures.check(text)
        assert len(problems) == 1 and re.search(what, problems[0]), problems

    one(_passage("results.with.mean_s results.reps", "0.81 s at n = 8."), "is not 0.81")
    one(_passage("results.with.mean_s", "0.80 s at n = 8."), "no key left")
    one(_passage("results.with.mean_s results.reps _", "0.80 s at n = 8."), "keys for no figure")
    one(_passage("results.no_such_key", "0.80 s."), "no 'no_such_key'")
    one(_passage("_", "1.04x as fast."), "cannot be `_`")
    one(_passage("_", "over 8 pairs."), "cannot be `_`")
    one(_passage("8", "n = 8."), "a constant")
    one(_passage("", "nothing", files="monitor_overhead"), "names result files")
    # a percentage is the value x 100; a range's percent sign is both ends'
    assert figures.check(_passage("results.without.cv results.with.cv", "29-31% (CV)")) == []
    # a file merged from several invocations is said to be
    merged = "engine_vs_filebench-filebench-tree.json"
    one(_passage("summary.cells", "27 cells.", files=merged), "invocations")
    assert (
        figures.check(_passage("summary.cells invocations", "27 cells, 5 invocations.", merged))
        == []
    )
    # a table row template: {N} is the row's N-th cell
    table = (
        "| fs | personality | threads | ratio |\n|---|---|---|---|\n"
        "| btrfs | fileserver | 64 | 1.016 (0.992-1.041) |\n"
    )
    tpl = "| | | cells[fs={1},personality={2},threads={3}].threads | .ratio .ci90[0] .ci90[1] |"
    assert (
        figures.check(_passage(f"invocations\n{tpl}", "5 invocations.\n\n" + table, merged)) == []
    )
    bad = table.replace("1.016", "1.017")
    one(_passage(f"invocations\n{tpl}", "5 invocations.\n\n" + bad, merged), "is not 1.017")


def test_what_is_no_figure() -> None:
    line = (
        "On 2026-11-27 18:30-18:54 UTC, commit 005a0d3, `--rounds 12`, "
        "engine_vs_filebench-24-rounds.json, ext4, p99, Linux 6.18.44: 1.5x"
    )
    assert [n.text for n in figures.numbers(line)] == ["1.5"]
