"""How reports write p-values and changes: '0.012', 'p < 0.001', '-23%', '3.2× higher'.
The verdicts themselves are decisions.py's."""

from __future__ import annotations

import math


def p_value(p: float) -> str:
    """'0.012', '< 0.001'."""
    if p < 0.001:
        return "< 0.001"
    return f"{p:.3f}" if p < 0.1 else f"{p:.2f}"


def fmt_p(p: float) -> str:
    """'p = 0.012', 'p < 0.001'."""
    return f"p {p_value(p)}" if p < 0.001 else f"p = {p_value(p)}"


def fmt_change(ratio: float | None, better: str) -> str:
    """A ratio new/old as people read it: '-23%', '+4.5%', '16× lower', '3.2× higher'."""
    if ratio is None or not math.isfinite(ratio):
        return "n/a"
    if ratio <= 0:
        return "-100%"
    if ratio >= 2:
        return f"{ratio:.3g}× higher"
    if ratio <= 0.5:
        return f"{1 / ratio:.3g}× lower"
    change = ratio - 1
    if abs(change) < 0.1:
        return f"{change:+.1%}"
    return f"{change:+.0%}"
