"""Byte sizes as people write them: 64M, 1GiB, 4 GiB, 512k (read by `parse_size`, written
back by `format_size`; a size shown in a report is `numbers.size`)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "m": 1 << 20,
    "g": 1 << 30,
    "t": 1 << 40,
    "p": 1 << 50,
}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(?:i?b)?\s*$", re.IGNORECASE)


def parse_size(text: str | int) -> int:
    """Bytes from '64M', '1GiB', '4 GiB', '512k' or an int (binary units throughout)."""
    if isinstance(text, bool):
        raise ValueError(f"not a size: {text!r}")
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"size must not be negative: {text}")
        return text
    m = _SIZE_RE.match(str(text))
    if not m:
        raise ValueError(f"not a size: {text!r} (examples: 64M, 1G, 4GiB)")
    value = float(m.group(1)) * _UNITS[m.group(2).lower()]
    return int(value)


def format_size(n: int) -> str:
    """The shortest exact binary form: 67108864 -> '64M'; 1536 -> '1536'."""
    for suffix, factor in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= factor and n % factor == 0:
            return f"{n // factor}{suffix}"
    return str(n)


# A byte size in a pydantic model: accepts 64M / 1G / ints, stored and shown as "64M".
Bytes = Annotated[
    int,
    BeforeValidator(parse_size),
    PlainSerializer(format_size, return_type=str, when_used="json"),
]
