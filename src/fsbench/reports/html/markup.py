"""Markup, and the only way data reaches the page: every string from a plan, a tool or
the kernel goes through `e` (html.escape); elements are built around escaped text."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from fsbench.analysis.rows import Row
from fsbench.reports.tables import dims_of
from fsbench.store.records import TrialRecord
from fsbench.system import numbers


def e(value: Any) -> str:
    """Escaped text: the only way data reaches the page."""
    return escape("" if value is None else str(value), quote=True)


def _attrs(attrs: dict[str, Any]) -> str:
    out = []
    for k, v in attrs.items():
        if v is None or v is False:
            continue
        name = k.rstrip("_").replace("_", "-")
        out.append(f" {name}" if v is True else f' {name}="{e(v)}"')
    return "".join(out)


def tag(name: str, inner: str = "", **attrs: Any) -> str:
    """An element around already-safe inner HTML; attribute values are escaped."""
    return f"<{name}{_attrs(attrs)}>{inner}</{name}>"


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def badge(text: str, kind: str, title: str | None = None) -> str:
    """A pill: 'best', 'quiet', 'st-warn', 'st-<status>'."""
    return tag("span", e(text), class_=f"badge {kind}", title=title)


def status_badge(status: str, title: str | None = None) -> str:
    return badge(status, f"st-{slug(status)}", title)


def facts(items: Iterable[tuple[str, Any]]) -> str:
    """A definition list of label: value, leaving out what is unknown."""
    out = []
    for label, value in items:
        if value is None or value == "":
            continue
        out.append(tag("dt", e(label)) + tag("dd", e(value)))
    return tag("dl", "".join(out), class_="facts")


def plain(data: Any) -> Any:
    """A stored value as one line: nested data as sorted JSON."""
    return json.dumps(data, sort_keys=True) if isinstance(data, dict | list) else data


def head(*names: str, numeric: Sequence[str] = ()) -> str:
    """A table header row of escaped column names."""
    return "".join(
        tag("th", e(n), scope="col", class_="num" if n in numeric else None) for n in names
    )


def table(header: str, rows: Iterable[str], class_: str = "plain") -> str:
    """A scrolling table: a header row's cells and body rows, both already markup."""
    return tag(
        "div",
        tag(
            "table",
            tag("thead", tag("tr", header)) + tag("tbody", "".join(rows)),
            class_=class_,
        ),
        class_="scroll",
    )


def details(summary: str, inner: str, **attrs: Any) -> str:
    """A collapsible block; `summary` is markup."""
    return tag("details", tag("summary", summary) + inner, **attrs)


def pre(text: str) -> str:
    return tag("pre", tag("code", e(text)))


# --- how the page names a cell -----------------------------------------------------------------


def trial_label(t: TrialRecord) -> str:
    """A trial's config as the tables label its row (reports.tables.label_of)."""
    return f"{t.host} · {t.config}" if t.host else t.config


def varying(rows: Sequence[Row]) -> dict[tuple[str, str], set[str]]:
    """Per (chain, workload): the parameters and knobs that differ between its cells (the
    ones worth naming; the rest are in the tables' captions)."""
    out: dict[tuple[str, str], set[str]] = {}
    for key in dict.fromkeys((r.chain, r.workload) for r in rows):
        group = [dims_of(r) for r in rows if (r.chain, r.workload) == key]
        names = dict.fromkeys(k for d in group for k in d)
        out[key] = {k for k in names if len({repr(d.get(k)) for d in group}) > 1}
    return out


def named(values: dict[str, Any], names: set[str] | None = None) -> str:
    """'method=write-4k size=64M': these parameters and knobs (all when names is None)."""
    return " ".join(
        f"{k}={numbers.setting(v)}" for k, v in values.items() if names is None or k in names
    )


def where(
    chain: str, workload: str, values: dict[str, Any], swept: dict[tuple[str, str], set[str]]
) -> str:
    """'alloc · method=write-4k': the workload and what sets the cell apart."""
    wl = f"{workload} ({chain})" if chain else workload
    text = named(values, swept.get((chain, workload)))
    return f"{wl} · {text}" if text else wl
