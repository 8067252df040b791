"""How fsbench writes a value for people: one rule per kind of value, for every exporter,
report and message (hyperfine's `output/format.rs` is the model). Reading a size back from
what people type is `units.parse_size`; a plan's sizes are written `units.format_size`.

    number(12345.6)            12,346       three significant digits below 100, never an
    number(0.01234)            0.0123       exponent above 1
    mean_ci(2.2034, 0.4971)    2.20 ± 0.50  the mean to the precision of its uncertainty
    interval((871.2, 1142))    871-1,142
    ratio(1.0234)              1.023
    ratio(1.02, (0.98, 1.07), 0.95)   1.020 [95%: 0.980, 1.070]
    p(0.0123)                  p = 0.012    p(0.0002): p < 0.001
    percent(0.052)             5%           percent(0.052, 1): 5.2%
    share(0.0123)              1.2%         a relative difference with the digits it has
    seconds(600.4)             600 s        whole(600.4): 600
    count(65458)               65,458
    size(3 << 29)              1.5 GiB      a measured size: one decimal
    exact_size(65536)          64 KiB       a limit: exact where it can be
    setting(["make", "-j2"])   make -j2     a parameter's value in a label
    settings({"run": [...]})   run=make -j2 parameters in a label, unset and empty ones left out
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

_BINARY = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))
_EXACT = (("EiB", 1 << 60), ("PiB", 1 << 50), *_BINARY)


def number(x: float | None, missing: str = "-") -> str:
    """A number as every report prints it: thousands separated, never an exponent above
    1, three significant digits below (`missing` for none)."""
    if x is None:
        return missing
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    mag = abs(x)
    if mag >= 1000:
        return f"{x:,.0f}"
    if mag >= 100:
        return f"{x:.0f}"
    if mag >= 10:
        return f"{x:.1f}"
    if mag >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def significant(x: float, digits: int = 4) -> str:
    """A raw value to `digits` significant digits (a trial's value, as measured)."""
    return f"{x:.{digits}g}"


def count(n: int) -> str:
    """A count, thousands separated: 65,458."""
    return f"{n:,}"


def mean_ci(mean: float, half: float | None) -> str:
    """The mean to the precision of its uncertainty: CI half-width to 2 significant digits,
    the mean to the same decimal place (2.2034 ± 0.4971 -> 2.20 ± 0.50)."""
    if half is None or half <= 0 or not math.isfinite(half):
        text = f"{mean:,.0f}" if float(mean).is_integer() else number(mean)
        return text if half is None else f"{text} ± 0"
    decimals = min(6, max(0, 1 - math.floor(math.log10(half))))
    return f"{mean:,.{decimals}f} ± {half:,.{decimals}f}"


def interval(ci: Sequence[float] | None, missing: str = "") -> str:
    """A confidence interval of a value: 871-1,142 (`missing` for none)."""
    return missing if not ci else f"{number(ci[0])}-{number(ci[1])}"


def ratio(
    r: float | None,
    ci: Sequence[float] | None = None,
    level: float | None = None,
    missing: str = "-",
) -> str:
    """A ratio to three decimals, with its interval when given (at `level` when known):
    1.023, 1.020 [95%: 0.980, 1.070]."""
    if r is None:
        return missing
    text = f"{r:.3f}"
    if ci is not None:
        at = f"{100 * level:.3g}%: " if level is not None else ""
        text += f" [{at}{ci[0]:.3f}, {ci[1]:.3f}]"
    return text


def p_value(p: float) -> str:
    """A p-value alone: '0.012', '< 0.001'."""
    if p < 0.001:
        return "< 0.001"
    return f"{p:.3f}" if p < 0.1 else f"{p:.2f}"


def p(value: float) -> str:
    """A p-value in a sentence: 'p = 0.012', 'p < 0.001'."""
    return f"p {p_value(value)}" if value < 0.001 else f"p = {p_value(value)}"


def percent(x: float, digits: int = 0) -> str:
    """A fraction as a percentage: 0.052 -> 5%, with `digits` decimals."""
    return f"{x:.{digits}%}"


def share(x: float) -> str:
    """A relative difference as a percentage with the digits that say something: 0.03%,
    1.5%, 12%."""
    if x >= 0.095:
        return f"{x:.0%}"
    if x >= 0.0095:
        return f"{x:.1%}"
    return f"{x:.2g}" if x == 0 else f"{100 * x:.1g}%"


def whole(x: float) -> str:
    """A value rounded to a whole number, as a column whose header names its unit: 600."""
    return f"{x:.0f}"


def seconds(s: float) -> str:
    """A duration in whole seconds: 600 s."""
    return f"{whole(s)} s"


def duration(s: float) -> str:
    """A short duration in the unit that fits it, three significant digits: 2.90 ms."""
    for suffix, factor in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(s) >= factor:
            return f"{number(s / factor)} {suffix}"
    return f"{number(s / 1e-9)} ns"


def size(n: float) -> str:
    """A measured size in binary units, one decimal: 1.5 GiB, 512 B."""
    for suffix, factor in _BINARY:
        if abs(n) >= factor:
            return f"{n / factor:.1f} {suffix}"
    return f"{n:.0f} B"


def exact_size(n: int) -> str:
    """A size that is a limit, exact where it can be: 65536 -> '64 KiB', 2**63-1 -> '8 EiB
    − 1 B', 17592186040320 -> '16 TiB − 4 KiB', 4052 -> '4,052 B'; else one decimal
    ('52.3 MiB')."""
    if n < 0:
        return f"−{exact_size(-n)}"
    for suffix, factor in _EXACT:
        up = -(-n // factor) * factor  # the next whole unit
        if n >= factor and n % factor == 0:
            return f"{n // factor} {suffix}"
        if n > 0 and (up - n) * 1000 < factor and up - n < n:
            # just under a whole unit: a limit minus a little
            return f"{up // factor} {suffix} − {exact_size(up - n)}"
        if n >= factor:
            if n < 64 * 1024:
                return f"{count(n)} B"
            return f"{n / factor:.1f} {suffix}"
    return f"{count(n)} B"


def setting(value: Any) -> str:
    """A parameter's value in a label: a command's words as a shell would quote them
    (`sh -c 'sort a'`), tables by their names (a command's parsed metrics), a table as
    k=v; any other value as it is."""
    if isinstance(value, list | tuple):
        if all(isinstance(v, str) for v in value):
            return shlex.join(value)
        if all(isinstance(v, dict) and "name" in v for v in value):
            return ",".join(str(v["name"]) for v in value)
        return ",".join(setting(v) for v in value)
    if isinstance(value, dict):
        return ",".join(f"{k}={setting(v)}" for k, v in value.items())
    return str(value)


def settings(values: Mapping[str, Any]) -> str:
    """`run=make -j2 cache=cold`: the parameters set, each as `setting` writes it; None
    (the tool's own default) and an empty table or list are not worth a word."""
    return " ".join(f"{k}={setting(v)}" for k, v in values.items() if v not in (None, {}, []))
