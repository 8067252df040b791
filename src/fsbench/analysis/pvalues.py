"""How reports write p-values: '0.012', 'p < 0.001'.
The verdicts themselves are decisions.py's."""

from __future__ import annotations


def p_value(p: float) -> str:
    """'0.012', '< 0.001'."""
    if p < 0.001:
        return "< 0.001"
    return f"{p:.3f}" if p < 0.1 else f"{p:.2f}"


def fmt_p(p: float) -> str:
    """'p = 0.012', 'p < 0.001'."""
    return f"p {p_value(p)}" if p < 0.001 else f"p = {p_value(p)}"
