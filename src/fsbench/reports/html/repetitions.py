"""Every repetition behind a workload's numbers, per cell and headline metric: n, the
values in the order they ran with outliers marked (shown and counted, never dropped), the
warm-up values apart (run, stored, not counted), the smallest difference this n and this
noise could detect, the repetitions a 5% difference needs, and every flag with its
meaning."""

from __future__ import annotations

from collections.abc import Sequence

from fsbench.analysis import validity
from fsbench.analysis.rows import TARGET_DIFFERENCE, Row
from fsbench.reports.headline import headline_metrics
from fsbench.reports.html.markup import badge, details, e, head, named, table, tag, varying
from fsbench.reports.tables import dims_of, label_of
from fsbench.system import numbers

OUTLIER = "outlier by modified z-score: shown and counted, never dropped"
WARMUP = "warm-up, not counted"
DETECT = (
    "the smallest difference from another config measured alike (same n, same spread) "
    "that this row could detect: Welch, 95% confidence, 80% power"
)


TARGET = numbers.percent(TARGET_DIFFERENCE)  # the difference the n column is for


def value_text(value: float, unit: str | None) -> str:
    """A repetition's value: bytes in binary units, whole numbers whole, else 4 digits."""
    if unit == "B":
        return numbers.size(value)
    if float(value).is_integer() and abs(value) < 1e15:
        return numbers.count(int(value))
    return numbers.significant(value, 4)


def values_html(row: Row) -> str:
    """The counted values in the order they ran, outliers marked."""
    out = []
    for i, v in enumerate(row.values):
        text = e(value_text(v, row.unit))
        if i in row.outliers:
            text = tag("mark", text, class_="outlier", title=OUTLIER)
        out.append(text)
    return " ".join(out)


def warmup_html(row: Row) -> str:
    if not row.warmup_values:
        return ""
    shown = " ".join(e(value_text(v, row.unit)) for v in row.warmup_values)
    return tag("span", shown, class_="warmup", title=WARMUP)


def detect_text(row: Row) -> str:
    """'±12%': the min_detectable of the row, or why there is none."""
    if row.min_detectable is None:
        return "n < 2" if row.n < 2 else "-"
    return f"±{numbers.share(row.min_detectable)}"


def reps_text(row: Row) -> str:
    if row.reps_for_5pct is None:
        return "-" if row.cv is None else "beyond reach"
    return f"n={row.reps_for_5pct}" + (" ✓" if row.reps_for_5pct <= row.n else "")


def flags_html(row: Row) -> str:
    """Each flag that applies to the metric, with its meaning (validity) and detail."""
    out = []
    for name, detail in row.flags.items():
        if not validity.applies(name, row.unit):
            continue
        meaning = validity.meaning(name)
        out.append(
            tag(
                "div",
                badge(name, "st-warn", meaning)
                + tag("span", e(meaning), class_="quiet small")
                + (tag("div", e(detail), class_="small") if detail else ""),
                class_="flag",
            )
        )
    return "".join(out)


def _metric_row(row: Row, columns: int) -> str:
    """The header of one metric's rows: its name, unit and direction."""
    unit = f" ({row.unit}{f', {row.better} is better' if row.better else ''})" if row.unit else ""
    return tag(
        "tr",
        tag("th", e(f"{row.metric}{unit}"), colspan=str(columns), scope="rowgroup"),
        class_="group",
    )


def repetitions_html(rows: Sequence[Row], table_id: str) -> str:
    """The repetitions table of one workload's headline metrics (cells that ran)."""
    shown = headline_metrics(rows)
    ran = [r for r in rows if r.metric in shown and r.values]
    if not ran:
        return ""
    swept = varying(rows).get((ran[0].chain, ran[0].workload), set())
    names = [
        "config",
        *(["cell"] if swept else []),
        "n",
        "values, in the order they ran",
        "warm-up (not counted)",
        "CV",
        "could detect",
        f"n for ±{TARGET}",
        "flags",
    ]
    header = head(*names, numeric=("n", "CV", "could detect"))
    body = []
    for metric in shown:
        mrows = [r for r in ran if r.metric == metric]
        if mrows:
            body.append(_metric_row(mrows[0], len(names)))
        for r in mrows:
            cells = [tag("th", e(label_of(r)), scope="row")]
            if swept:
                cells.append(tag("td", e(named(dims_of(r), swept))))
            cells += [
                tag("td", e(r.n), class_="num"),
                tag("td", values_html(r), class_="values"),
                tag("td", warmup_html(r), class_="values"),
                tag("td", e("-" if r.cv is None else numbers.percent(abs(r.cv), 1)), class_="num"),
                tag("td", e(detect_text(r)), class_="num", title=DETECT),
                tag("td", e(reps_text(r)), class_="nowrap"),
                tag("td", flags_html(r), class_="flags"),
            ]
            body.append(tag("tr", "".join(cells), class_="flagged" if r.flags else None))
    outliers = sum(len(r.outliers) for r in ran)
    unchecked = sum(1 for r in ran if r.outlier_check.startswith("not checked"))
    not_checked = (
        f" Outliers not checked in {unchecked} of these rows: fewer than 4 values have no "
        "robust centre."
        if unchecked
        else ""
    )
    legend = tag(
        "p",
        e(
            f"Highlighted: {OUTLIER}.{not_checked} "
            f"Warm-up: run before the counted repetitions, {WARMUP}. "
            f"could detect: {DETECT}. n for ±{TARGET}: the repetitions per "
            f"config a {TARGET} difference would take at this CV (✓: this run "
            "had them)."
        ),
        class_="legend",
    )
    summary = f"Every repetition: n, outliers, warm-up, what the noise can detect ({len(ran)} rows"
    if outliers:
        summary += f", {outliers} outlier{'s' if outliers != 1 else ''})"
    elif unchecked == len(ran):
        summary += ", outliers not checked: n < 4)"
    else:
        summary += ")"
    return details(
        e(summary),
        table(header, body, class_="plain reps") + legend,
        open=True,
        class_="reps",
        id=table_id,
    )
