"""The safety section: per config, speed against the baseline beside what it lost when
the power went; then every kept failing crash case, with what replays it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from fsbench.analysis.crash_evidence import CRASH
from fsbench.analysis.decisions import Decision
from fsbench.analysis.rows import Row
from fsbench.analysis.verdicts import Key
from fsbench.reports.html.markup import badge, details, e, head, pre, table, tag
from fsbench.reports.safety import baseline, safety_lines
from fsbench.store import trialfacts
from fsbench.store.records import TrialRecord

SECTION_ID = "safety"
TITLE = "Safety beside speed"


def _lines(texts: Sequence[str], empty: str) -> str:
    return "".join(tag("div", e(t)) for t in texts) or tag("span", e(empty), class_="quiet")


def _cache_summary(cache: dict[str, Any]) -> str:
    """What the crash's volatile-cache state lost, for a kept case's one-line summary."""
    parts = [f"{cache[k]} {k}" for k in ("lost", "empty", "mixed") if cache.get(k)]
    parts += ["mount failed"] * bool(cache.get("mount_error"))
    parts += ["fsck errors"] * bool(cache.get("fsck_error"))
    return f"; volatile-cache state: {', '.join(parts)}" if parts else ""


def _cases(trials: Sequence[TrialRecord]) -> str:
    out = []
    for t in trials:
        crash = trialfacts.crash(t.provenance)
        for case in crash.get("failing", []):
            body = tag("p", tag("code", e(case.get("replay", ""))))
            for where, damage in (
                ("on the disk", case.get("damage")),
                ("in the volatile-cache state", case.get("cache_damage")),
            ):
                if damage:
                    body += tag("p", e(f"Damage {where}:")) + pre(
                        "\n".join(f"{d['kind']:8} {d['path']}  {d['detail']}" for d in damage)
                    )
            for when in ("fsck_before", "fsck_after", "cache_fsck_after"):
                if case.get(when):
                    said = f"{when.replace('_', ' ')} (exit {case[when]['exit']})"
                    body += details(e(said), pre(case[when]["output"]))
            body += details(
                e(
                    f"acknowledgements (last {len(case.get('acks_last', []))} of "
                    f"{case.get('acks_total', 0)})"
                ),
                pre("\n".join(json.dumps(a) for a in case.get("acks_last", []))),
            )
            summary = (
                f"{t.config} · {crash.get('pattern')} · rep {t.rep} crash {case['index'] + 1}: "
                f"seed {case['seed']}, power cut {case['cut_after_s']} s in; "
                f"{case['lost']} lost, {case['empty']} empty, {case['mixed']} mixed"
                + (", fsck errors" if case.get("fsck_error") else "")
                + _cache_summary(case.get("cache") or {})
            )
            out.append(details(e(summary), body))
    return "".join(out)


def safety_section(
    rows: Sequence[Row],
    trials: Sequence[TrialRecord],
    decisions: Mapping[Key, Decision] | None = None,
) -> str:
    """The section's inner markup, or "" when the run has no crash results."""
    lines = safety_lines(rows, decisions)
    if not lines:
        return ""
    body = [
        tag(
            "tr",
            tag("th", e(s.config), scope="row")
            + tag("td", _lines(s.speed, "baseline" if s.baseline else "no speed results"))
            + tag("td", _lines(s.crash, "no crash results"))
            + tag("td", badge("lost data", "st-warn") if s.damaged else badge("intact", "best")),
        )
        for s in lines
    ]
    about = tag(
        "p",
        e(
            f"Speed against {baseline(rows)} (the run's first config), each workload's "
            "headline metric; crash results are counts over each config's power cuts "
            "(the crash workload). A case that lost something is kept below with the "
            "command that replays it."
        ),
        class_="about",
    )
    crash_trials = [t for t in trials if t.workload == CRASH and not t.warmup]
    caches = dict.fromkeys(trialfacts.volatile_cache(t.provenance) for t in crash_trials)
    about += tag(
        "p",
        e("Volatile write cache: " + "; ".join(c for c in caches if c)),
        class_="about",
    )
    cases = _cases(crash_trials)
    kept = tag("h3", "Kept crash cases") + cases if cases else ""
    return about + table(head("config", "speed", "when the power went", ""), body) + kept
