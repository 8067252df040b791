"""What every command that shows results writes, in no format: a document, made of a few
generic blocks in order, that every exporter (reports/export/) knows how to write.

A block says what a thing is, never how a format shows it:

- `Title`: the document's title, and its byline (who, what, when);
- `Facts`: key/value facts ("host: Linux 6.1, 2 x EPYC"), one a line, under a title or not;
- `Table`: rows of typed cells under named columns, the first naming the rows; its caption,
  a summary row (each column's verdict) with the lines saying why under it, numbered
  footnotes and a legend;
- `Verdicts`: what was decided, one line each, with the evidence under it;
- `Notes`: remarks on the whole document;
- `Preformatted`: text kept as it is (a log, a command);
- `Chart`: means with their intervals on a categorical axis, and bands across it;
- `Histogram` and `FlameDiff`: two configs' counts by bucket, and their folded stacks
  compared: drawn where a page shows charts, a table elsewhere.

Values reach a block already written by system/numbers.py's rules, so that every format
shows the same number the same way; a cell may also carry the value itself (`Cell.value`).
A document also holds its JSON payload (exactly what `--format json` has always printed)
and its CSV records; the document kinds with an HTML page of their own also hold the data
that page draws (reports/export/html.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

# How a cell or a line stands out, by what it means (each exporter decides how it looks):
# best and worst are the extremes a comparison ordered, warn a refusal or damage, same an
# equivalence, good and bad a verdict's direction, muted what matters less, marked what
# differs from the rest.
Tone = Literal["", "best", "worst", "warn", "same", "good", "bad", "muted", "marked"]


@dataclass(frozen=True)
class Title:
    text: str
    byline: str = ""  # "fsbench run 3 (quick, finished) 2026-01-02 10:00 UTC, fsbench 0.2"
    level: int = 2  # its rank in the document's outline (a page's tables rank below it)


@dataclass(frozen=True)
class Fact:
    label: str  # "" for a fact said whole
    value: str

    @property
    def text(self) -> str:
        return f"{self.label}: {self.value}" if self.label else self.value


@dataclass(frozen=True)
class Facts:
    facts: tuple[Fact, ...]
    title: str = ""


@dataclass(frozen=True)
class Cell:
    text: str
    tone: Tone = ""
    value: float | int | str | None = None  # the value itself, where the text shows one


@dataclass(frozen=True)
class Column:
    name: str
    numeric: bool = False  # right-aligned


@dataclass(frozen=True)
class Table:
    title: str
    columns: tuple[Column, ...]  # the first names the rows
    rows: tuple[tuple[Cell, ...], ...]
    caption: str = ""
    summary: tuple[Cell, ...] = ()  # a last row apart: its label, then one cell per column
    footnotes: tuple[str, ...] = ()  # the cells mark them [1], [2]...
    legend: str = ""
    level: int = 3  # its title's rank in the document's outline
    why: tuple[str, ...] = ()  # under its summary row: why its verdicts came out so


@dataclass(frozen=True)
class Verdict:
    text: str
    details: tuple[str, ...] = ()  # its evidence, a line each
    tone: Tone = ""  # of the details


@dataclass(frozen=True)
class Verdicts:
    items: tuple[Verdict, ...]
    title: str = ""
    caption: str = ""


@dataclass(frozen=True)
class Notes:
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Preformatted:
    title: str
    text: str


@dataclass(frozen=True)
class Interval:
    """An interval with its label: at a place on a chart's axis with its mean, a point
    (`x`: points may leave gaps; `label`: what the axis says there); else a band across the
    whole axis (an endpoint's CI), named in the legend."""

    label: str
    low: float
    high: float
    tone: Tone = ""
    x: float | None = None
    mean: float | None = None


@dataclass(frozen=True)
class Chart:
    name: str  # its file's stem, where charts are kept
    title: str
    x_label: str
    y_label: str
    points: tuple[Interval, ...]
    bands: tuple[Interval, ...] = ()


@dataclass(frozen=True)
class Histogram:
    """Counts by bucket, one series per config side by side (block request sizes, queue
    depths); where no chart is drawn, a table of the buckets by series."""

    name: str  # its file's stem, where charts are kept
    title: str
    x_label: str  # what the buckets are
    y_label: str  # what the counts are
    buckets: tuple[str, ...]
    series: tuple[tuple[str, tuple[float, ...]], ...]  # (config, a count per bucket)

    def as_table(self) -> Table:
        return Table(
            self.title,
            columns([self.x_label, *(s for s, _ in self.series)], [s for s, _ in self.series]),
            tuple(
                (Cell(bucket), *(Cell(f"{v[i]:.4g}", value=v[i]) for _, v in self.series))
                for i, bucket in enumerate(self.buckets)
            ),
            legend=self.y_label,
            level=4,
        )


@dataclass(frozen=True)
class FlameDiff:
    """The folded stacks of two configs compared (Brendan Gregg's differential flame graph:
    each frame as wide as its value in `b`, coloured by how it changed from `a`); where no
    chart is drawn, a table of the stacks that changed most."""

    name: str  # its file's stem, where charts are kept
    title: str
    unit: str  # what a stack's value is ("s per trial", "share of samples")
    a: str
    b: str
    stacks: tuple[tuple[str, float, float], ...]  # (root;...;leaf, a's value, b's)
    shown: int = 10  # the rows of its table: the stacks whose value changed most

    def ranked(self) -> list[tuple[str, float, float]]:
        """The stacks, the most changed first."""
        return sorted(self.stacks, key=lambda s: (-abs(s[2] - s[1]), s[0]))

    def as_table(self) -> Table:
        rows = tuple(
            (Cell(_tail(stack), value=stack), Cell(f"{va:.3g}", value=va),
             Cell(f"{vb:.3g}", value=vb),
             Cell(f"{vb - va:+.3g}", "bad" if vb > va else "good", value=vb - va))
            for stack, va, vb in self.ranked()[: self.shown]
        )  # fmt: skip
        return Table(
            self.title,
            columns(["stack (its leaf end)", self.a, self.b, "change"], [self.a, self.b, "change"]),
            rows,
            legend=f"{self.unit}; the {self.shown} stacks that changed most",
            level=4,
        )


def _tail(stack: str, frames: int = 7) -> str:
    """A folded stack's last frames, where stacks differ, without the scheduler's own that
    every off-CPU stack ends in (the whole stack is the cell's value)."""
    parts = stack.split(";")
    while len(parts) > 1 and parts[-1] in ("schedule", "__schedule"):
        parts.pop()
    return ";".join(parts) if len(parts) <= frames else "…;" + ";".join(parts[-frames:])


Block = Title | Facts | Table | Verdicts | Notes | Preformatted | Chart | Histogram | FlameDiff


@dataclass(frozen=True)
class Records:
    """The document's data, one record a row (CSV): lists are written space-separated,
    mappings as JSON, None as nothing."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]


@dataclass(frozen=True)
class Wants:
    """What a document is built with, besides the store: what the command line asked, and
    what the exporter draws."""

    all_metrics: bool = False  # every metric, not only the headline ones
    charts: bool = False  # the data its charts are drawn from (an exporter that draws)


@dataclass(frozen=True)
class Document:
    kind: str  # "report", "comparison", "race", "bisection", "history", "features"
    title: str  # a page's title
    blocks: tuple[Block, ...]
    payload: Any  # what `--format json` prints: a JSON value
    records: Records | None = None  # what `--format csv` prints (None: its tables)


def cells(texts: Sequence[str], tone: Tone = "") -> tuple[Cell, ...]:
    """Plain cells of these texts."""
    return tuple(Cell(t, tone) for t in texts)


def columns(names: Sequence[str], numeric: Sequence[str] = ()) -> tuple[Column, ...]:
    """Columns of these names, those in `numeric` right-aligned."""
    return tuple(Column(n, n in numeric) for n in names)


def facts(lines: Sequence[str], title: str = "") -> Facts:
    """Facts each said whole, one a line."""
    return Facts(tuple(Fact("", line) for line in lines), title)
