"""The README and the guides under docs/ stay true to the tree and to the command line:
every relative link resolves (the file exists; an #anchor is a heading of the target), and
every `fsbench ...` command line they show, in a code block or in inline code, parses: its
command (and subcommand, `fsbench fleet run`) exists in the typer app and every option it
gives is one that command takes. The parsing is click's own (typer.main.get_command), not
a reading of help text."""

from __future__ import annotations

import itertools
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup, TyperOption

from fsbench.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def documents() -> list[Path]:
    """The README and every guide under docs/."""
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


# -- Markdown, just enough of it ----------------------------------------------------------

_FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")
# Fenced blocks whose lines can be shell commands; others (text, toml, ini) are output or data.
_SHELL_INFO = {"", "sh", "shell", "bash", "console"}


def _split(text: str) -> Iterator[tuple[int, str, str | None]]:
    """(line number, line, the info string of the fenced block it is in, or None); the
    fences themselves are blank lines of their block."""
    info: str | None = None
    fence = ""
    for number, line in enumerate(text.splitlines(), 1):
        m = _FENCE.match(line)
        if info is None and m:
            info, fence = m.group(2).lower(), m.group(1)
            yield number, "", info
        elif info is not None and line.strip() == fence:
            yield number, "", info
            info = None
        else:
            yield number, line, info


def _prose(text: str) -> str:
    """The text outside fenced code blocks (lines inside them blanked, numbers kept)."""
    return "\n".join(line if info is None else "" for _, line, info in _split(text))


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation but - and _ dropped,
    spaces as hyphens."""
    text = re.sub(r"`|\*\*|__", "", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in _prose(text).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


_CODE_SPAN = re.compile(r"`[^`]+`")
_LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def links(text: str) -> list[tuple[int, str]]:
    """(line, target) of every inline link outside code."""
    found = []
    for number, line in enumerate(_prose(text).splitlines(), 1):
        for m in _LINK.finditer(_CODE_SPAN.sub("``", line)):
            found.append((number, m.group(1)))
    return found


def link_problems(path: Path) -> list[str]:
    text = path.read_text()
    problems = []
    for number, target in links(text):
        where = f"{path.name}:{number}: {target}"
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            problems.append(f"{where}: no such file")
            continue
        if anchor:
            if dest.suffix != ".md":
                problems.append(f"{where}: an anchor into a file that is not markdown")
            elif anchor not in anchors(dest.read_text()):
                problems.append(f"{where}: no heading #{anchor} in {dest.name}")
    return problems


# -- fsbench command lines ----------------------------------------------------------------


def command_lines(text: str) -> list[tuple[int, str]]:
    """(line, command) of every `fsbench ...` line of a shell code block (continuations
    joined, a `$ ` prompt dropped) and every inline code span that starts with `fsbench `."""
    found: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, line, info in _split(text):
        if info is None or info not in _SHELL_INFO:
            continue
        line = line.strip().removeprefix("$ ")
        if pending is not None:
            start, joined = pending
            line = joined + " " + line
            number = start
            pending = None
        if line.endswith("\\"):
            pending = (number, line[:-1].rstrip())
            continue
        if line.startswith("fsbench "):
            found.append((number, line))
    prose = _prose(text)
    for m in re.finditer(r"`(fsbench [^`]+)`", prose):
        number = prose.count("\n", 0, m.start()) + 1
        found.append((number, " ".join(m.group(1).split())))
    return found


# Placeholders a command line may show, and a value that parses in their place.
PLACEHOLDERS = {"RUN": "1", "RUN_A": "1", "RUN_B": "2", "ID": "1", "FILE": "report.html"}


def argvs(line: str) -> list[list[str]]:
    """The command line as argvs after `fsbench`: optional parts in, each alternative of
    `a|b|c` an argv of its own, placeholders filled."""
    words = [w.strip("[]") for w in shlex.split(line, comments=True)]
    assert words[0] == "fsbench", line
    choices = [
        w.split("|") if "|" in w and ":" not in w else [PLACEHOLDERS.get(w, w)]
        for w in words[1:]
        if w
    ]
    return [list(argv) for argv in itertools.product(*choices)]


def _options(command: Any) -> set[str]:
    names = {"--help"}
    for param in command.params:
        if isinstance(param, TyperOption):
            names.update(param.opts, param.secondary_opts)
    return names


def command_problems(argv: list[str]) -> list[str]:
    """Why `fsbench ARGV` does not parse: an unknown command or option, a bad value."""
    command: Any = typer.main.get_command(app)
    path = ["fsbench"]
    rest = list(argv)
    while isinstance(command, TyperGroup):
        if not rest:
            return [f"{' '.join(path)}: no command given"]
        name = rest.pop(0)
        sub = command.commands.get(name)
        if sub is None:
            return [f"{' '.join(path)} has no command {name!r}"]
        command, path = sub, [*path, name]
    known = _options(command)
    # After `--` the words are a command's own (`fsbench record -- sh -c ...`), not options.
    options = rest[: rest.index("--")] if "--" in rest else rest
    problems = [
        f"{' '.join(path)} has no option {word.split('=', 1)[0]}"
        for word in options
        if word.startswith("-")
        and word != "-"
        and word.split("=", 1)[0] not in known
        and not re.fullmatch(r"-\d.*", word)  # a negative number is a value
    ]
    if problems:
        return problems
    try:  # the values too: types, choices, the arguments taken
        command.make_context(" ".join(path), rest)
    except typer.TyperException as exc:  # click's UsageError, vendored by typer
        return [f"{' '.join(path)} {' '.join(rest)}: {exc.format_message()}"]
    return []


def all_command_lines() -> list[tuple[str, list[str]]]:
    """(where, argv) of every command line of the README and the guides."""
    return [
        (f"{path.relative_to(ROOT)}:{number}", argv)
        for path in documents()
        for number, line in command_lines(path.read_text())
        for argv in argvs(line)
    ]


# -- The tests ----------------------------------------------------------------------------


def test_there_is_a_guide_per_area_and_the_readme_links_each() -> None:
    readme = README.read_text()
    linked = {target.partition("#")[0] for _, target in links(readme)}
    guides = {f"docs/{p.name}" for p in documents()[1:]}
    assert len(guides) >= 10
    assert guides <= linked, guides - linked
    assert len(readme.encode()) <= 15 * 1024


def test_every_link_resolves() -> None:
    assert [p for path in documents() for p in link_problems(path)] == []
    assert sum(len(links(path.read_text())) for path in documents()) > 20


def test_every_fsbench_command_line_parses() -> None:
    lines = all_command_lines()
    assert len(lines) > 50  # the scan sees the commands it vouches for
    assert {argv[0] for _, argv in lines} >= {"run", "report", "compare", "fleet", "list"}
    assert [f"{where}: {p}" for where, argv in lines for p in command_problems(argv)] == []


def test_a_made_up_option_or_command_fails() -> None:
    assert command_problems(["run", "--fs", "ext4"]) == []
    assert command_problems(["run", "--made-up-option", "3"]) == [
        "fsbench run has no option --made-up-option"
    ]
    assert command_problems(["fleet", "run", "-i", "hosts.ini"]) == []
    assert command_problems(["fleet", "run", "--reps-per-host", "3"]) == [
        "fsbench fleet run has no option --reps-per-host"
    ]
    assert command_problems(["fleet", "walk"]) == ["fsbench fleet has no command 'walk'"]
    assert command_problems(["frobnicate"]) == ["fsbench has no command 'frobnicate'"]
    assert command_problems(["report", "--format"])  # a value missing
    assert command_problems(["list", "runs", "--json"]) == []
    assert command_problems(["record", "-o", "t.gz", "--", "sh", "-c", "true"]) == []
    assert command_problems(["record", "--bogus", "--", "sh"]) == [
        "fsbench record has no option --bogus"
    ]


def test_the_scans_find_what_they_should(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# A title\n\n## Second `heading`: here\n\nSee [it](#second-heading-here), [gone](#nope),\n"
        "[file](missing.md) and [web](https://example.org). Run `fsbench run --bogus`.\n\n"
        "```\nfsbench run --fs ext4 \\\n    --reps 3\n# [not a link](nowhere.md)\n```\n\n"
        "```text\nfsbench run 1 (custom, finished)\n```\n"
    )
    text = doc.read_text()
    assert anchors(text) == {"a-title", "second-heading-here"}
    assert [t for _, t in links(text)] == [
        "#second-heading-here",
        "#nope",
        "missing.md",
        "https://example.org",
    ]
    assert [c for _, c in command_lines(text)] == [
        "fsbench run --fs ext4 --reps 3",
        "fsbench run --bogus",
    ]
    assert argvs("fsbench report [RUN] --format md|json") == [
        ["report", "1", "--format", "md"],
        ["report", "1", "--format", "json"],
    ]
    problems = link_problems(doc)
    assert len(problems) == 2 and "#nope" in problems[0] and "missing.md" in problems[1]
