"""What bpftrace prints with `-f json` (one JSON object a line), read back as maps.

bpftrace prints its maps when it exits: `{"type": "map", "data": {"@name": VALUE}}`, where
VALUE is a number (a map without keys) or an object of keys (several keys joined by
commas) to numbers; histograms as `{"type": "hist", ...}` with buckets `{min, max,
count}`; `printf` lines as `{"type": "printf", "data": TEXT}`. A key that is a string
field of a tracepoint (rwbs, comm) may appear twice with the same text: bpftrace keys the
map by the field's whole buffer, bytes after its end included, and prints only the text.
Those are one key here, their values summed. A kernel stack as a key is its frames one
a line, the leaf first, each `symbol+offset`: `folded` writes it root first, frames joined
by `;`, offsets dropped (FlameGraph's folded format).

Pure: text in, maps out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

# The key of a map without keys.
SCALAR = ""
# The frame of a profile sample taken in user mode (its kernel stack is empty).
USER = "[user]"


@dataclass
class Printed:
    """Everything bpftrace printed: its maps (name without `@` -> key -> value), its
    histograms (name -> key -> {bucket low bound: count}), its printf lines, and any other
    line (its warnings and errors)."""

    maps: dict[str, dict[str, float]] = field(default_factory=dict)
    hists: dict[str, dict[str, dict[int, int]]] = field(default_factory=dict)
    printed: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    attached: int | None = None  # probes attached, once it said so
    lost: int = 0  # events it said it lost

    def value(self, name: str, key: str = SCALAR) -> float:
        return self.maps.get(name, {}).get(key, 0.0)


def _pairs(value: Any) -> list[tuple[str, Any]]:
    """An object read with its pairs kept in order, duplicates included."""
    return value if isinstance(value, list) else [(SCALAR, value)]


def _buckets(raw: Any) -> dict[int, int]:
    out: dict[int, int] = {}
    for bucket in raw:
        fields = dict(bucket)
        low = int(fields.get("min", fields.get("max")) or 0)
        out[low] = out.get(low, 0) + int(fields.get("count", 0))
    return out


def parse(lines: Iterable[str]) -> Printed:
    out = Printed()
    for line in lines:
        text = line.strip()
        if not text:
            continue
        try:
            doc = dict(json.loads(text, object_pairs_hook=lambda pairs: pairs))
        except (ValueError, TypeError):
            out.messages.append(text)
            continue
        kind, data = doc.get("type"), doc.get("data") or []
        if kind == "attached_probes":
            out.attached = int(dict(data).get("probes", 0))
        elif kind == "lost_events":
            out.lost += int(dict(data).get("events", 0))
        elif kind == "printf":
            out.printed += str(data).splitlines()
        elif kind == "map":
            for name, value in data:
                found = out.maps.setdefault(name.lstrip("@"), {})
                for key, number in _pairs(value):
                    found[key] = found.get(key, 0.0) + float(number)
        elif kind == "hist":
            for name, value in data:
                found_h = out.hists.setdefault(name.lstrip("@"), {})
                keyed = value if value and isinstance(value[0], tuple) else [(SCALAR, value)]
                for key, raw in keyed:
                    merged = found_h.setdefault(key, {})
                    for low, count in _buckets(raw).items():
                        merged[low] = merged.get(low, 0) + count
        else:
            out.messages.append(text)
    return out


def split_key(key: str, parts: int) -> list[str]:
    """A key of `parts` keys joined by commas; the first may hold commas itself (a stack,
    a thread's name), the others not."""
    found = key.rsplit(",", parts - 1)
    return found if len(found) == parts else [key, *[""] * (parts - 1)]


def frames(stack: str) -> list[str]:
    """A printed kernel stack's function names, the leaf first, offsets dropped."""
    out = []
    for line in stack.splitlines():
        name = line.strip().split("+", 1)[0].strip()
        if name:
            out.append(name)
    return out


def folded(stack: str) -> str:
    """A printed kernel stack folded: root first, `;` between frames; an empty one (a
    sample taken in user mode) is USER."""
    found = frames(stack)
    return ";".join(reversed(found)) if found else USER


def fold_map(values: dict[str, float]) -> dict[str, float]:
    """A map keyed by kernel stacks, folded (stacks that fold alike summed)."""
    out: dict[str, float] = {}
    for stack, value in values.items():
        key = folded(stack)
        out[key] = out.get(key, 0.0) + value
    return out
