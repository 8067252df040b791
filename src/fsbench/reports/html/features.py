"""The `fsbench features` table of the run's filesystems, as the run stored it when it
ran (RunRecord.features): never read again from the machine that renders the page."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

from fsbench.reports.features_table import FEATURES_CSS, features_table_html
from fsbench.reports.html.markup import e, tag
from fsbench.store.features import FeatureTable
from fsbench.store.records import RunRecord, TrialRecord

SECTION_ID = "features"


def features_section(run: RunRecord, trials: Sequence[TrialRecord]) -> str:
    """The section, or "" when the run stored no table (or one for none of its
    filesystems, or one this fsbench cannot read)."""
    if not run.features:
        return ""
    try:
        table = FeatureTable.model_validate(run.features)
    except ValidationError:  # a damaged or foreign table must not cost the whole report
        return ""
    mine = [fs for fs in dict.fromkeys(t.fs for t in trials) if fs in table.filesystems]
    if not mine:
        return ""
    kernel = table.kernel or run.host.shown("kernel") or "?"
    return tag(
        "section",
        tag("h2", "Filesystem features", id=SECTION_ID)
        + tag(
            "p",
            e(
                f"Measured by `fsbench features` on kernel {kernel}, stored with the run: what "
                "these filesystems do there, each cell with its evidence."
            ),
            class_="about",
        )
        + f"<style>{FEATURES_CSS}</style>"
        + features_table_html(table.only(mine)),
    )
