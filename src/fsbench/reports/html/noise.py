"""Calibration on the page: for a calibration run (`fsbench calibrate`), what this machine
resolves per workload metric; for any other run, a warning near the top where its
configs differ by less than the calibration of its host and kernel says it resolves."""

from __future__ import annotations

import json
from collections.abc import Sequence

from fsbench.analysis import validity
from fsbench.analysis.aa_check import DIFFERENCES, Noise
from fsbench.analysis.rows import Row
from fsbench.reports import noise_notes as calibrated
from fsbench.reports.aa_screen import resolves
from fsbench.reports.html.markup import badge, e, head, table, tag
from fsbench.system import numbers


def _workload(item: Noise, swept: bool) -> str:
    params = ", ".join(f"{k}={numbers.setting(v)}" for k, v in json.loads(item.params).items())
    return f"{item.workload} {params}" if swept and params else item.workload


def calibration_html(noise: Sequence[Noise]) -> str:
    """Per workload metric of an A/A run: its CV, the gap between the identical configs,
    any order effect, the difference it resolves at its n and the reps 5/10/25% need."""
    if not noise:
        return tag(
            "p",
            "No workload metric had two configs with repetitions to compare: nothing to say "
            "about this machine's noise.",
            class_="quiet",
        )
    swept = {
        i.workload
        for i in noise
        if any(j.workload == i.workload and j.params != i.params for j in noise)
    }
    body = []
    for item in noise:
        resolvable = item.resolvable()
        gap = e(numbers.percent(item.mean_gap, 1))
        if item.false_winner:
            gap += " " + badge("winner!", "st-failed", item.false_winner)
        order = badge("effect", "st-warn", item.order_effect) if item.order_effect else "none"
        cells = [
            tag("th", e(_workload(item, item.workload in swept)), scope="row"),
            tag(
                "td",
                e(item.metric) + (tag("span", e(item.unit), class_="unit") if item.unit else ""),
            ),
            tag("td", e(numbers.percent(item.cv, 1)), class_="num"),
            tag("td", gap, class_="num"),
            tag("td", order),
            tag(
                "td",
                e("-" if resolvable is None else f"±{numbers.percent(resolvable)} (n={item.n})"),
                class_="num",
            ),
        ]
        for d in DIFFERENCES:
            answer = resolves(item, d, item.n)
            needed = item.reps_for(d)
            title = (
                f"n={needed} reps per config detect {numbers.percent(d)}"
                if needed
                else "beyond reach"
            )
            cells.append(
                tag("td", e(answer), class_="num yes" if answer == "yes" else "num", title=title)
            )
        body.append(tag("tr", "".join(cells)))
    header = head(
        "workload",
        "metric",
        "CV",
        "A vs B",
        "order",
        "resolves at n",
        *(f"{numbers.percent(d)}?" for d in DIFFERENCES),
        numeric=("CV", "A vs B", "resolves at n", *(f"{numbers.percent(d)}?" for d in DIFFERENCES)),
    )
    legend = tag(
        "p",
        e(
            "One config measured as two (A and B), with the order, warm-up and statistics of "
            "any run. CV: the spread of one config's repetitions. A vs B: how far apart the "
            "identical configs came out (a winner here is a false one). resolves: the "
            "smallest difference between two configs that this many repetitions detect here "
            "(Welch, 95% confidence, 80% power). 5%?, 10%?, 25%?: yes, or the repetitions "
            "per config it would take. Later reports of this host and kernel warn where "
            "configs differ by less."
        ),
        class_="legend",
    )
    return table(header, body, class_="plain calibration") + legend


def warning_html(rows: Sequence[Row], calibration_run: int | None) -> str:
    """A banner naming the calibration run, where rows differ by less than it resolves;
    a quiet line when every difference is above it; nothing without a calibration."""
    if calibration_run is None:
        return ""
    found = calibrated.below(rows)
    if not found:
        return tag("p", e(calibrated.summary(rows, calibration_run)), class_="quiet calibrated")
    n = len(found)
    return tag(
        "div",
        tag(
            "p",
            tag("strong", e(f"Below calibration run {calibration_run}. "))
            + e(
                f"In {n} comparison{'s' if n != 1 else ''} of this run, "
                f"{validity.meaning(calibrated.BELOW)}. Read "
                f"{'their verdicts' if n != 1 else 'its verdict'} as no difference, or repeat "
                "with more repetitions."
            ),
        )
        + tag("ul", "".join(tag("li", e(f"{what}: {detail}")) for what, detail in found.items())),
        class_="warning",
        role="note",
        id="calibration-warning",
    )
