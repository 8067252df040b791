"""The HTML report of a real run, as a reader gets it: made by the CLI from a real tiny
alloc run, then opened in Debian's headless Chromium (`make install` installs it): every
chart image loads, a hostile config label stays text, and the page logs no error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser import CHROMIUM, render
from tests.helpers import fsbench

pytestmark = pytest.mark.integration

# A config label is the user's text: the page must show it, never run it.
HOSTILE = "<script>alert(1)</script>"


def test_html_report_of_a_real_run(workdir: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root for loop devices")
    db = workdir / "results.db"
    plan = workdir / "plan.toml"
    plan.write_text(
        'scale = "tiny"\nreps = 2\n'
        f'[target]\nimage_size = "1G"\nworkdir = "{workdir / "work"}"\n'
        f"[[fs]]\ntype = \"ext4\"\nlabel = '{HOSTILE}'\n"
        '[[fs]]\ntype = "xfs"\n'
        '[[workload]]\nname = "alloc"\n[workload.params]\n'
        'method = ["fallocate", "write-4k"]\nsize = "16M"\n'
    )
    res = fsbench("run", str(plan), "--db", str(db))
    assert res.returncode == 0, res.stderr
    page = workdir / "report.html"
    charts = workdir / "charts"
    res = fsbench(
        "report", "--db", str(db), "--format", "html", "-o", str(page), "--charts", str(charts)
    )
    assert res.returncode == 0, res.stderr
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    for needle in ("Machine, target and plan", "alloc: seconds", "Raw values", "xfs"):
        assert needle in text
    assert "data:image/svg+xml;base64," in text
    assert "<script" not in text.lower()
    assert sorted(p.suffix for p in charts.iterdir()).count(".png") >= 4  # layout + 3 bars

    assert Path(CHROMIUM).exists(), f"no {CHROMIUM}: `make install` installs Debian's chromium"
    shown = render(page.as_uri())
    assert len(shown.images) >= 4, shown.images
    broken = [img for img in shown.images if not img["loaded"]]
    assert broken == [], broken
    assert shown.scripts == 0 and shown.dialogs == []
    assert HOSTILE in shown.text  # the label, as text
    assert "Machine, target and plan" in shown.text
    assert shown.console == [], shown.console
