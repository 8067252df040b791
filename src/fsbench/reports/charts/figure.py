"""One chart as files: its record, its file names, its title band, and what its subtitle
says of the rows it draws. Every chart family builds on these."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine

from fsbench.analysis.decisions import Decision
from fsbench.analysis.design import Design
from fsbench.analysis.rows import Row
from fsbench.analysis.verdicts import Key, decide_all
from fsbench.reports.charts.style import INK, MUTED, STYLE, config_colors
from fsbench.reports.formats import IMAGES
from fsbench.reports.tables import dims_of
from fsbench.system import numbers


@dataclass(frozen=True)
class Chart:
    """One figure written in every requested format."""

    kind: str  # bar | line | layout | timeline | series
    title: str
    workload: str
    chain: str
    paths: tuple[Path, ...]
    metric: str | None = None
    size: tuple[float, float] = (8.0, 4.5)  # inches: a page lays it out by its width

    def path(self, fmt: str) -> Path | None:
        return next((p for p in self.paths if p.suffix == f".{fmt}"), None)


def slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s[:60] or "chart"


class Namer:
    """File stems, unique within one output directory."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def __call__(self, *parts: str) -> str:
        base = "-".join(slug(p) for p in parts if p)
        name, i = base, 2
        while name in self.used:
            name, i = f"{base}-{i}", i + 1
        self.used.add(name)
        return name


def new_figure(width: float, height: float) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def titles(fig: Figure, title: str, subtitle: str) -> None:
    """A bold title and a quieter, wrapped subtitle in a band above the layout."""
    height = fig.get_figheight()
    lines = textwrap.wrap(subtitle, int(fig.get_figwidth() * 12.5)) if subtitle else []
    top_pad, title_h, line_h = 0.12, 13 * 1.35 / 72, 9.5 * 1.3 / 72
    band = top_pad + title_h + len(lines) * line_h + 0.12
    engine = fig.get_layout_engine()
    if isinstance(engine, ConstrainedLayoutEngine):
        engine.set(rect=(0, 0, 1, 1 - band / height))
    y = 1 - top_pad / height
    fig.text(0.012, y, title, ha="left", va="top", fontsize=13, fontweight="bold", color=INK)
    if lines:
        fig.text(
            0.012,
            y - title_h / height,
            "\n".join(lines),
            ha="left",
            va="top",
            fontsize=9.5,
            color=MUTED,
            linespacing=1.3,
        )


def save(fig: Figure, out_dir: Path, stem: str, formats: Sequence[str]) -> tuple[Path, ...]:
    """The figure in every format; no date and no RDF block: the same data, the same file."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        path = out_dir / f"{stem}.{fmt}"
        metadata: dict[str, Any] = (
            dict.fromkeys(("Creator", "Date", "Format", "Type")) if fmt == "svg" else {}
        )
        fig.savefig(path, format=fmt, metadata=metadata)
        paths.append(path)
    return tuple(paths)


def size(fig: Figure) -> tuple[float, float]:
    return float(fig.get_figwidth()), float(fig.get_figheight())


def heading(fig: Figure, d: Drawing, what: str, *notes: str) -> str:
    """Title the chart '<workload>: <what>' over a subtitle of its notes; the title."""
    title = f"{wl_title(d.workload, d.chain)}: {what}"
    titles(fig, title, subtitle(*notes))
    return title


# --- what a chart says of its rows ------------------------------------------------------------


def ok(row: Row | None) -> bool:
    return row is not None and row.status == "ok" and row.mean is not None


def subtitle(*parts: str) -> str:
    return " · ".join(p for p in parts if p)


def wl_title(workload: str, chain: str) -> str:
    return f"{workload} (step of {chain.replace('+', ' → ')})" if chain else workload


def constant_text(rows: Sequence[Row], constant: list[str]) -> str:
    if not rows:
        return ""
    d = dims_of(rows[0])
    return " ".join(f"{n}={numbers.setting(d.get(n))}" for n in constant)


def n_text(rows: Sequence[Row]) -> str:
    ns = sorted({r.n for r in rows if r.n})
    if not ns:
        return ""
    return f"n = {ns[0]}" if len(ns) == 1 else f"n = {ns[0]}-{ns[-1]}"


# --- one family over every workload ----------------------------------------------------------


@dataclass
class Drawing:
    """What a chart family draws one workload's charts with."""

    chain: str
    workload: str
    rows: list[Row]  # the workload's rows
    colors: dict[str, str]  # config -> colour, the same in every chart of a report
    out_dir: Path
    formats: Sequence[str]
    name: Namer  # unique file stems in out_dir
    # The run's decisions (reports.verdicts): the configs a chart marks best.
    decisions: Mapping[Key, Decision] = field(default_factory=dict)

    def stem(self, kind: str, *parts: str) -> str:
        return self.name(kind, self.chain, self.workload, *parts)


Draw = Callable[[Drawing], Iterable[Chart | None]]


class ChartSet(Protocol):
    def __call__(
        self,
        rows: Sequence[Row],
        out_dir: Path,
        formats: Sequence[str] = IMAGES,
        colors: dict[str, str] | None = None,
        decisions: Mapping[Key, Decision] | None = None,
    ) -> list[Chart]: ...


class ChartFiles(Protocol):
    def __call__(
        self, rows: Sequence[Row], out_dir: Path, formats: Sequence[str] = IMAGES
    ) -> list[Path]: ...


def chart_set(draw: Draw) -> ChartSet:
    """A family's charts over every workload of a report (in report order), drawn in the
    charts' style: `draw` makes one workload's."""

    def charts(
        rows: Sequence[Row],
        out_dir: Path,
        formats: Sequence[str] = IMAGES,
        colors: dict[str, str] | None = None,
        decisions: Mapping[Key, Decision] | None = None,
    ) -> list[Chart]:
        colors = colors or config_colors([r.config for r in rows])
        if decisions is None:
            decisions = decide_all(rows, Design())
        name = Namer()
        out: list[Chart] = []
        with rc_context(STYLE):
            for chain, wl in dict.fromkeys((r.chain, r.workload) for r in rows):
                wrows = [r for r in rows if r.chain == chain and r.workload == wl]
                drawing = Drawing(chain, wl, wrows, colors, out_dir, formats, name, decisions)
                out += [c for c in draw(drawing) if c is not None]
        return out

    charts.__doc__ = draw.__doc__
    return charts


def chart_files(charts: ChartSet) -> ChartFiles:
    """The same family as the paths of the files it writes."""

    def files(rows: Sequence[Row], out_dir: Path, formats: Sequence[str] = IMAGES) -> list[Path]:
        return paths_of(charts(rows, out_dir, formats))

    files.__doc__ = charts.__doc__
    return files


def paths_of(charts: Iterable[Chart]) -> list[Path]:
    return [p for c in charts for p in c.paths]


@dataclass(frozen=True)
class TrialOf:
    """What a counted trial was, as a chart of one trial names it: its config, step,
    parameters, knobs and repetition."""

    config: str
    chain: str
    workload: str
    params: dict[str, Any]
    knobs: dict[str, str]
    rep: int

    def dims(self) -> dict[str, Any]:
        return {**self.params, **self.knobs}
