"""A document's differential flame graph (reports/document.py `FlameDiff`), after Brendan
Gregg's difffolded.pl and flamegraph.pl: the second config's stacks as a flame graph
(root at the bottom, a frame as wide as its value in `b`, children in name order) and each
frame coloured by how its value changed from `a`, as a share of the larger of the two:
red where it grew, blue where it shrank, the deeper the colour the larger the change.
Frames narrower than MIN_WIDTH of the whole are left out and only those wide enough carry
their names, so the graph stays legible; frames `b` no longer has are as wide as nothing
(its table lists them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from matplotlib import colormaps, rc_context
from matplotlib.collections import PatchCollection
from matplotlib.patches import Rectangle

from fsbench.reports import document as d
from fsbench.reports.charts.figure import Chart, new_figure, save, size, slug, titles
from fsbench.reports.charts.style import INK, STYLE

MIN_WIDTH = 0.003  # of the whole: narrower frames are not drawn
LABEL_WIDTH = 0.03  # of the whole: narrower frames carry no name
MAX_DEPTH = 40  # frames from the root: deeper ones are not drawn
WIDTH, LEVEL = 11.0, 0.2  # inches: the figure's width, a frame's height
CMAP = colormaps["RdBu_r"]


@dataclass
class Frame:
    """A function path's total in a and in b (inclusive: its own stacks and its callees')."""

    name: str
    a: float = 0.0
    b: float = 0.0
    children: dict[str, Frame] = field(default_factory=dict)


def tree(stacks: Sequence[tuple[str, float, float]]) -> Frame:
    """The frames of folded stacks (root;...;leaf) under one root, 'all'."""
    root = Frame("all")
    for stack, va, vb in stacks:
        node = root
        node.a, node.b = node.a + va, node.b + vb
        for name in stack.split(";"):
            node = node.children.setdefault(name, Frame(name))
            node.a, node.b = node.a + va, node.b + vb
    return root


@dataclass(frozen=True)
class Placed:
    frame: Frame
    x: float
    depth: int


def placed(root: Frame) -> list[Placed]:
    """Every frame wide enough, where it stands: x from its parent's left edge on, in
    name order."""
    out: list[Placed] = []
    smallest = root.b * MIN_WIDTH

    def place(frame: Frame, x: float, depth: int) -> None:
        out.append(Placed(frame, x, depth))
        if depth + 1 >= MAX_DEPTH:
            return
        for name in sorted(frame.children):
            child = frame.children[name]
            if child.b >= smallest and child.b > 0:
                place(child, x, depth + 1)
            x += child.b

    if root.b > 0:
        place(root, 0.0, 0)
    return out


def relative(frame: Frame) -> float:
    """A frame's change as a share of the larger of its two values, -1 to 1: where a
    stack grew stands out however narrow, and a trunk every stack passes through is as
    red as the whole grew, not as the sum of its changes (which would pale the rest)."""
    larger = max(frame.a, frame.b)
    return (frame.b - frame.a) / larger if larger > 0 else 0.0


def _label(name: str, width_in: float, fontsize: float) -> str:
    """The frame's name cut to its width (about 0.6 em a character)."""
    fits = int(width_in * 72 / (fontsize * 0.6))
    if fits < 3:
        return ""
    return name if len(name) <= fits else name[: fits - 2] + ".."


def flame_chart(block: d.FlameDiff, out_dir: Path, formats: Sequence[str] = ("svg",)) -> Chart:
    """The differential flame graph as files in `out_dir`; its record."""
    root = tree(block.stacks)
    frames = placed(root)
    depth = max((p.depth for p in frames), default=0) + 1
    with rc_context(STYLE):
        fig = new_figure(WIDTH, 1.2 + depth * LEVEL)
        ax = fig.subplots()
        total = root.b or 1.0
        boxes, colours = [], []
        for p in frames:
            change = relative(p.frame)
            boxes.append(Rectangle((p.x / total, p.depth), p.frame.b / total, 0.92))
            colours.append(CMAP(0.5 + 0.33 * change))  # never so deep its name is unread
        ax.add_collection(PatchCollection(boxes, facecolors=colours, edgecolors="white",
                                          linewidths=0.3))  # fmt: skip
        for p in frames:
            share = p.frame.b / total
            if share >= LABEL_WIDTH:
                text = _label(p.frame.name, share * WIDTH * 0.95, 7)
                ax.text(p.x / total + 0.002, p.depth + 0.46, text, fontsize=7, color=INK,
                        va="center", ha="left", clip_on=True)  # fmt: skip
        ax.set_xlim(0, 1)
        ax.set_ylim(0, depth)
        ax.set_axis_off()
        titles(
            fig,
            block.title,
            f"width: {block.b}'s {block.unit}; colour: the change against {block.a} as a share "
            f"of the larger, red grew, blue shrank; frames under {MIN_WIDTH:.1%} of the whole "
            "not drawn",
        )
        paths = save(fig, out_dir, slug(block.name), formats)
        return Chart("flame", block.title, "", "", paths, None, size(fig))
