"""bench/results/: every file says which invocation(s) wrote it, the superseded ones are
in history/ saying what replaced them, and README.md indexes them all with the claims
that cite them (bench/results_index.py)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import figures  # noqa: E402
import results_index  # noqa: E402

RESULTS = ROOT / "bench" / "results"
HISTORY = RESULTS / "history"


def _docs(where: Path) -> dict[str, Any]:
    return {p.name: json.loads(p.read_text()) for p in sorted(where.glob("*.json"))}


def _cited() -> set[str]:
    return {
        name
        for path in figures.documents()
        for p in figures.passages(path.read_text(), path.name)
        for name in p.files.values()
    }


def test_the_index_is_the_one_the_files_and_claims_make() -> None:
    index = (RESULTS / "README.md").read_text()
    assert index == results_index.render(), "python3 bench/results_index.py"
    listed = set(re.findall(r"`([\w.-]+\.json)`", index))
    files = set(_docs(RESULTS)) | set(_docs(HISTORY))
    assert files <= listed  # every file is listed
    assert listed <= files  # every listed file exists


def test_every_claim_cites_a_current_file_and_every_key_resolves() -> None:
    cited = _cited()
    assert cited <= set(_docs(RESULTS)), cited - set(_docs(RESULTS))
    for claim in results_index.claims():
        assert claim["figures"] > 0, claim
    assert figures.check_all() == []


def test_every_result_file_says_which_invocations_wrote_it() -> None:
    for name, doc in _docs(RESULTS).items():
        assert doc.get("date") and doc.get("machine"), name
        n = doc.get("invocations")
        if n == 1:
            assert "parts" not in doc, name
            assert doc.get("argv") or doc.get("argv_as_described"), name
        else:
            assert isinstance(n, int) and n > 1, f"{name}: invocations {n!r}"
            parts = doc.get("parts")
            assert isinstance(parts, list) and len(parts) == n, name
            for part in parts:
                assert part.get("date"), name
                assert part.get("argv") or part.get("argv_as_described"), name


def test_superseded_files_are_in_history_and_say_what_replaced_them() -> None:
    current, old = _docs(RESULTS), _docs(HISTORY)
    assert old, "history/ holds the superseded files"
    cited = _cited()
    for name, doc in old.items():
        by = doc.get("superseded", {}).get("by")
        assert by in current or by in old, f"{name}: superseded by {by!r}"
        assert doc["superseded"].get("why"), name
        assert name not in cited and name not in current, name
    # a file here that no claim cites is its bench's only one (else it is superseded)
    benches: dict[str, list[str]] = {}
    for name in current:
        benches.setdefault(name.split("-")[0].removesuffix(".json"), []).append(name)
    for name in set(current) - cited:
        bench = name.split("-")[0].removesuffix(".json")
        assert benches[bench] == [name], f"{name}: uncited beside {benches[bench]}"
