"""The document of `fsbench history`: per series its points (run, date, kernel, commit, n,
mean, 95% CI, the change that starts there) and its change points, each with the runs on
either side, the means before and after, their ratio and p, and what else changed there;
its JSON (the series, each change numbered) and one CSV record per point.

Change points are numbered once, in the order the series are listed (`#1`, `#2`...): the
number `--bisect N` takes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fsbench.analysis import changepoints
from fsbench.analysis.history import STEP, STEP_MAX_RUNS, ChangePoint, Series, Sight
from fsbench.analysis.history import document as history_document
from fsbench.reports import document as d
from fsbench.system import numbers

HARNESS_NOTE = "possibly the harness: fsbench, Python, QEMU or a tool changed at the same run"


def numbered(series: Sequence[Series]) -> list[tuple[int, Series, ChangePoint]]:
    """Every change point with its number (1, 2, ...), in listing order."""
    out: list[tuple[int, Series, ChangePoint]] = []
    for s in series:
        for c in s.changes:
            out.append((len(out) + 1, s, c))
    return out


def ratio_text(c: ChangePoint) -> str:
    """The change's ratio after/before, with its 95% CI."""
    return numbers.ratio(c.ratio, c.ratio_ci95, 0.95 if c.ratio_ci95 else None)


def run_label(named: dict[str, Any]) -> str:
    """A run as a change point names it: id, date, kernel, commit, fsbench version."""
    bits = [f"run {named['run']}", str(named["date"])[:16].replace("T", " ")]
    if named.get("kernel"):
        bits.append(str(named["kernel"]))
    if named.get("commit"):
        bits.append(str(named["commit"])[:12])
    bits.append(f"fsbench {named['fsbench_version']}")
    return ", ".join(bits)


def coincident_text(c: ChangePoint) -> str:
    if not c.coincident:
        return "nothing else recorded changed"
    changed = "; ".join(
        f"{x['what']}: {x['before'] or '-'} -> {x['after'] or '-'} (at run {x['at_run']})"
        for x in c.coincident
    )
    return f"{changed} ({HARNESS_NOTE})" if c.harness else changed


def change_lines(n: int, s: Series, c: ChangePoint) -> list[str]:
    """One change point in words (the table's and markdown's)."""
    unit = f" {s.unit}" if s.unit else ""
    return [
        f"#{n} {c.direction} at point {c.index + 1}: {numbers.number(c.before_mean)} -> "
        f"{numbers.number(c.after_mean)}{unit} "
        f"({c.before_runs} runs before, {c.after_runs} after), "
        f"ratio {ratio_text(c)}, {numbers.p(c.p)} ({c.method})",
        f"   between {run_label(c.before_run)}",
        f"       and {run_label(c.after_run)}",
        f"   also changed: {coincident_text(c)}",
        *([f"   why: {c.why}"] if c.why else []),
    ]


def sight_lines(s: Series) -> tuple[str, ...]:
    """What a series can see, when it found nothing (too short, or the runs a step needs),
    and a newest run that one more would confirm."""
    if s.sight is None:
        return ()
    lines = [] if s.changes else [reach_text(s.sight)]
    if s.sight.pending_p is not None and s.sight.pending_ratio is not None:
        lines.append(
            f"the newest run is {numbers.ratio(s.sight.pending_ratio)}x the mean of the runs "
            f"before it ({numbers.p(s.sight.pending_p)}): a change if the next run confirms "
            "it (one run alone may be a spike)"
        )
    return tuple(lines)


def reach_text(sight: Sight) -> str:
    """Too short to test, or how many runs a STEP needs at the series' noise."""
    if not sight.testable:
        return (f"too short to test: {sight.runs} runs; a change needs "
                f"{changepoints.FEWEST} ({changepoints.MIN_SIZE} on each side)")  # fmt: skip
    step = f"a {round(STEP * 100)}% step"
    if sight.step_runs is None:
        reach = f"no series of up to {STEP_MAX_RUNS} runs finds {step} at this noise"
    else:
        reach = f"the shortest series that finds {step} at this noise: {sight.step_runs} runs"
    return f"no change in {sight.runs} runs; {reach}"


POINT_COLUMNS = d.columns(
    ("run", "date", "kernel", "commit", "n", "mean", "95% CI", "change"), numeric=("n", "mean")
)
CSV_FIELDS = ("host", "config", "workload", "chain", "params", "knobs", "metric", "unit",
              "better", "headline", "point", "run", "date", "kernel", "commit",
              "fsbench_version", "tag", "n", "mean", "ci_low", "ci_high", "change",
              "change_direction", "change_ratio", "change_p", "change_harness")  # fmt: skip
NO_SERIES = "no series: no stored run matches"


@dataclass(frozen=True, kw_only=True)
class HistoryDocument(d.Document):
    series: tuple[Series, ...]
    by: str  # what orders the runs
    notes: tuple[str, ...]


def change_mark(n: int, c: ChangePoint) -> str:
    return f"#{n} {c.direction}"


def _points(s: Series, numbering: dict[int, int]) -> d.Table:
    starts = {c.index: c for c in s.changes}
    rows = []
    for i, p in enumerate(s.points):
        c = starts.get(i)
        rows.append(
            (
                d.Cell(str(p.run), value=p.run),
                d.Cell(p.created_at[:16].replace("T", " "), value=p.created_at),
                d.Cell(p.kernel),
                d.Cell(p.commit[:12], value=p.commit),
                d.Cell(str(p.n), value=p.n),
                d.Cell(numbers.number(p.mean), value=p.mean),
                d.Cell(numbers.interval(p.ci95)),
                d.Cell(change_mark(numbering[id(c)], c) if c else ""),
            )
        )
    return d.Table(s.title, POINT_COLUMNS, tuple(rows), level=2)


def _changes(s: Series, numbering: dict[int, int]) -> d.Verdicts:
    items = []
    for c in s.changes:
        head, *rest = change_lines(numbering[id(c)], s, c)
        items.append(d.Verdict(head, tuple(line.strip() for line in rest)))
    return d.Verdicts(tuple(items))


def blocks(series: Sequence[Series], notes: Sequence[str]) -> list[d.Block]:
    numbering = {id(c): n for n, _, c in numbered(series)}
    out: list[d.Block] = [d.Title("fsbench history", level=1)]
    for s in series:
        out.append(_points(s, numbering))
        if s.changes:
            out.append(_changes(s, numbering))
        if said := sight_lines(s):
            out.append(d.Notes(said))
    if not series:
        out.append(d.Notes((NO_SERIES,)))
    if notes:
        out.append(d.Notes(tuple(notes)))
    return out


def records(series: Sequence[Series]) -> d.Records:
    """One record per point; the point that starts a change point carries its number."""
    numbering = {id(c): n for n, _, c in numbered(series)}
    rows = []
    for s in series:
        starts = {c.index: c for c in s.changes}
        for i, p in enumerate(s.points):
            c = starts.get(i)
            rows.append((
                s.host, s.config, s.workload, s.chain, s.params, s.knobs, s.metric, s.unit,
                s.better, s.headline, i + 1, p.run, p.created_at, p.kernel, p.commit,
                p.fsbench_version, p.tag, p.n, p.mean, p.ci95[0] if p.ci95 else None,
                p.ci95[1] if p.ci95 else None, numbering[id(c)] if c else None,
                c.direction if c else None, c.ratio if c else None, c.p if c else None,
                c.harness if c else None,
            ))  # fmt: skip
    return d.Records(CSV_FIELDS, tuple(rows))


def payload(series: Sequence[Series], by: str, notes: Sequence[str]) -> dict[str, Any]:
    """The JSON: the series (analysis/history.py), each change point with its number."""
    doc = history_document(series, by, notes)
    changes = [c for s in doc["series"] for c in s["changes"]]
    for (n, _, _), c in zip(numbered(series), changes, strict=True):
        c["number"] = n
    return doc


def document(series: Sequence[Series], by: str, notes: Sequence[str] = ()) -> HistoryDocument:
    return HistoryDocument(
        kind="history",
        title="fsbench history",
        blocks=tuple(blocks(series, notes)),
        payload=payload(series, by, notes),
        records=records(series),
        series=tuple(series),
        by=by,
        notes=tuple(notes),
    )
