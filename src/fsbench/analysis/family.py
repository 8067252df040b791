"""False orders over a run's comparisons (Benjamini & Bogomolov 2014): the comparisons
with any difference are selected by Benjamini-Hochberg over the run's comparisons, and the
pairs of a selected comparison are ordered at alpha x selected / comparisons. An A/A run
with twenty metrics then owes no false order to their number."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from fsbench.analysis.decisions import Decision, at_level
from fsbench.analysis.design import ALPHA


def control_run(decisions: Sequence[Decision], alpha: float = ALPHA) -> list[Decision]:
    """The run's decisions with false orders controlled over its comparisons (Benjamini
    & Bogomolov: BH selects the comparisons with any difference, their pairs are ordered
    at alpha x selected / tested). Headline comparisons and the rest are two families,
    so that asking for every metric never changes a headline verdict."""
    out = list(decisions)
    for headline in (True, False):
        idx = [i for i, d in enumerate(out) if d.headline == headline and d.family_p is not None]
        m = len(idx)
        if m == 0:
            continue
        ps = sorted((out[i].family_p or 0.0, i) for i in idx)
        selected = 0
        for rank, (p, _) in enumerate(ps, 1):
            if p <= alpha * rank / m:
                selected = rank
        chosen = {i for _, i in ps[:selected]}
        level = alpha * selected / m
        # BH-adjusted p (the q-value): the smallest alpha at which a comparison is chosen.
        q, running = {}, 1.0
        for rank in range(m, 0, -1):
            p, i = ps[rank - 1]
            running = min(running, p * m / rank)
            q[i] = running
        for i in idx:
            out[i] = replace(at_level(out[i], level if i in chosen else 0.0), family_q=q[i])
    return out
