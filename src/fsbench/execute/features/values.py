"""How a measured value reads in a cell: sizes in exact binary units, counts with
thousands separators (system/numbers.py's rules)."""

from __future__ import annotations

from fsbench.store.features import Result
from fsbench.system import numbers


def value_text(r: Result) -> str:
    v = r.value
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int | float) and r.unit == "B":
        return numbers.exact_size(int(v))
    if isinstance(v, int):
        return numbers.count(v) + (f" {r.unit}" if r.unit else "")
    if isinstance(v, float):
        return f"{v:,.1f}" + (f" {r.unit}" if r.unit else "")
    return v + (f" {r.unit}" if r.unit else "")
