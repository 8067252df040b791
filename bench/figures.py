"""The figures fsbench publishes about itself, each tied to the value it prints.

README.md, docs/*.md and engine/README.md quote what fsbench's own benches measured
(bench/*.py) only inside a **marked passage**, which names the result file(s) of
bench/results/ and, per figure, the key of the value it prints:

    <!-- bench: engine_vs_filebench-filebench-tree.json deadline=engine_vs_filebench-deadline.json
    pooled.all.ratio .pairs pooled.all.ci90[0] pooled.all.ci90[1]
    summary.verdicts.ahead _ deadline:cells[fs=btrfs,personality=fileserver,threads=64].ratio
    | _ | _ | cells[fs={1},personality={2},threads={3}].threads | .ratio .ci90[0] .ci90[1] |
    -->
    ... the passage: prose, tables ...
    <!-- /bench -->

- The first line names the files: `FILE.json`, the default, then any `ALIAS=FILE.json`
  (a key `ALIAS:path` reads that one).
- Every number of the passage outside what a user types (code spans and blocks of input:
  see span_kind, block_kind), dates (2026-11-27), times (18:30) and file names is a
  **figure**, and takes the next key, in order: a block of output's numbers too. A key
  is a path into the file (`pooled.all.ratio`, `cells[fs=btrfs,threads=64].ci90[0]`:
  `[k=v,...]` the one element of a list with those fields, `[?k=v]` all of them, `[*]`
  every element, `[1:]` a slice, `["by hand"]` a key with a space), a path relative to
  the object the last full path ended in (`.pairs` after `pooled.all.ratio`), or a
  computation named in full (`len(cells)`, `min(cells[fs=btrfs].round_ratios)`, `100*x`,
  `a-b`: functions `len min max median mean sum abs round`). A key reads the file: a
  constant alone is none. Prefer a key the bench stored (its `summary`) to a computation.
- `_` is a number of the text that is no figure (the 64 of "at 64 threads", an issue
  number). It is refused where the number looks measured: a percentage, a ratio `1.1x`,
  a thousands separator, an interval `(a-b)`, or a count or unit after it (`pairs`,
  `rounds`, `cells`, `s`, `ops/s` ...).
- A line of the header that starts with `|` is a **row template**: each data row of the
  passage's tables takes, cell by cell, the keys of the template's cell, `{N}` standing
  for the text of the row's N-th cell (from 1), relative keys for the object of the
  row's first full key. A table's header row and its `|---|` line hold no figures.

A figure is shown as its value **at its printed precision**: 1.133 is the value rounded
to 3 decimals, 25 the count, 3.6% the value x 100 to one decimal. A passage that cites a
file merged from several invocations of its bench (its `parts`) says so (the word
"invocations"). `check()` returns the problems, one line each; `python bench/figures.py
[DOC...]` lists every figure with its key and value.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def documents() -> list[Path]:
    """Every document that may publish a figure of fsbench about itself."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "engine/README.md"]


# -- Reading a document: passages and the numbers they print ---------------------------

_OPEN = re.compile(r"^\s*<!--\s*(bench|code|example):\s*(.*)$")
_CLOSE = re.compile(r"^\s*<!--\s*/(bench|code|example)\s*-->\s*$")
KINDS = ("bench", "code", "example")
_FENCE = re.compile(r"^\s*(```|~~~)")
# What is no figure, masked before numbers are read: code spans, HTML comments, links'
# targets, file names and paths, dates, times of day, URLs.
_MASK = re.compile(
    r"<!--.*?-->"
    r"|\]\([^)]*\)"
    r"|https?://\S+"
    r"|[\w./-]*\w\.(?:json|py|md|f|patch|toml|txt|db)\b"
    r"|\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?"
    r"|\b\d{1,2}:\d{2}(?::\d{2})?(?:\s*[-–]\s*\d{1,2}:\d{2}(?::\d{2})?)?"
)
_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?")
_PERCENT_AFTER_RANGE = re.compile(r"\s*[-–]\s*\d[\d,]*(?:\.\d+)?%")
_COUNTED = re.compile(
    r"\s*(?:pairs?|rounds?|cells?|trials?|reps|repetitions|runs?|hosts?|connections|polls?"
    r"|ops/s|files/s|MiB/s|MB/s|trials/s|s|ms|us|µs|min|CPU-seconds|ahead|behind"
    r"|undecided|equivalent)\b"
)


@dataclass(frozen=True)
class Printed:
    """A number as a document prints it."""

    line: int  # 1-based line of the document
    start: int  # its place in the line
    end: int
    text: str  # as printed, without a percent sign: "1,742.5"
    percent: bool
    ratio: bool  # followed by x or ×
    counted: bool  # followed by a count or a unit: "162 pairs", "10 s"
    in_interval: bool  # one end of "(a-b)" or "a-b" of decimals
    unit: bool = False  # a unit after it the parser counts: "8 GiB", "64M", "10 s"
    size: bool = False  # the unit is a size: "8 GiB", "64M" (a bench's parameter may be `_`)

    @property
    def decimals(self) -> int:
        return len(self.text.partition(".")[2])

    def shows(self, value: float) -> bool:
        """Whether `value` printed at this figure's precision is this figure."""
        v = value * 100 if self.percent else value
        return f"{v:.{self.decimals}f}" == self.text.replace(",", "")


def mask(line: str) -> str:
    """The line with what holds no figure blanked out (same length): what a user types in
    code spans (`--reps 5`, `size=16M`: see span_kind), comments, links' targets, URLs,
    file names, dates and times of day. A code span that shows what fsbench prints
    (`1.023 [95%: 0.980, 1.070]`) is read as prose is."""
    line = _SPAN.sub(
        lambda m: (
            " " * len(m.group(0)) if span_kind(m.group(1)) == INPUT else " " + m.group(1) + " "
        ),
        line,
    )
    return _MASK.sub(lambda m: " " * len(m.group(0)), line)


# -- Code: what a reader types, and what fsbench shows -----------------------------------
#
# A code span or a fenced block is either INPUT, what a user types: a command line, an
# option, a plan's or an inventory's setting, a spec, a passage's marker; its numbers are
# the user's parameters, no figure; or OUTPUT, what fsbench (or a tool) shows: its numbers
# are figures like the prose's. In a block of input, a comment (`# ...`, `// ...`) is
# prose. Outside an `<!-- example: -->` passage (which a test compares whole) and outside
# a bench or code passage (which binds each number to its key), a block of output may
# show no number at all.

INPUT, OUTPUT = "input", "output"
COMMANDS = (
    "fsbench", "fsbench-engine", "make", "cargo", "python3", "mkdir", "cp", "git", "sudo",
    "fs_mark", "fio", "nice", "kill", "tar", "sh",
)  # fmt: skip
_SPAN = re.compile(r"`([^`]*)`")
_COMMAND = re.compile(rf"(?:{'|'.join(map(re.escape, COMMANDS))})(?=\s|$)")
# An option, a TOML table, a command, a setting (`size=16M`, `"schema": 1`, `kernel =
# ["6.1"]`, `numpy<2.0.0`), a call or a man page (`msleep(100)`, `kill(2)`), a passage's
# key (`bounds.look_level({1}, 3, 10, 0.05)`), a git setting (`gc.auto 0`). What fsbench
# prints has spaces where a setting has none: `p = 0.012`, `n < 3`, `explained: 80%`.
_INPUT_SPAN = re.compile(
    rf"\s*(?:-|\[|{_COMMAND.pattern}|[A-Za-z_][\w.]*(?:=|<\d|\()|\"\w+\":\s"
    rf"|\w+ = [\[\"{{]|gc\.\w+ )"
)
# The language of a block of settings: a plan, an inventory, a unit file.
SETTINGS_LANGUAGES = ("toml", "ini")
# A block's info string may name what it holds after its language (```json input): a
# spec the engine reads is input, as the user writes it.
_CRON = re.compile(r"(?:[\d*/,-]+\s+){5}")


def span_kind(text: str) -> str:
    """What a code span holds: INPUT (a user's parameter) or OUTPUT (what is shown)."""
    return INPUT if _INPUT_SPAN.match(text) else OUTPUT


def _is_command(lines: list[str]) -> bool:
    continued = False
    for line in lines:
        text = _CRON.sub("", line.strip(), count=1)
        if text and not (continued or text.startswith(("#", "--")) or _COMMAND.match(text)):
            return False
        continued = text.endswith("\\")
    return True


def block_kind(info: str, lines: list[str]) -> str:
    """What a fenced block holds, from its info string and its lines: INPUT (commands, a
    plan's or inventory's settings, a spec: ```json input, a passage's marker) or OUTPUT
    (everything else: a report, a message, a document fsbench writes)."""
    words = info.split()
    lang = words[0] if words else ""
    if lang in SETTINGS_LANGUAGES or INPUT in words[1:]:
        return INPUT
    first = next((line.strip() for line in lines if line.strip()), "")
    if first.startswith("<!--"):
        return INPUT  # a passage's marker, shown as an author types it
    if lang in ("", "sh", "bash", "console") and _is_command(lines):
        return INPUT
    return OUTPUT


_COMMENT = re.compile(r"(?:^|\s)(?:#|//)\s.*$|^\s*#.*$")


_ECHOED = re.compile(r"\b[\w.]+=[^\s,;)]+")


def prose_of(line: str, kind: str) -> str:
    """The part of a block's line read as prose (same length): a line of output but the
    settings it echoes (`barrier=0`, `crashes=1`: the user's), the comment of a line of
    input."""
    if kind == OUTPUT:
        return _ECHOED.sub(lambda m: " " * len(m.group(0)), line)
    m = _COMMENT.search(line)
    return " " * len(line) if m is None else " " * m.start() + line[m.start() :]


@dataclass(frozen=True)
class Block:
    """A fenced block: its opening line, info string, kind and (line number, text) lines."""

    line: int
    info: str
    kind: str
    lines: list[tuple[int, str]]


def blocks(text: str) -> list[Block]:
    """Every fenced block of a document."""
    out: list[Block] = []
    opened: tuple[int, str] | None = None
    body: list[tuple[int, str]] = []
    for i, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            if opened is None:
                opened, body = (i, line.strip()[3:].strip()), []
            else:
                kind = block_kind(opened[1], [t for _, t in body])
                out.append(Block(opened[0], opened[1], kind, body))
                opened = None
        elif opened is not None:
            body.append((i, line))
    return out


def read_lines(lines: list[tuple[int, str]]) -> list[tuple[int, str, str]]:
    """(line number, the part read as prose, its kind: "prose", INPUT or OUTPUT) of each
    line but fences: a block's lines as prose_of reads them."""
    kinds: dict[int, str] = {}
    fences: set[int] = set()
    for b in blocks("\n".join(t for _, t in lines)):
        fences |= {b.line, (b.lines[-1][0] if b.lines else b.line) + 1}
        kinds.update({n: b.kind for n, _ in b.lines})
    out = []
    for k, (lineno, text) in enumerate(lines, 1):
        if k in fences:
            continue
        kind = kinds.get(k, "prose")
        out.append((lineno, text if kind == "prose" else prose_of(text, kind), kind))
    return out


def numbers(line: str, lineno: int = 0) -> list[Printed]:
    """The numbers a line prints outside code spans, dates, times and file names."""
    masked = mask(line)
    out = []
    for m in _NUMBER.finditer(masked):
        after = masked[m.end() :]
        ratio = bool(re.match(r"[x×](?!\w)", after))
        sized = bool(re.match(r"[kKMGTP](?:i?B)?(?![\w-])", after))  # 64M, 4k, 1GiB
        sized = sized and not re.search(r"[A-Za-z]-$", masked[: m.start()])  # write-4k
        if not (ratio or sized) and (re.match(r"\w", after) or re.match(r"\.\d", after)):
            continue  # part of a word or a version: 005a0d3, 6.18.44, 3rd
        text = m.group(0)
        pct = after.startswith("%") or bool(_PERCENT_AFTER_RANGE.match(after))
        before = masked[: m.start()]
        interval = "." in text and (
            bool(re.match(r"\s*[-–]\s*\d+\.\d", after))
            or bool(re.search(r"\d\.\d+\s*[-–]\s*$", before))
        )
        out.append(
            Printed(
                line=lineno,
                start=m.start(),
                end=m.end(),
                text=text,
                percent=pct,
                ratio=ratio,
                counted=bool(_COUNTED.match(after[1:] if ratio else after)),
                in_interval=interval,
                unit=sized or bool(re.match(_UNIT, after)),
                size=sized or bool(re.match(r"\s?[kKMGTP]i?B\b|\s?B\b|\s?bytes\b", after)),
            )
        )
    return out


def looks_measured(p: Printed) -> bool:
    """A number that `_` may not pass off as no figure."""
    return (
        p.percent
        or p.ratio
        or p.counted
        or p.in_interval
        or (p.unit and not p.size)
        or "," in p.text
    )


@dataclass
class Passage:
    """A marked passage: its files, its keys in order, its row template, its lines."""

    doc: str
    line: int  # the line of `<!-- bench:` (`<!-- code:`, `<!-- example:`)
    # bench: alias ("" for the default) -> file name in bench/results/;
    # code: alias -> module; example: the tests that compare it -> themselves
    files: dict[str, str]
    keys: list[str]
    template: list[list[str]] | None  # keys per column, or None
    body: list[tuple[int, str]] = field(default_factory=list)  # (line number, text)
    problems: list[str] = field(default_factory=list)
    kind: str = "bench"

    @property
    def text(self) -> str:
        return "\n".join(t for _, t in self.body)


def _tokens(text: str) -> list[str]:
    """Whitespace-separated keys; brackets, parentheses and quotes hold spaces."""
    out, cur, depth, quote = [], "", 0, False
    for ch in text:
        if ch == '"':
            quote = not quote
        elif not quote and ch in "[(":
            depth += 1
        elif not quote and ch in "])":
            depth -= 1
        if ch.isspace() and depth == 0 and not quote:
            if cur:
                out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        out.append(cur)
    return out


def _cells(line: str) -> list[tuple[int, int]]:
    """(start, end) of each cell of a table row, code spans' pipes not counted."""
    masked = re.sub(r"`[^`]*`", lambda m: " " * len(m.group(0)), line)
    bars = [i for i, ch in enumerate(masked) if ch == "|" and (i == 0 or masked[i - 1] != "\\")]
    return [(a + 1, b) for a, b in zip(bars, bars[1:], strict=False)]


def passages(text: str, doc: str = "", kinds: tuple[str, ...] = ("bench",)) -> list[Passage]:
    """The marked passages of a document, of the kinds asked for (bench passages by
    default: what cites a result file)."""
    return [p for p in all_passages(text, doc) if p.kind in kinds]


def _header_files(
    kind: str, words: list[str], doc: str, start: int
) -> tuple[dict[str, str], list[str]]:
    files: dict[str, str] = {}
    problems = []
    for word in words:
        alias, _, name = word.rpartition("=")
        if kind == "bench" and not name.endswith(".json"):
            problems.append(
                f"{doc} line {start}: {word!r}: a passage names result files "
                "(NAME.json or ALIAS=NAME.json), not a bench"
            )
        elif kind == "code" and not re.fullmatch(
            r"(fsbench|tests)(\.\w+)*|engine/[\w./-]+\.rs", name
        ):
            problems.append(
                f"{doc} line {start}: {word!r}: a code passage names modules "
                "(ALIAS=fsbench.x.y, a test's tests.unit.x) or engine sources "
                "(ALIAS=engine/src/x.rs)"
            )
        elif kind == "example" and not (ROOT / word).is_file():
            problems.append(f"{doc} line {start}: {word!r}: an example names the test comparing it")
        if kind == "code" and not alias:
            alias = Path(name).stem if name.startswith("engine/") else name.rpartition(".")[2]
        files[alias if kind != "example" else word] = name if kind != "example" else word
    if kind == "bench" and "" not in files:
        problems.append(f"{doc} line {start}: no default result file")
    if kind != "bench" and not files:
        problems.append(f"{doc} line {start}: a {kind} passage names what checks it")
    return files, problems


def all_passages(text: str, doc: str = "") -> list[Passage]:
    """The marked passages of a document, every kind."""
    lines = text.splitlines()
    out: list[Passage] = []
    i = 0
    fenced = False
    while i < len(lines):
        if _FENCE.match(lines[i]):
            fenced = not fenced
        opened = None if fenced else _OPEN.match(lines[i])
        if opened is None:
            i += 1
            continue
        start = i + 1
        kind = opened.group(1)
        header = [opened.group(2)]
        while "-->" not in header[-1]:
            i += 1
            if i >= len(lines):
                raise ValueError(f"{doc} line {start}: <!-- {kind}: never ends with -->")
            header.append(lines[i])
        header[-1] = header[-1].split("-->", 1)[0]
        files, problems = _header_files(kind, header[0].split(), doc, start)
        keys: list[str] = []
        template = None
        for h in header[1:]:
            if h.strip().startswith("|"):
                template = [_tokens(h[a:b]) for a, b in _cells(h.strip())]
            else:
                keys += _tokens(h)
        p = Passage(doc, start, files, keys, template, problems=problems, kind=kind)
        i += 1
        fenced = False
        while i < len(lines) and not (_CLOSE.match(lines[i]) and not fenced):
            if _FENCE.match(lines[i]):
                fenced = not fenced
            if _OPEN.match(lines[i]) and not fenced:
                raise ValueError(f"{doc} line {i + 1}: a passage in a passage")
            p.body.append((i + 1, lines[i]))
            i += 1
        if i >= len(lines):
            raise ValueError(f"{doc} line {start}: <!-- {kind}: --> never closed")
        closed = _CLOSE.match(lines[i])
        if closed is not None and closed.group(1) != kind:
            raise ValueError(f"{doc} line {i + 1}: <!-- {kind}: --> closed by /{closed.group(1)}")
        out.append(p)
        i += 1
    return out


def outside_passages(text: str) -> list[tuple[int, str, str]]:
    """(line number, the part read as prose, its kind) of every line outside passages and
    their headers (read_lines)."""
    out, inside, fenced = [], False, False
    for i, line in enumerate(text.splitlines(), 1):
        fenced ^= bool(_FENCE.match(line))
        closes = not fenced and bool(_CLOSE.match(line))
        inside = (inside or (not fenced and bool(_OPEN.match(line)))) and not closes
        out.append((i, "" if inside or closes else line))
    return [r for r in read_lines(out) if r[1].strip()]


# -- Keys: paths into a result file ------------------------------------------------------

_TOKEN = re.compile(
    r'\s*(?:(?P<num>\d+(?:\.\d+)?)|(?P<str>"[^"]*")|(?P<name>[A-Za-z_][\w=]*)|(?P<op>[][().,:*?+/-]))'
)
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": len,
    "min": min,
    "max": max,
    "median": statistics.median,
    "mean": statistics.fmean,
    "sum": sum,
    "abs": abs,
    "round": round,
    # the i-th number a stored text says (a scenario's description): num(x.what, 0)
    "num": lambda text, i: float(re.findall(r"\d+(?:\.\d+)?", text)[i]),
}


class KeyError_(Exception):
    """A key that does not resolve, with why."""


@dataclass
class Resolved:
    value: Any
    base: tuple[str, Any] | None  # (alias, object) that relative keys start from


class _Parser:
    def __init__(self, key: str, files: dict[str, Any], base: tuple[str, Any] | None) -> None:
        self.toks: list[tuple[str, str]] = []
        pos = 0
        while pos < len(key):
            m = _TOKEN.match(key, pos)
            if m is None or m.end() == pos:
                raise KeyError_(f"cannot read {key[pos:]!r}")
            kind = m.lastgroup or "op"
            self.toks.append((kind, m.group(kind)))
            pos = m.end()
        self.i = 0
        self.files = files
        self.base = base
        self.new_base: tuple[str, Any] | None = None
        self.read = False  # whether the key read the file at all

    def peek(self) -> tuple[str, str] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if tok is None or (value is not None and tok[1] != value):
            raise KeyError_(f"expected {value or 'more'} at token {self.i + 1}")
        self.i += 1
        return tok

    def parse(self) -> Any:
        value = self.expr()
        if self.peek() is not None:
            raise KeyError_(f"unexpected {self.peek()[1]!r}")  # type: ignore[index]
        return value

    def expr(self) -> Any:
        value = self.term()
        while (tok := self.peek()) and tok[1] in "+-" and tok[0] == "op":
            self.take()
            right = self.term()
            value = value + right if tok[1] == "+" else value - right
        return value

    def term(self) -> Any:
        value = self.factor()
        while (tok := self.peek()) and tok[0] == "op" and tok[1] in "*/":
            self.take()
            right = self.factor()
            value = value * right if tok[1] == "*" else value / right
        return value

    def factor(self) -> Any:
        tok = self.peek()
        if tok is None:
            raise KeyError_("a key ends too early")
        kind, text = tok
        if kind == "num":
            self.take()
            return float(text) if "." in text else int(text)
        if kind == "op" and text == "(":
            self.take()
            value = self.expr()
            self.take(")")
            return value
        if kind == "name" and text in FUNCTIONS and self._next_is("("):
            self.take()
            self.take("(")
            args = [self.expr()]
            while self.peek() == ("op", ","):
                self.take()
                args.append(self.expr())
            self.take(")")
            try:
                return FUNCTIONS[text](*args)
            except (TypeError, ValueError) as exc:
                raise KeyError_(f"{text}(): {exc}") from exc
        return self.path()

    def _next_is(self, op: str) -> bool:
        return self.i + 1 < len(self.toks) and self.toks[self.i + 1] == ("op", op)

    def path(self) -> Any:
        kind, text = self.peek()  # type: ignore[misc]
        self.read = True
        if kind == "op" and text == ".":
            if self.base is None:
                raise KeyError_("a relative key with no full key before it")
            alias, obj = self.base
            absolute = False
        else:
            alias = ""
            if kind == "name" and self._next_is(":"):
                alias = text
                self.take()
                self.take(":")
            if alias not in self.files:
                raise KeyError_(f"no file {alias!r} in this passage")
            obj = self.files[alias]
            absolute = True
            name = self.take()
            if name[0] != "name":
                raise KeyError_(f"a key starts with a name, not {name[1]!r}")
            obj = _step(obj, name[1])
        chain = [obj]
        while (tok := self.peek()) and tok[0] == "op" and tok[1] in ".[":
            self.take()
            if tok[1] == ".":
                name = self.take()
                if name[0] not in ("name", "num"):
                    raise KeyError_(f"a name after '.', not {name[1]!r}")
                obj = _step(obj, name[1])
            else:
                obj = self.subscript(obj)
                self.take("]")
            chain.append(obj)
        if absolute:
            # relative keys start from the deepest object the path went through
            dicts = [o for o in chain[:-1] if isinstance(o, dict)]
            self.new_base = (alias, dicts[-1] if dicts else self.files[alias])
        return obj

    def subscript(self, obj: Any) -> Any:
        tok = self.peek()
        if tok is None:
            raise KeyError_("a key ends inside []")
        kind, text = tok
        if kind == "str":
            self.take()
            return _step(obj, text[1:-1])
        if text == "*":
            self.take()
            if not isinstance(obj, list):
                raise KeyError_("[*] of what is not a list")
            return obj
        if kind == "num" or text in (":", "-"):
            lo = self._int()
            if self.peek() == ("op", ":"):
                self.take()
                hi = self._int() if self.peek() != ("op", "]") else None
                if not isinstance(obj, list):
                    raise KeyError_("a slice of what is not a list")
                return obj[lo:hi]
            if lo is None:
                raise KeyError_("an empty index")
            if not isinstance(obj, list) or not -len(obj) <= lo < len(obj):
                raise KeyError_(f"no [{lo}]")
            return obj[lo]
        every = text == "?"
        if every:
            self.take()
        conds = []
        while True:
            name = self.take()
            if name[0] != "name" or "=" not in name[1]:
                raise KeyError_(f"a condition field=value, not {name[1]!r}")
            field_, _, value = name[1].partition("=")
            if not value:
                value = self.take()[1].strip('"')
            conds.append((field_, value))
            if self.peek() != ("op", ","):
                break
            self.take()
        if not isinstance(obj, list):
            raise KeyError_("a selection [k=v] of what is not a list")
        chosen = [
            e for e in obj if isinstance(e, dict) and all(_same(e.get(f), v) for f, v in conds)
        ]
        if every:
            return chosen
        if len(chosen) != 1:
            raise KeyError_(f"[{','.join(f'{f}={v}' for f, v in conds)}] matches {len(chosen)}")
        return chosen[0]

    def _int(self) -> int | None:
        sign = 1
        if self.peek() == ("op", "-"):
            self.take()
            sign = -1
        tok = self.peek()
        if tok is None or tok[0] != "num":
            return None
        self.take()
        return sign * int(tok[1])


def _same(held: Any, wanted: str) -> bool:
    if isinstance(held, bool) or held is None:
        return str(held).lower() == wanted.lower()
    if isinstance(held, (int, float)):
        try:
            return float(held) == float(wanted)
        except ValueError:
            return False
    return str(held) == wanted


def _step(obj: Any, name: str) -> Any:
    if isinstance(obj, list):
        return [_step(e, name) for e in obj]
    if not isinstance(obj, dict) or name not in obj:
        raise KeyError_(f"no {name!r}")
    return obj[name]


def resolve(key: str, files: dict[str, Any], base: tuple[str, Any] | None = None) -> Resolved:
    """The value of a key in a passage's files (alias -> parsed JSON)."""
    parser = _Parser(key, files, base)
    value = parser.parse()
    if not parser.read:
        raise KeyError_("a constant: a key reads its value from the file")
    return Resolved(value, parser.new_base or base)


@cache
def load(name: str) -> Any:
    """A result file of bench/results/, parsed (once)."""
    return json.loads((RESULTS / name).read_text())


# -- Keys of a code passage: the code's own constants ----------------------------------------

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


@cache
def _source(path: Path) -> str:
    return path.read_text()


@dataclass(frozen=True)
class RustSource:
    """An engine source file: `ALIAS.NAME` is its `const NAME: T = value;`."""

    path: Path

    def __getattr__(self, name: str) -> float:
        text = _source(self.path)
        m = re.search(rf"\bconst\s+{name}\s*:\s*\w+\s*=\s*([\d_.]+)", text)
        if m is None:
            raise AttributeError(f"{self.path.name} has no const {name}")
        number = m.group(1).replace("_", "").rstrip(".")
        return float(number) if "." in number else int(number)

    def find(self, pattern: str, group: int = 1) -> float:
        """A number the source writes where no `const` names it (a match arm's value)."""
        found = re.findall(pattern, _source(self.path))
        if len(found) != 1:
            raise AttributeError(f"{self.path.name}: {pattern!r} matches {len(found)} times")
        text = found[0] if isinstance(found[0], str) else found[0][group - 1]
        return float(text) if "." in text else int(text)


def default(function: Callable[..., Any], parameter: str) -> Any:
    """The default value of a function's parameter (a level, a limit it applies)."""
    import inspect

    return inspect.signature(function).parameters[parameter].default


def load_code(name: str) -> Any:
    """What a code passage names: an fsbench module, imported, or an engine source."""
    if name.startswith("engine/"):
        if not (ROOT / name).is_file():
            raise OSError(f"no {name}")
        return RustSource(ROOT / name)
    import importlib

    if name.startswith("tests.") and str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # a test's constants: the checkout's tests package
    return importlib.import_module(name)


def resolve_code(key: str, modules: dict[str, Any]) -> Resolved:
    """The value of a code passage's key: a Python expression over the modules it names
    (`targets.DEFAULT_IMAGE_SIZE / GiB`, `bounds.look_level(3, 3, 10, 0.05)`)."""
    import ast

    try:
        tree = ast.parse(key, mode="eval")
    except SyntaxError as exc:
        raise KeyError_(f"not an expression: {exc.msg}") from exc
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    if not names & set(modules):
        raise KeyError_("a constant: a key reads its value from the code it names")
    scope = {
        **FUNCTIONS,
        "math": math,
        "KiB": KiB,
        "MiB": MiB,
        "GiB": GiB,
        "default": default,
        **modules,
    }
    try:
        value = eval(compile(tree, key, "eval"), {"__builtins__": {}}, scope)  # noqa: S307
    except Exception as exc:  # the key names what the code does not hold
        raise KeyError_(f"{type(exc).__name__}: {exc}") from exc
    return Resolved(value, None)


# -- Binding the figures of a passage to their keys ----------------------------------------


@dataclass
class Figure:
    doc: str
    printed: Printed
    key: str  # as resolved: `{N}` filled in; "_" for no figure
    value: Any = None
    file: str = ""
    problem: str | None = None


def _row_cells(line: str) -> list[str]:
    return [re.sub(r"[*`]", "", line[a:b]).strip() for a, b in _cells(line)]


def figures(p: Passage) -> list[Figure]:
    """Every number of the passage with its key and the value the key names."""
    files: dict[str, Any] = {}
    out: list[Figure] = []
    if p.kind == "example":
        return out  # compared whole by the tests it names
    for alias, name in p.files.items():
        if p.kind == "bench" and not name.endswith(".json"):
            continue  # refused by passages()
        try:
            files[alias] = load_code(name) if p.kind == "code" else load(name)
        except (OSError, ValueError, ImportError) as exc:
            p.problems.append(f"{p.doc} line {p.line}: {name}: {exc}")
    if len(files) != len(p.files):
        return out
    keys = iter(p.keys)
    base: tuple[str, Any] | None = None
    lines = read_lines(p.body)  # a block's output whole, the comments of its input
    for k, (lineno, line, kind) in enumerate(lines):
        row = kind == "prose" and line.strip().startswith("|")
        if row and re.fullmatch(r"\|?(\s*:?-+:?\s*\|)+\s*:?-*:?\s*", line.strip()):
            continue  # |---|
        nxt = lines[k + 1][1].strip() if k + 1 < len(lines) else ""
        if row and re.fullmatch(r"\|?(\s*:?-+:?\s*\|)+\s*:?-*:?\s*", nxt):
            continue  # a table's header row
        found = numbers(unallowed(line), lineno)
        if row and p.template is not None:
            cells = _cells(line)
            texts = _row_cells(line)
            if len(cells) != len(p.template):
                p.problems.append(
                    f"{p.doc} line {lineno}: {len(cells)} cells, the template has {len(p.template)}"
                )
                continue
            row_base = None
            for (a, b), template in zip(cells, p.template, strict=True):
                inside = [n for n in found if a <= n.start < b]
                if len(inside) != len(template):
                    p.problems.append(
                        f"{p.doc} line {lineno}: cell {line[a:b].strip()!r} prints "
                        f"{len(inside)} numbers, its template {len(template)} keys"
                    )
                    continue
                for n, tk in zip(inside, template, strict=True):
                    key = re.sub(r"\{(\d+)\}", lambda m, t=texts: t[int(m.group(1)) - 1], tk)
                    fig, row_base = _bind(p, n, key, files, row_base)
                    out.append(fig)
            continue
        for n in found:
            key = next(keys, None)
            if key is None:
                out.append(Figure(p.doc, n, "", problem="no key left for it"))
                continue
            fig, base = _bind(p, n, key, files, base)
            out.append(fig)
    left = list(keys)
    if left:
        p.problems.append(f"{p.doc} line {p.line}: {len(left)} keys for no figure: {left}")
    return out


def _bind(
    p: Passage, n: Printed, key: str, files: dict[str, Any], base: tuple[str, Any] | None
) -> tuple[Figure, tuple[str, Any] | None]:
    if key == "_":
        problem = "a measured-looking number cannot be `_`" if looks_measured(n) else None
        return Figure(p.doc, n, key, problem=problem), base
    try:
        res = resolve_code(key, files) if p.kind == "code" else resolve(key, files, base)
    except (KeyError_, ZeroDivisionError) as exc:
        return Figure(p.doc, n, key, problem=f"{key}: {exc}"), base
    alias = key.partition(":")[0] if re.match(r"^[A-Za-z_]\w*:", key) else ""
    fig = Figure(p.doc, n, key, res.value, p.files.get(alias, ""))
    value = res.value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        fig.problem = f"{key} is {value!r}, not a number"
    elif not n.shows(value):
        pct = " x 100" if n.percent else ""
        fig.problem = f"{key} = {value!r}{pct} is not {n.text} at {n.decimals} decimals"
    return fig, res.base


def check(text: str, doc: str = "README.md") -> list[str]:
    """What a document prints in its marked passages that its keys do not hold."""
    problems: list[str] = []
    try:
        found = all_passages(text, doc)
    except ValueError as exc:
        return [str(exc)]
    for p in found:
        problems += check_passage(p)
    return problems


def check_passage(p: Passage) -> list[str]:
    figs = figures(p)
    problems = list(p.problems)
    if p.kind == "example":
        doc = Path(p.doc).name
        for test in p.files:
            if (ROOT / test).is_file() and doc not in (ROOT / test).read_text():
                problems.append(f"{p.doc} line {p.line}: {test} does not read {doc}")
    for f in figs:
        if f.problem:
            problems.append(f"{f.doc} line {f.printed.line}: {f.printed.text}: {f.problem}")
    merged = [n for n in p.files.values() if _is_merged(n)]
    if merged and not re.search(r"\binvocations?\b", p.text):
        problems.append(
            f"{p.doc} line {p.line}: {', '.join(merged)} merges several invocations of "
            "its bench (its `parts`): the passage says so"
        )
    return problems


def _is_merged(name: str) -> bool:
    try:
        return "parts" in load(name)
    except (OSError, ValueError):
        return False


# -- Figures outside passages: a parser ---------------------------------------------------

# Outside a passage (and outside code spans and blocks, dates, times of day, file names
# and URLs, masked as above) a number that looks like a figure fails: one with a decimal
# point, a thousands separator, a percent sign, a ratio's x or a unit after it, or a
# count of pairs (what only a comparison counts). Bare counts ("3 configs", "n = 10",
# "2 repetitions") are not figures: a count a reader could trust by mistake is in a
# passage because it is said beside them.
_UNIT = (
    r"%|[x×](?![\w-])|\s*[-–]\s*\d[\d,.]*\s*%"
    r"|\s?(?:ns|us|µs|ms|s|sec|min|h|hours?|minutes?|seconds?|days?|CPU-seconds"
    r"|[kKMGTP]i?B|B|bytes|[kKMG](?=[\s),;.]|$)|IOPS|ops/s|files/s|[KMG]i?B/s|MB/s|trials/s"
    r")(?![\w/])"
    r"|\s(?:pairs)\b"
)
_SUSPECT = re.compile(
    r"(?<![\w.])(?<![A-Za-z]-)(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d+(?=" + _UNIT + r"))"
    r"(?!\.\d)"
)


@dataclass(frozen=True)
class Allowed:
    """Numbers that are no figure at all, neither measured nor a constant of fsbench."""

    pattern: str  # matched in a line, with the masking above applied
    reason: str


# Each entry says why its numbers are neither a measurement nor a constant of the code.
ALLOWED = (
    Allowed(r"\bLinux \d+\.\d+(?:\.\d+)?(?: and \d+\.\d+)?", "a kernel version"),
    Allowed(r"\b6\.1 < 6\.12\b", "kernel versions, an example of ordering by version"),
    Allowed(r"\bpytest 9\.2\b|pytest below 9\.2\b", "a pytest version (pyproject.toml pins it)"),
    Allowed(r"\bRust >= 1\.88\b", "the Rust version engine/Cargo.toml's rust-version says"),
    Allowed(r"\(1\.5-alpha3,", "filebench's release name"),
    Allowed(r"order 9: 2 MiB blocks", "Linux's page_reporting order: 2^9 pages of 4 KiB"),
    Allowed(
        r"ext4: wait 100 ms in fsync",
        "the subject of the commit tests/integration/test_bisect.py plants: a name",
    ),
    Allowed(
        r"1\.1x\W+1,234\b|\b1\.133\W+is the value to 3 decimals\W+25\W+the count\W+3\.6%"
        r"|MiB\W+64M\W+ops/s",
        "docs/development.md's examples of how a figure is printed: a format, not a value",
    ),
)


@dataclass(frozen=True)
class Phrase:
    """A constant of the code said in a set phrase wherever it recurs (a table cell, a
    list, a formula) where a passage cannot go: each match's group 1 is the constant."""

    pattern: str
    source: str  # as a code passage names it: fsbench.module or engine/src/x.rs
    key: str  # an attribute of it

    def value(self) -> Any:
        return getattr(load_code(self.source), self.key)


PHRASES = (
    Phrase(r"\bgamma\((\d+(?:\.\d+)?)\)", "engine/src/fileset.rs", "DIR_GAMMA_SHAPE"),
    Phrase(
        r"\bgamma distribution of shape (\d+(?:\.\d+)?)", "engine/src/fileset.rs", "DIR_GAMMA_SHAPE"
    ),
    Phrase(
        r"\b1 \+ 1/(\d+(?:\.\d+)?) times the mean width", "engine/src/fileset.rs", "DIR_GAMMA_SHAPE"
    ),
)


def phrases(line: str) -> tuple[str, list[str]]:
    """The line with its set phrases blanked, and what they say that the code does not."""
    wrong = []
    for phrase in PHRASES:
        for m in re.finditer(phrase.pattern, line):
            if float(m.group(1)) != phrase.value():
                wrong.append(f"{m.group(0)!r} says {m.group(1)}: {phrase.key} is {phrase.value()}")
        line = re.sub(phrase.pattern, lambda m: " " * len(m.group(0)), line)
    return line, wrong


def unallowed(line: str) -> str:
    """The line with what ALLOWED says is no figure blanked (same length)."""
    for allowed in ALLOWED:
        line = re.sub(allowed.pattern, lambda m: " " * len(m.group(0)), line)
    return line


def suspects(line: str) -> list[str]:
    """The numbers of a line (outside passages) that look like a figure."""
    masked = unallowed(phrases(mask(line))[0])
    return [m.group(0) for m in _SUSPECT.finditer(masked)]


def shown_numbers(line: str) -> list[str]:
    """Every number of a line of output (no figure is an ALLOWED one or a set phrase)."""
    return [n.text for n in numbers(unallowed(phrases(line)[0]))]


def unmarked(text: str, doc: str = "README.md") -> list[str]:
    """Lines outside passages that print a number looking like a figure: every such number
    is a measurement (a bench passage), an example's (an example passage), a constant of
    the code (a code passage), or allowed in ALLOWED with its reason."""
    problems = []
    for line, content, kind in outside_passages(text):
        problems += [f"{doc} line {line}: {w}" for w in phrases(mask(content))[1]]
        if kind == OUTPUT:
            shown = shown_numbers(content)
            if shown:
                problems.append(
                    f"{doc} line {line}: {', '.join(shown)} in a block of output outside an "
                    f"<!-- example: --> passage (or a bench or code one): {content.strip()[:100]}"
                )
            continue
        found = suspects(content)
        if found:
            problems.append(
                f"{doc} line {line}: {', '.join(found)} outside a <!-- bench: -->, "
                f"<!-- code: --> or <!-- example: --> passage: {content.strip()[:100]}"
            )
    return problems


def check_document(text: str, doc: str) -> list[str]:
    """Every problem of one document: its passages' figures, and what looks like a figure
    outside them."""
    return check(text, doc) + unmarked(text, doc)


def check_all() -> list[str]:
    problems = []
    for path in documents():
        problems += check_document(path.read_text(), str(path.relative_to(ROOT)))
    return problems


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or documents()
    for path in paths:
        name = str(path.resolve().relative_to(ROOT))
        for p in all_passages(path.read_text(), name):
            print(f"{name} line {p.line}: {p.kind}: {' '.join(p.files.values())}")
            for f in figures(p):
                mark = f"  <- {f.problem}" if f.problem else ""
                print(f"  {f.printed.line}: {f.printed.text:>10}  {f.key} = {f.value!r}{mark}")
            for problem in p.problems:
                print(f"  {problem}")
    problems = check_all()
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
