"""How a measured value reads in a cell: sizes in exact binary units, counts with
thousands separators."""

from __future__ import annotations

from fsbench.store.features import Result

_UNITS = (
    ("EiB", 1 << 60),
    ("PiB", 1 << 50),
    ("TiB", 1 << 40),
    ("GiB", 1 << 30),
    ("MiB", 1 << 20),
    ("KiB", 1 << 10),
)


def human_size(n: int) -> str:
    """Exact where it can be: 65536 -> '64 KiB', 2**63-1 -> '8 EiB − 1 B',
    17592186040320 -> '16 TiB − 4 KiB', 4052 -> '4,052 B'; else one decimal ('52.3 MiB')."""
    if n < 0:
        return f"−{human_size(-n)}"
    for suffix, factor in _UNITS:
        up = -(-n // factor) * factor  # the next whole unit
        if n >= factor and n % factor == 0:
            return f"{n // factor} {suffix}"
        if n > 0 and (up - n) * 1000 < factor and up - n < n:
            # just under a whole unit: a limit minus a little
            return f"{up // factor} {suffix} − {human_size(up - n)}"
        if n >= factor:
            if n < 64 * 1024:
                return f"{n:,} B"
            return f"{n / factor:.1f} {suffix}"
    return f"{n:,} B"


def value_text(r: Result) -> str:
    v = r.value
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int | float) and r.unit == "B":
        return human_size(int(v))
    if isinstance(v, int):
        return f"{v:,}" + (f" {r.unit}" if r.unit else "")
    if isinstance(v, float):
        return f"{v:,.1f}" + (f" {r.unit}" if r.unit else "")
    return v + (f" {r.unit}" if r.unit else "")
