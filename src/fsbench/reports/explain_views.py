"""What an explained pair's two configs did differently, as the tracers' maps show it: the
differential of their folded stacks (off-CPU seconds, profile samples as shares: a
differential flame graph's data) and their block requests' size and queue-depth
histograms side by side. Each a document block (reports/document.py `FlameDiff`,
`Histogram`) that a page draws and other formats write as a table, and a payload a reader
can redraw them from.

Pure: an explanation, its trials and their maps in; blocks and JSON out. Values are a
config's mean per instrumented trial of the pair's comparison."""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from fsbench.analysis.explain import Explanation, group_key
from fsbench.reports import document as d
from fsbench.store.records import FoldedRecord, TrialRecord
from fsbench.system import numbers
from fsbench.system.monitors.offcpu import IDLE, wait_class

Maps = Mapping[int, Sequence[FoldedRecord]]
# How each tracer's values are taken: off-CPU seconds as they are, profile samples as
# shares of each trial's samples (trials sample for different times).
FOLDED = {"offcpu": ("seconds off-CPU per trial", False), "profile": ("share of samples", True)}
# The block-trace histograms of the target device: (map, title, buckets' name, in bytes).
HISTOGRAMS = (
    ("dev.write_size", "write request sizes", "request size", True),
    ("dev.read_size", "read request sizes", "request size", True),
    ("dev.queue_depth", "queue depth at each request's issue", "requests in flight", False),
)


def maps_of(
    e: Explanation, trials: Sequence[TrialRecord], maps: Maps, config: str, name: str
) -> list[Mapping[str, float]]:
    """A config's maps of one name in the pair's comparison, one per counted trial."""
    return [
        m.values
        for t in trials
        if t.config == config and t.id is not None and not t.warmup and group_key(t) == e.key
        for m in maps.get(t.id, [])
        if m.name == name
    ]


def mean_map(found: Sequence[Mapping[str, float]], shares: bool = False) -> dict[str, float]:
    """Each key's mean over the trials' maps (a key a trial lacks counts 0); as shares of
    each trial's total first when asked."""
    out: dict[str, float] = {}
    for values in found:
        total = sum(values.values()) if shares else 1.0
        for key, v in values.items():
            out[key] = out.get(key, 0.0) + (v / total if total else 0.0)
    return {k: v / len(found) for k, v in out.items()}


def _busy(stack: str) -> bool:
    return wait_class(stack) != IDLE


def flame(
    e: Explanation, trials: Sequence[TrialRecord], maps: Maps, tracer: str
) -> d.FlameDiff | None:
    """The pair's folded stacks of one tracer compared (idle off-CPU waits left out: a
    thread asleep for work says nothing of the filesystem)."""
    unit, shares = FOLDED[tracer]
    found = [maps_of(e, trials, maps, c, tracer) for c in (e.a, e.b)]
    if not all(found):
        return None
    a, b = (mean_map(f, shares) for f in found)
    if tracer == "offcpu":
        a, b = ({k: v for k, v in m.items() if _busy(k)} for m in (a, b))
    # Every stack: the graph's widths are the whole's (its tiny frames are left out there).
    stacks = sorted((s, a.get(s, 0.0), b.get(s, 0.0)) for s in set(a) | set(b))
    return d.FlameDiff(
        f"flame-{tracer}-{_stem(e)}",
        f"{tracer}: {e.b} against {e.a}",
        unit,
        e.a,
        e.b,
        tuple(stacks),
    )


def _stem(e: Explanation) -> str:
    """The pair's part of its charts' file names: a digest of its comparison first (two
    parameter sets of one workload keep apart, and a name cut at 60 characters keeps it),
    then its workload and configs."""
    chain, workload, dims = e.key
    digest = zlib.crc32(f"{chain}|{workload}|{dims}|{e.a}|{e.b}".encode())
    return f"{digest:08x}-{workload}-{e.a}-{e.b}"


def _bucket(key: str, in_bytes: bool) -> str:
    return numbers.size(float(key)) if in_bytes else key


def histogram(
    e: Explanation, trials: Sequence[TrialRecord], maps: Maps, name: str
) -> d.Histogram | None:
    """A block-trace histogram of the pair's two configs, per trial, side by side."""
    _, title, x_label, in_bytes = next(h for h in HISTOGRAMS if h[0] == name)
    found = [mean_map(maps_of(e, trials, maps, c, name)) for c in (e.a, e.b)]
    if not any(found):
        return None
    keys = sorted(set(found[0]) | set(found[1]), key=float)
    return d.Histogram(
        f"hist-{name}-{_stem(e)}",
        f"{title}: {e.b} against {e.a}",
        x_label,
        "requests per trial",
        tuple(_bucket(k, in_bytes) for k in keys),
        tuple(
            (c, tuple(f.get(k, 0.0) for k in keys)) for c, f in zip((e.a, e.b), found, strict=True)
        ),
    )


View = d.FlameDiff | d.Histogram


def views(e: Explanation, trials: Sequence[TrialRecord], maps: Maps) -> dict[str, View]:
    """The pair's differential views by the map they show: its stacks' flame graphs, then
    its histograms."""
    found: dict[str, View | None] = {t: flame(e, trials, maps, t) for t in FOLDED}
    found |= {h[0]: histogram(e, trials, maps, h[0]) for h in HISTOGRAMS}
    return {name: v for name, v in found.items() if v is not None}


def payload(found: Mapping[str, View], top: int = 20) -> dict[str, Any]:
    """The views' data, for a reader to redraw: each histogram per config, and the stacks
    that changed most (`top` of each tracer)."""
    out: dict[str, Any] = {"histograms": {}, "stack_diff": {}}
    for name, v in found.items():
        if isinstance(v, d.Histogram):
            out["histograms"][name] = {
                "buckets": list(v.buckets),
                "unit": v.y_label,
                "configs": {c: list(counts) for c, counts in v.series},
            }
        else:
            out["stack_diff"][name] = {
                "unit": v.unit,
                "configs": [v.a, v.b],
                "top": [{"stack": s, "values": [va, vb]} for s, va, vb in v.ranked()[:top]],
            }
    return out
