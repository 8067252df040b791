"""False orders over a run's comparisons (Benjamini & Bogomolov 2014): the comparisons
with any difference are selected by Benjamini-Hochberg over the run's tested comparisons
(their `family_p`), and the pairs of a selected comparison are ordered at the level
alpha x selected / tested. An A/A run with twenty metrics then owes no false order to
their number. Comparisons answered by exact counts alone are not tested: they keep their
exact answers and neither enter the count nor lower the others' p. A metric that is an
exact reciprocal or multiple of another of the same trials (a fixed tree's MB/s and its
seconds: `twin_of`) tests the same hypothesis with the same p: it is counted once, and
judged as its twin is.

The repetition loop stops a group on exactly this control, with what is still running
counted as undecided (`pending`): the Benjamini-Hochberg selection only grows as p-values
fall, so the level the report finally gives a stopped group is never below the one it
stopped on, and no stopped group's answer is withdrawn.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from fsbench.analysis.decisions import Decision, at_level
from fsbench.analysis.design import ALPHA
from fsbench.analysis.stats import step_down


def control_run(
    decisions: Sequence[Decision],
    alpha: float = ALPHA,
    pending: Collection[tuple[str, ...]] = (),
    unknown: int = 0,
) -> list[Decision]:
    """The run's decisions with false orders controlled over its tested comparisons.
    Headline comparisons and the rest are two families, so that asking for every metric
    never changes a headline verdict. `pending`: keys of comparisons still running,
    counted with p = 1; `unknown`: headline comparisons that may yet be tested (exact so
    far, their group still running), counted too."""
    # Comparisons answered without a test keep their answers (judged at the full level,
    # where nothing is tested).
    out = [d if d.family_p is not None else at_level(d, alpha) for d in decisions]
    for headline in (True, False):
        tested = [i for i, d in enumerate(out) if d.headline == headline and d.family_p is not None]
        by_key = {out[i].key: i for i in tested}
        # Each tested comparison's principal: its twin's index, else its own.
        principal = {i: by_key.get((*out[i].key[:3], out[i].twin_of or ""), i) for i in tested}
        idx = [i for i in tested if principal[i] == i]
        m = len(idx) + (unknown if headline else 0)
        if not idx:
            continue
        ps = {i: 1.0 if out[i].key in pending else (out[i].family_p or 0.0) for i in idx}
        chosen = _selected(ps, alpha, m)
        for i in tested:
            level = chosen.level if principal[i] in chosen.ids else 0.0
            judged = at_level(out[i], level, chosen.missed)
            out[i] = replace(judged, family_q=chosen.q[principal[i]])
    return out


@dataclass(frozen=True)
class Selection:
    """What Benjamini-Hochberg selected: the ids, the level their members are judged at,
    the level the others missed, and every id's q-value."""

    ids: frozenset[int]
    level: float
    missed: float
    q: dict[int, float]


def _selected(ps: Mapping[int, float], alpha: float, m: int) -> Selection:
    """Benjamini-Hochberg over these p-values (of m hypotheses, some maybe not yet
    tested)."""
    ranked = sorted((p, i) for i, p in ps.items())
    selected = max((r for r, (p, _) in enumerate(ranked, 1) if p <= alpha * r / m), default=0)
    # A comparison left out missed alpha x (selected + 1) / m: its intervals are shown at
    # that level (they hold 1 there).
    missed = min(alpha, alpha * (selected + 1) / m)
    # BH-adjusted p (the q-value): the smallest alpha at which a comparison is chosen.
    q, running = {}, 1.0
    for rank in range(len(ranked), 0, -1):
        p, i = ranked[rank - 1]
        running = min(running, p * m / rank)
        q[i] = running
    chosen = frozenset(i for _, i in ranked[:selected])
    return Selection(chosen, alpha * selected / m, missed, q)


def control_families(
    families: Sequence[Sequence[Decision]], alpha: float = ALPHA
) -> list[list[Decision]]:
    """Two-config decisions grouped into families of one question each (explain: a pair
    of configs, its mechanisms the members), judged by the same selective inference one
    level up: Holm's step-down within a family gives each member its adjusted p and the
    family its smallest; Benjamini-Hochberg over the families' p selects those with any
    difference; a selected family's members are ordered at alpha x selected / families.
    A family with many real differences then never lowers the bar for another (an A/A
    pair beside two that differ), which one Benjamini-Hochberg over every member would.
    Members answered by exact counts alone keep their answers, as in control_run."""
    out = [[d if d.family_p is not None else at_level(d, alpha) for d in f] for f in families]
    family_ps: dict[int, float] = {}
    for f, members in enumerate(out):
        tested = [i for i, d in enumerate(members) if d.family_p is not None]
        if not tested:
            continue
        steps = step_down([members[i].family_p or 0.0 for i in tested])
        for i, s in zip(tested, steps, strict=True):
            (pair,) = members[i].pairs  # a two-config decision: its one pair
            held = replace(pair, p=s.adjusted, divisor=s.divisor, rank=0)
            members[i] = replace(members[i], pairs=(held,), family_p=s.adjusted)
        family_ps[f] = min(s.adjusted for s in steps)
    if not family_ps:
        return out
    chosen = _selected(family_ps, alpha, len(family_ps))
    for f in family_ps:
        level = chosen.level if f in chosen.ids else 0.0
        out[f] = [
            d
            if d.family_p is None
            else replace(at_level(d, level, chosen.missed), family_q=chosen.q[f])
            for d in out[f]
        ]
    return out
