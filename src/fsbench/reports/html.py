"""One self-contained HTML page per run: provenance, tables with winners, every chart,
the cells that did not run, ignored options, validity flags and the raw values.

No network: the CSS is inline and the charts are embedded as base64 SVG images. Every
string that comes from a plan, a tool or the kernel goes through `html.escape`; markup is
only ever built here, around escaped text.
"""

from __future__ import annotations

import base64
import json
import re
import shlex
import tempfile
from collections.abc import Iterable, Sequence
from html import escape
from pathlib import Path
from typing import Any

from fsbench import __version__, validity, workloads
from fsbench.reports.charts import Chart, all_charts, first_rep_timelines
from fsbench.reports.ranking import NO_CLEAR, RULE, Verdict, fmt_p
from fsbench.reports.rows import Row
from fsbench.reports.tables import Table, build_tables
from fsbench.store import RunRecord, Store, TrialRecord
from fsbench.units import human_bytes

REPORT_NAME = "report.html"


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


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


# --- pieces -------------------------------------------------------------------------------

_MARKS = re.compile(r"((?: \[\d+\])+)$")


def _cell_html(text: str, table_id: str) -> str:
    """Table text with its trailing footnote marks ' [1] [2]' as superscript links."""
    m = _MARKS.search(text)
    body, marks = (text[: m.start()], m.group(1)) if m else (text, "")
    out = e(body)
    for n in re.findall(r"\d+", marks):
        out += tag("sup", tag("a", e(n), href=f"#{table_id}-fn{n}"), class_="fn")
    return out


def _status_class(text: str) -> str | None:
    if text.startswith("unsupported"):
        return "num st-unsupported"
    if text.startswith("failed"):
        return "num st-failed"
    return None


def table_html(t: Table, table_id: str) -> str:
    head = tag("th", e(t.row_header), scope="col") + "".join(
        tag("th", e(c), scope="col", class_="num") for c in t.columns
    )
    body = []
    for i, (label, cells) in enumerate(t.rows):
        tds = [tag("th", _cell_html(label, table_id), scope="row")]
        for j, c in enumerate(cells):
            if (i, j) in t.best:
                inner = tag("strong", _cell_html(c, table_id)) + tag(
                    "span", "best", class_="badge best", title=RULE
                )
                tds.append(tag("td", inner, class_="num best"))
            else:
                tds.append(tag("td", _cell_html(c, table_id), class_=_status_class(c) or "num"))
        body.append(tag("tr", "".join(tds)))
    if t.verdicts:
        tds = [tag("th", "verdict", scope="row")]
        for v in t.verdicts:
            if v is None:
                tds.append(tag("td", "", class_="num"))
            else:
                tds.append(
                    tag(
                        "td", e(v.short), class_="num sig" if v.significant else "num", title=v.text
                    )
                )
        body.append(tag("tr", "".join(tds), class_="verdict"))
    table = tag(
        "table",
        tag("caption", e(t.caption)) + tag("thead", tag("tr", head)) + tag("tbody", "".join(body)),
        class_="results",
    )
    notes = ""
    if t.footnotes:
        notes = tag(
            "ol",
            "".join(tag("li", e(n), id=f"{table_id}-fn{i}") for i, n in enumerate(t.footnotes, 1)),
            class_="footnotes",
        )
    legend = tag("p", e(t.legend), class_="legend") if t.legend else ""
    return tag(
        "figure",
        tag("h3", e(t.title), id=table_id) + tag("div", table, class_="scroll") + legend + notes,
        class_="table",
    )


def _img(chart: Chart) -> str:
    path = chart.path("svg") or chart.path("png")
    if path is None:
        return ""
    mime = "image/svg+xml" if path.suffix == ".svg" else "image/png"
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    width, height = chart.size
    wide = width > 7.5  # two narrow charts side by side stay legible; wider ones span
    # Never wider than drawn (96 px per inch): fonts keep their size on wide screens.
    img = (
        f'<img src="data:{mime};base64,{data}" alt="{e(chart.title)}" '
        f'width="{round(width * 96)}" height="{round(height * 96)}" '
        f'style="max-width:{round(width * 96)}px">'
    )
    return tag("figure", img, class_="chart wide" if wide else "chart")


def _facts(items: Iterable[tuple[str, Any]]) -> str:
    out = []
    for label, value in items:
        if value is None or value == "":
            continue
        out.append(tag("dt", e(label)) + tag("dd", e(value)))
    return tag("dl", "".join(out), class_="facts")


def _yes_no(v: Any) -> str | None:
    return None if v is None else ("yes" if v else "no")


def _target_items(t: dict[str, Any]) -> list[tuple[str, Any]]:
    size = t.get("size_bytes")
    items: list[tuple[str, Any]] = [("kind", t.get("kind"))]
    if t.get("kind") == "loop":
        items += [
            ("loop image", f"{human_bytes(size)} sparse file" if size else t.get("image")),
            ("image on", f"{t.get('backing_fs', '?')} on {t.get('backing_device', '?')}"),
            ("backing disk", t.get("backing_disk")),
            ("device model", t.get("backing_model") or "unknown (virtual disk?)"),
            ("rotational", _yes_no(t.get("rotational"))),
            ("direct I/O", _yes_no(t.get("direct_io"))),
            ("direct I/O error", t.get("direct_io_error")),
            ("discard", t.get("discard")),
        ]
    else:
        items += [
            ("device", t.get("path")),
            ("size", human_bytes(size) if size else None),
            ("device model", t.get("model")),
            ("rotational", _yes_no(t.get("rotational"))),
        ]
    shown = {
        "kind",
        "size_bytes",
        "image",
        "backing_fs",
        "backing_device",
        "backing_disk",
        "backing_model",
        "rotational",
        "direct_io",
        "direct_io_error",
        "discard",
        "path",
        "model",
        "owner_pid",
        "loop_device",
        "diskstats_name",
        "workdir",
    }
    items += [(k.replace("_", " "), _plain(v)) for k, v in t.items() if k not in shown]
    return items


def _plain(v: Any) -> Any:
    return json.dumps(v, sort_keys=True) if isinstance(v, dict | list) else v


def _host_items(run: RunRecord) -> list[tuple[str, Any]]:
    h = run.host
    mem = h.get("memory_bytes")
    commit = h.get("fsbench_commit")
    items: list[tuple[str, Any]] = [
        ("host", h.get("hostname")),
        ("kernel", f"Linux {h.get('kernel')} {h.get('kernel_version', '')}".strip()),
        ("architecture", h.get("machine")),
        ("CPU", f"{h.get('cpus')} × {h.get('cpu')}" if h.get("cpus") else h.get("cpu")),
        ("memory", human_bytes(mem) if mem else None),
        ("cpufreq governor", h.get("cpufreq_governor") or "none reported"),
        (
            "dirty ratios",
            f"vm.dirty_ratio {h.get('dirty_ratio')}, "
            f"vm.dirty_background_ratio {h.get('dirty_background_ratio')}"
            if h.get("dirty_ratio") is not None
            else None,
        ),
        ("python", h.get("python")),
        ("fsbench", f"{run.fsbench_version}" + (f" ({commit})" if commit else "")),
    ]
    shown = {
        "hostname",
        "kernel",
        "kernel_version",
        "machine",
        "cpu",
        "cpus",
        "memory_bytes",
        "cpufreq_governor",
        "dirty_ratio",
        "dirty_background_ratio",
        "python",
        "fsbench_version",
        "fsbench_commit",
        "tools",
    }
    items += [(k.replace("_", " "), _plain(v)) for k, v in h.items() if k not in shown]
    return items


def provenance_html(run: RunRecord, trials: Sequence[TrialRecord]) -> str:
    tools = run.host.get("tools") or {}
    tool_rows = "".join(
        tag("tr", tag("th", e(name), scope="row") + tag("td", e(version)))
        for name, version in sorted(tools.items())
    )
    plan = run.plan
    plan_line = (
        f"scale {plan.get('scale')}, {plan.get('reps')} reps"
        + (
            f" (up to {plan['max_reps']} until the CI is within {plan['ci_target']:.0%})"
            if plan.get("reps") == "auto" and plan.get("max_reps") and plan.get("ci_target")
            else ""
        )
        + ", fresh mkfs for every trial, repetitions interleaved"
    )
    parts = [
        tag(
            "div",
            tag("div", tag("h3", "Machine") + _facts(_host_items(run)), class_="card")
            + tag("div", tag("h3", "Target") + _facts(_target_items(run.target)), class_="card"),
            class_="cards",
        ),
        tag("h3", "Command line"),
        tag("pre", tag("code", e(shlex.join(run.argv)))),
        tag("p", e(plan_line)),
    ]
    if run.overrides:
        parts.append(
            tag(
                "p",
                "Parameters set on the command line: "
                + ", ".join(
                    tag("code", e(f"{k}={','.join(map(str, v))}")) for k, v in run.overrides.items()
                ),
            )
        )
    parts.append(configs_html(trials))
    if tool_rows:
        parts.append(
            tag(
                "details",
                tag("summary", f"Tool versions ({len(tools)})")
                + tag(
                    "div", tag("table", tag("tbody", tool_rows), class_="plain"), class_="scroll"
                ),
            )
        )
    parts.append(
        tag(
            "details",
            tag("summary", "The plan as run (JSON)")
            + tag("pre", tag("code", e(json.dumps(run.plan, indent=2, sort_keys=True)))),
        )
    )
    return "".join(parts)


def configs_html(trials: Sequence[TrialRecord]) -> str:
    """Per config: the options asked for, and what mkfs and the kernel made of them."""
    seen: dict[str, TrialRecord] = {}
    for t in trials:
        if t.config not in seen or (seen[t.config].status != "ok" and t.status == "ok"):
            seen[t.config] = t
    if not seen:
        return ""
    rows = []
    for config, t in seen.items():
        prov = t.provenance
        mkfs_argv = (prov.get("mkfs") or {}).get("argv")
        effective = (prov.get("mount") or {}).get("effective")
        rows.append(
            tag(
                "tr",
                tag("th", e(config), scope="row")
                + tag("td", e(t.fs))
                + tag("td", tag("code", e(" ".join(t.mkfs_options) or "-")))
                + tag("td", tag("code", e(t.mount_options or "-")))
                + tag("td", tag("code", e(shlex.join(mkfs_argv) if mkfs_argv else "-")))
                + tag("td", tag("code", e(",".join(effective) if effective else "-"))),
            )
        )
    head = "".join(
        tag("th", h, scope="col")
        for h in (
            "config",
            "fs",
            "mkfs options",
            "mount options",
            "mkfs run",
            "effective mount options",
        )
    )
    return tag("h3", "Configurations") + tag(
        "div",
        tag("table", tag("thead", tag("tr", head)) + tag("tbody", "".join(rows)), class_="plain"),
        class_="scroll",
    )


def _dims_text(d: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in d.items())


def _varying(rows: Sequence[Row]) -> dict[tuple[str, str], set[str]]:
    """Per (chain, workload): the parameters and knobs that differ between its cells (the
    ones worth naming; the rest are in the tables' captions)."""
    out: dict[tuple[str, str], set[str]] = {}
    for key in dict.fromkeys((r.chain, r.workload) for r in rows):
        group = [{**r.params, **r.knobs} for r in rows if (r.chain, r.workload) == key]
        names = dict.fromkeys(k for d in group for k in d)
        out[key] = {k for k in names if len({repr(d.get(k)) for d in group}) > 1}
    return out


def _where(
    chain: str, workload: str, dims: dict[str, Any], varying: dict[tuple[str, str], set[str]]
) -> str:
    wl = f"{workload} ({chain})" if chain else workload
    shown = varying.get((chain, workload))
    named = {k: v for k, v in dims.items() if shown is None or k in shown}
    return f"{wl} · {_dims_text(named)}" if named else wl


def problems_html(rows: Sequence[Row], trials: Sequence[TrialRecord]) -> str:
    """Cells that did not run (or not every time), with the tool's or kernel's words."""
    cells: dict[tuple[str, str, str, str], Row] = {}
    for r in rows:
        if r.status != "ok" or r.message:
            key = (r.config, r.chain, r.workload, json.dumps({**r.params, **r.knobs}, default=str))
            cells.setdefault(key, r)
    if not cells:
        return tag("p", "Every trial of every cell ran.", class_="quiet")
    varying = _varying(rows)
    details: dict[tuple[str, str, str, str], str] = {}
    for t in trials:
        if t.status != "ok" and t.detail:
            key = (t.config, t.chain, t.workload, json.dumps({**t.params, **t.knobs}, default=str))
            details.setdefault(key, t.detail)
    out = []
    for key, r in cells.items():
        counts = ", ".join(f"{n} {s}" for s, n in sorted(r.trials.items()))
        message = e(r.message)
        if key in details:
            message += tag(
                "details", tag("summary", "tool output") + tag("pre", tag("code", e(details[key])))
            )
        badge = tag("span", e(r.status), class_=f"badge st-{_slug(r.status)}")
        out.append(
            tag(
                "tr",
                tag("th", e(r.config), scope="row")
                + tag("td", e(_where(r.chain, r.workload, {**r.params, **r.knobs}, varying)))
                + tag("td", badge)
                + tag("td", e(counts), class_="nowrap")
                + tag("td", message),
            )
        )
    head = "".join(
        tag("th", h, scope="col") for h in ("config", "cell", "status", "trials", "message")
    )
    return tag(
        "div",
        tag("table", tag("thead", tag("tr", head)) + tag("tbody", "".join(out)), class_="plain"),
        class_="scroll",
    )


def ignored_html(rows: Sequence[Row]) -> str:
    notes: list[tuple[str, dict[str, str]]] = []
    for r in rows:
        for n in r.option_notes:
            if (r.config, n) not in notes:
                notes.append((r.config, n))
    if not notes:
        return tag("p", "The kernel reported every mkfs and mount option as asked.", class_="quiet")
    out = []
    for config, n in notes:
        kind = "ignored" if n.get("kind") == "ignored" else "not shown by the kernel"
        out.append(
            tag(
                "tr",
                tag("th", e(config), scope="row")
                + tag("td", e(n.get("where")))
                + tag("td", tag("code", e(n.get("option"))))
                + tag("td", tag("span", e(kind), class_="badge st-warn"))
                + tag("td", tag("code", e(n.get("evidence")))),
            )
        )
    head = "".join(
        tag("th", h, scope="col") for h in ("config", "where", "option", "outcome", "evidence")
    )
    return tag(
        "div",
        tag("table", tag("thead", tag("tr", head)) + tag("tbody", "".join(out)), class_="plain"),
        class_="scroll",
    )


def flags_html(rows: Sequence[Row], trials: Sequence[TrialRecord]) -> str:
    """Validity flags per cell and flag: which repetitions, what it means, the first
    detail. Cell-level flags (not-converged) come from the rows."""
    flagged: dict[tuple[str, str, str, str, str], tuple[list[str], str, dict[str, Any]]] = {}
    for t in trials:
        dims = {**t.params, **t.knobs}
        for flag, detail in (t.provenance.get("flags") or {}).items():
            key = (t.config, t.chain, t.workload, json.dumps(dims, default=str), flag)
            reps, _, _ = flagged.setdefault(key, ([], str(detail), dims))
            reps.append(str(t.rep))
    for r in rows:
        dims = {**r.params, **r.knobs}
        for flag, detail in r.flags.items():
            key = (r.config, r.chain, r.workload, json.dumps(dims, default=str), flag)
            flagged.setdefault(key, (["cell"], str(detail), dims))
    if not flagged:
        return tag("p", "No trial was flagged.", class_="quiet")
    varying = _varying(rows)
    out = []
    for (config, chain, workload, _, flag), (reps, detail, dims) in flagged.items():
        where = _where(chain, workload, dims, varying)
        meaning = validity.meaning(flag)
        out.append(
            tag(
                "tr",
                tag("th", e(config), scope="row")
                + tag("td", e(where))
                + tag("td", tag("span", e(flag), class_="badge st-warn"), title=meaning)
                + tag("td", e(", ".join(dict.fromkeys(reps))), class_="nowrap")
                + tag(
                    "td",
                    e(detail) + (tag("div", e(meaning), class_="quiet small") if meaning else ""),
                ),
            )
        )
    head = "".join(
        tag("th", h, scope="col") for h in ("config", "cell", "flag", "reps", "detail (first)")
    )
    return tag(
        "div",
        tag("table", tag("thead", tag("tr", head)) + tag("tbody", "".join(out)), class_="plain"),
        class_="scroll",
    )


def _fmt_raw(v: float) -> str:
    if v == int(v) and abs(v) < 1e15:
        return f"{int(v)}"
    return f"{v:.6g}"


def raw_html(trials: Sequence[TrialRecord]) -> str:
    """Every trial and every metric, one table per workload (collapsed)."""
    out = []
    groups = dict.fromkeys((t.chain, t.workload) for t in trials)
    for chain, wl in groups:
        ts = [t for t in trials if t.chain == chain and t.workload == wl]
        metrics = list(dict.fromkeys(m.name for t in ts for m in t.metrics))
        dims = list(dict.fromkeys(k for t in ts for k in {**t.params, **t.knobs}))
        varying = [d for d in dims if len({repr({**t.params, **t.knobs}.get(d)) for t in ts}) > 1]
        units = {m.name: m.unit for t in ts for m in t.metrics}
        head = "".join(
            tag("th", h, scope="col") for h in ("#", "rep", "config", *map(e, varying), "status")
        ) + "".join(
            tag(
                "th",
                e(m) + tag("span", e(units.get(m, "")), class_="unit"),
                scope="col",
                class_="num",
            )
            for m in metrics
        )
        body = []
        for t in ts:
            d = {**t.params, **t.knobs}
            values = {m.name: m.value for m in t.metrics}
            cells = (
                tag("td", e(t.seq), class_="num")
                + tag("td", e(t.rep), class_="num")
                + tag("th", e(t.config), scope="row")
                + "".join(tag("td", e(d.get(v))) for v in varying)
                + tag(
                    "td",
                    e(t.status)
                    if t.status == "ok"
                    else tag(
                        "span", e(t.status), class_=f"badge st-{_slug(t.status)}", title=t.message
                    ),
                )
                + "".join(
                    tag("td", e(_fmt_raw(values[m])) if m in values else "", class_="num")
                    for m in metrics
                )
            )
            body.append(tag("tr", cells))
        title = f"{wl} ({chain})" if chain else wl
        out.append(
            tag(
                "details",
                tag("summary", f"{e(title)}: {len(ts)} trials × {len(metrics)} metrics")
                + tag(
                    "div",
                    tag(
                        "table",
                        tag("thead", tag("tr", head)) + tag("tbody", "".join(body)),
                        class_="plain raw",
                    ),
                    class_="scroll",
                ),
            )
        )
    return "".join(out)


def _verdict_detail(v: Verdict) -> str:
    p = "n < 2" if v.p_adjusted is None else fmt_p(v.p_adjusted)
    if v.significant:
        return tag("strong", e(v.best)) + e(
            f" {v.margin} vs {v.runner_up} ({v.better} is better; Welch {p}, Holm)"
        )
    return e(f"closest: {v.best} vs {v.runner_up}, {p}")


def summary_html(
    tables: Sequence[Table], rows: Sequence[Row], trials: Sequence[TrialRecord]
) -> str:
    counts: dict[str, int] = {}
    for t in trials:
        counts[t.status] = counts.get(t.status, 0) + 1
    configs = list(dict.fromkeys(t.config for t in trials))
    wls = list(dict.fromkeys(t.workload for t in trials))
    cells = len(
        {
            (r.config, r.chain, r.workload, json.dumps({**r.params, **r.knobs}, default=str))
            for r in rows
        }
    )
    entries: list[tuple[Table, str, Verdict]] = []
    for table in tables:
        for col, v in zip(table.columns, table.verdicts, strict=False):
            if v is not None:
                entries.append((table, col, v))
    significant = sum(1 for _, _, v in entries if v.significant)
    stats = [
        (str(len(configs)), "configs"),
        (str(len(wls)), "workloads" if len(wls) != 1 else "workload"),
        (str(cells), "cells"),
        (str(len(trials)), "trials"),
        (str(counts.get("ok", 0)), "ok"),
        (str(counts.get("unsupported", 0)), "unsupported"),
        (str(counts.get("failed", 0)), "failed"),
        (f"{significant}/{len(entries)}", "clear winners"),
    ]
    tiles = "".join(
        tag("div", tag("div", e(n), class_="n") + tag("div", e(label), class_="l"), class_="tile")
        for n, label in stats
    )
    parts = [tag("div", tiles, class_="tiles")]
    if entries:
        body = []
        for table, col, v in entries:
            what = table.metric if table.metric else col
            condition = col if table.metric else ""
            body.append(
                tag(
                    "tr",
                    tag("td", e(table.workload + (f" ({table.chain})" if table.chain else "")))
                    + tag("td", e(what))
                    + tag("td", e(condition))
                    + tag(
                        "td",
                        tag("span", "clear winner", class_="badge best")
                        if v.significant
                        else tag(
                            "span", e(NO_CLEAR if v.tested else "untested"), class_="badge quiet"
                        ),
                        class_="nowrap",
                    )
                    + tag("td", _verdict_detail(v), class_=None if v.significant else "quiet"),
                    class_="sig" if v.significant else None,
                )
            )
        head = "".join(
            tag("th", h, scope="col")
            for h in ("workload", "metric", "condition", "verdict", "evidence")
        )
        parts.append(
            tag(
                "div",
                tag(
                    "table",
                    tag("thead", tag("tr", head)) + tag("tbody", "".join(body)),
                    class_="plain verdicts",
                ),
                class_="scroll",
            )
        )
        parts.append(tag("p", e(f"Verdict: {RULE}; otherwise {NO_CLEAR}."), class_="legend"))
    return "".join(parts)


# --- the page -----------------------------------------------------------------------------


def render_html(
    run: RunRecord,
    trials: Sequence[TrialRecord],
    rows: list[Row],
    charts: Sequence[Chart],
) -> str:
    """The whole page as a string (charts are read from their files and embedded)."""
    tables = build_tables(rows)
    wl_keys = list(dict.fromkeys((r.chain, r.workload) for r in rows))
    configs = list(dict.fromkeys(r.config for r in rows))
    sections = []
    toc = [("summary", "Summary"), ("provenance", "Machine, target and plan")]
    for n, (chain, wl) in enumerate(wl_keys):
        sid = f"wl-{n}-{_slug(wl)}"
        title = f"{wl} (step of {chain.replace('+', ' → ')})" if chain else wl
        toc.append((sid, title))
        try:
            about = workloads.get(wl).summary
        except KeyError:
            about = ""
        parts = [tag("h2", e(title), id=sid)]
        if about:
            parts.append(tag("p", e(about), class_="about"))
        for i, t in enumerate(x for x in tables if x.workload == wl and x.chain == chain):
            parts.append(table_html(t, f"{sid}-t{i}"))
        wcharts = [c for c in charts if c.workload == wl and c.chain == chain]
        main = [c for c in wcharts if c.kind != "timeline"]
        timelines = [c for c in wcharts if c.kind == "timeline"]
        if main:
            parts.append(tag("h3", "Charts"))
            parts.append(tag("div", "".join(_img(c) for c in main), class_="charts"))
        if timelines:
            parts.append(
                tag(
                    "details",
                    tag(
                        "summary",
                        f"Timelines: device throughput, utilisation and CPU over the timed "
                        f"phase ({len(timelines)})",
                    )
                    + tag("div", "".join(_img(c) for c in timelines), class_="charts"),
                    open=True,
                    class_="timelines",
                )
            )
        sections.append(tag("section", "".join(parts)))
    features = features_section(run, trials)
    if features:
        toc.append(("features", "Filesystem features"))
    toc += [
        ("problems", "Unsupported and failed cells"),
        ("options", "Ignored options"),
        ("flags", "Validity flags"),
        ("raw", "Raw values"),
    ]
    nav = tag(
        "nav",
        tag("ol", "".join(tag("li", tag("a", e(label), href=f"#{sid}")) for sid, label in toc)),
        class_="toc",
        aria_label="Contents",
    )
    when = (run.finished_at or run.created_at or "")[:16].replace("T", " ")
    wls = ", ".join(dict.fromkeys(wl for _, wl in wl_keys))
    lede = " · ".join(
        x
        for x in (
            ", ".join(configs),
            wls,
            f"scale {run.plan.get('scale')}" if run.plan.get("scale") else "",
            f"{run.status} {when} UTC" if when else run.status,
        )
        if x
    )
    body = "".join(
        [
            tag(
                "header",
                tag("p", "fsbench report", class_="kicker")
                + tag("h1", e(f"Run {run.id}: {run.name}"))
                + tag("p", e(lede), class_="lede"),
                class_="page",
            ),
            nav,
            tag("section", tag("h2", "Summary", id="summary") + summary_html(tables, rows, trials)),
            tag(
                "section",
                tag("h2", "Machine, target and plan", id="provenance")
                + provenance_html(run, trials),
            ),
            *sections,
            features,
            tag(
                "section",
                tag("h2", "Unsupported and failed cells", id="problems")
                + problems_html(rows, trials),
            ),
            tag(
                "section",
                tag("h2", "Ignored options", id="options")
                + tag(
                    "p",
                    "Options the kernel accepted but did not apply, from comparing what was "
                    "asked with /proc/self/mountinfo, the filesystem's geometry and dmesg.",
                    class_="about",
                )
                + ignored_html(rows),
            ),
            tag("section", tag("h2", "Validity flags", id="flags") + flags_html(rows, trials)),
            tag(
                "section",
                tag("h2", "Raw values", id="raw")
                + tag("p", "Every trial as stored, in schedule order.", class_="about")
                + raw_html(trials),
            ),
            tag(
                "footer",
                e(
                    f"fsbench {__version__} · run {run.id} made by fsbench "
                    f"{run.fsbench_version} · every number is mean ± 95% CI (n) unless "
                    "said otherwise"
                ),
            ),
        ]
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="fsbench {e(__version__)}">\n'
        f"<title>{e(f'fsbench run {run.id}: {run.name}')}</title>\n"
        f"<style>{CSS}</style>\n</head>\n<body>\n"
        f'<div class="wrap">{body}</div>\n</body>\n</html>\n'
    )


def features_section(run: RunRecord, trials: Sequence[TrialRecord]) -> str:
    """The feature table of `fsbench features` measured on this run's kernel, cut to the
    run's filesystems; empty when none was measured."""
    from fsbench.features import FEATURES_CSS, features_table_html, load_features

    kernel = str(run.host.get("kernel") or "")
    try:
        table = load_features(kernel) if kernel else None
    except Exception:  # a damaged or foreign file must not cost the whole report
        table = None
    fs_types = list(dict.fromkeys(t.fs for t in trials))
    if table is None:
        return ""
    mine = [fs for fs in fs_types if fs in table.filesystems]
    if not mine:
        return ""
    return tag(
        "section",
        tag("h2", "Filesystem features", id="features")
        + tag(
            "p",
            e(
                f"Measured by `fsbench features` on kernel {kernel}: what these filesystems do "
                "here, each cell with its evidence."
            ),
            class_="about",
        )
        + f"<style>{FEATURES_CSS}</style>"
        + features_table_html(table.only(mine)),
    )


def _load(store: Store, run_id: int) -> tuple[RunRecord, list[TrialRecord], list[Row]]:
    from fsbench.reports import source

    loaded = source.load(store, run_id)
    return loaded.run, loaded.trials, loaded.rows


def html_report(store: Store, run_id: int, chart_dir: Path | None = None) -> str:
    """The page for `fsbench report --format html`; charts go to chart_dir (PNG and SVG)
    when given, else to a temporary directory (SVG only) that is removed."""
    run, trials, rows = _load(store, run_id)
    timelines = first_rep_timelines(trials, store.get_samples)
    if chart_dir is not None:
        return render_html(run, trials, rows, all_charts(rows, timelines, chart_dir))
    with tempfile.TemporaryDirectory(prefix="fsbench-charts-") as tmp:
        charts = all_charts(rows, timelines, Path(tmp), formats=("svg",))
        return render_html(run, trials, rows, charts)


def write_run_report(store: Store, run_id: int, out_dir: Path) -> list[Path]:
    """report.html plus every chart as PNG and SVG in out_dir; the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    run, trials, rows = _load(store, run_id)
    timelines = first_rep_timelines(trials, store.get_samples)
    charts = all_charts(rows, timelines, out_dir)
    page = out_dir / REPORT_NAME
    page.write_text(render_html(run, trials, rows, charts), encoding="utf-8")
    return [page, *(p for c in charts for p in c.paths)]


CSS = """
:root{--ink:#1f2328;--muted:#59636e;--line:#d8dee4;--soft:#f6f8fa;--accent:#0969da;
--good:#1a7f37;--good-bg:#dafbe1;--warn:#9a6700;--warn-bg:#fff8c5;--bad:#cf222e;
--bad-bg:#ffebe9}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;color:var(--ink);background:#fff;
font:15px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
.wrap{max-width:1200px;margin:0 auto;padding:0 28px 72px}
header.page{padding:40px 0 18px;border-bottom:3px solid var(--ink)}
.kicker{margin:0;color:var(--accent);font-weight:700;letter-spacing:.08em;
text-transform:uppercase;font-size:12.5px}
h1{font-size:34px;line-height:1.15;margin:6px 0 8px;letter-spacing:-.015em}
.lede{margin:0;color:var(--muted);font-size:16px}
h2{font-size:23px;letter-spacing:-.01em;margin:52px 0 14px;padding-top:18px;
border-top:1px solid var(--line)}
h3{font-size:16.5px;margin:28px 0 10px}
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}
nav.toc{margin:18px 0 0;font-size:14px}
nav.toc ol{list-style:none;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:6px 8px}
nav.toc li a{display:inline-block;padding:4px 11px;border:1px solid var(--line);
border-radius:999px;color:var(--ink);background:var(--soft)}
nav.toc li a:hover{border-color:var(--accent);color:var(--accent);text-decoration:none}
.about,.quiet{color:var(--muted)}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch;border:1px solid var(--line);
border-radius:10px;background:#fff}
table{border-collapse:collapse;width:100%;font-size:14px;font-variant-numeric:tabular-nums}
caption{caption-side:bottom;text-align:left;padding:9px 14px;color:var(--muted);
font-size:13px;border-top:1px solid var(--line);background:var(--soft)}
th,td{padding:8px 14px;text-align:left;vertical-align:top;border-bottom:1px solid var(--line)}
tbody tr:last-child th,tbody tr:last-child td{border-bottom:0}
thead th{background:var(--soft);font-weight:600;font-size:13px;color:var(--muted);
white-space:nowrap;border-bottom:1px solid var(--line)}
tbody th{font-weight:600}
td.num,th.num{text-align:right;white-space:nowrap}
table.results tbody tr:hover{background:#fbfcfd}
td.best{background:var(--good-bg);color:var(--good)}
td.best strong{font-weight:700}
tr.verdict th,tr.verdict td{background:var(--soft);color:var(--muted);font-size:13px;
font-weight:500;border-top:2px solid var(--line)}
tr.verdict td.sig{color:var(--good);font-weight:700}
td.st-unsupported,td.st-failed{color:var(--warn);font-style:italic}
sup.fn{font-size:11px;margin-left:2px}sup.fn a{color:var(--accent)}
figure{margin:0}
figure.table{margin:18px 0 26px}
figure.table h3{margin:0 0 8px}
.legend{font-size:13px;color:var(--muted);margin:8px 2px 0}
ol.footnotes{margin:8px 0 0;padding-left:26px;font-size:13px;color:var(--muted)}
ol.footnotes li:target{background:var(--warn-bg)}
.badge{display:inline-block;padding:1px 9px;border-radius:999px;font-size:12px;
font-weight:600;line-height:1.6;white-space:nowrap;vertical-align:1px}
.badge.best{background:var(--good);color:#fff}
td.best .badge.best{margin-left:8px}
.badge.quiet{background:var(--soft);color:var(--muted);border:1px solid var(--line)}
.badge.st-unsupported,.badge.st-warn{background:var(--warn-bg);color:var(--warn)}
.badge.st-failed{background:var(--bad-bg);color:var(--bad)}
table.verdicts tr.sig td{background:#f4fbf6}
table.verdicts{min-width:760px}
.charts{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:22px;
margin:10px 0 8px}
figure.chart{border:1px solid var(--line);border-radius:10px;padding:10px;background:#fff;
display:flex;justify-content:center}
figure.chart.wide{grid-column:1/-1}
figure.chart img{display:block;width:100%;height:auto}
figure.table .scroll{display:inline-block;max-width:100%;vertical-align:top}
table.results{width:auto;min-width:520px}
table.results thead th.num{white-space:normal;min-width:8.5em}
table.results td.num{padding-left:28px}
figcaption{font-size:12.5px;color:var(--muted);padding:6px 4px 0}
details{margin:12px 0}
details>summary{cursor:pointer;font-weight:600;padding:6px 0}
details>summary:hover{color:var(--accent)}
details.timelines>summary{font-size:16px}
pre{background:var(--soft);border:1px solid var(--line);border-radius:8px;padding:12px 14px;
overflow:auto;max-height:440px;font-size:13px;line-height:1.45;white-space:pre-wrap;
word-break:break-word}
code{font-family:ui-monospace,SFMono-Regular,"SF Mono",Menlo,Consolas,monospace;font-size:.92em}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(340px,1fr));gap:18px}
.card{border:1px solid var(--line);border-radius:10px;padding:4px 18px 14px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:5px 18px;margin:0;
font-size:14px}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0;word-break:break-word}
.tiles{display:grid;grid-template-columns:repeat(auto-fit,minmax(120px,1fr));gap:12px;
margin:0 0 18px}
.tile{border:1px solid var(--line);border-radius:10px;padding:10px 14px;background:var(--soft)}
.tile .n{font-size:24px;font-weight:700;font-variant-numeric:tabular-nums}
.tile .l{font-size:12.5px;color:var(--muted)}
.unit{display:block;font-weight:400;font-size:11.5px;color:var(--muted)}
table.raw td,table.raw th{padding:5px 10px;font-size:13px}
.nowrap{white-space:nowrap}
.small{font-size:12.5px;margin-top:2px}
table.plain code{overflow-wrap:anywhere}
footer{margin-top:60px;padding-top:16px;border-top:1px solid var(--line);color:var(--muted);
font-size:13px}
@media (max-width:900px){.charts{grid-template-columns:minmax(0,1fr)}}
@media (max-width:720px){.wrap{padding:0 14px 48px}h1{font-size:27px}
.charts{grid-template-columns:minmax(0,1fr)}dl.facts{grid-template-columns:1fr}
dl.facts dd{margin-bottom:6px}}
@media print{nav.toc{display:none}details{display:block}figure.chart{break-inside:avoid}
h2{break-after:avoid}}
"""
