"""bench/results_file.py: what one invocation of a bench records, per trial conditions,
and the merge of several invocations into one file with each part's provenance."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import results_file  # noqa: E402


def test_one_invocation_writes_one_file_with_its_provenance(tmp_path: Path) -> None:
    path = results_file.save("demo", {"x": 1}, path=tmp_path / "demo.json", workloads=["fio"])
    doc = json.loads(path.read_text())
    assert doc["bench"] == "demo" and doc["invocations"] == 1
    assert doc["date"] and doc["finished"] and isinstance(doc["argv"], list)
    assert set(doc["load_average"]) == {"at_start", "at_end"}
    assert len(doc["fsbench"]["commit"]) == 40 and isinstance(doc["fsbench"]["dirty"], bool)
    assert "fio" in doc["tools"]  # the version, or None where fio is missing
    assert doc["machine"]["cpus"] and doc["results"] == {"x": 1}


def test_a_trial_keeps_its_start_and_the_load_before_and_after_it() -> None:
    with results_file.trial_conditions() as conditions:
        assert "load_after" not in conditions
    assert conditions["started"] and len(conditions["load_before"]) == 3
    assert len(conditions["load_after"]) == 3


def _part(tmp_path: Path, name: str, argv: list[str], trials: list[int]) -> Path:
    doc: dict[str, Any] = {
        "bench": "demo",
        "invocations": 1,
        "date": f"2026-11-2{len(trials)}T00:00:00+00:00",
        "argv": argv,
        "machine": {"cpus": 2},
        "load_average": {"at_start": [1.0, 1.0, 1.0], "at_end": [2.0, 2.0, 2.0]},
        "fsbench": {"commit": "a" * 40, "dirty": False},
        "results": {"params": {"n": 2}, "trials": trials},
    }
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_merge_keeps_every_part_and_concatenates_the_trials(tmp_path: Path) -> None:
    a = _part(tmp_path, "a.json", ["demo.py", "--rounds", "1"], [1])
    b = _part(tmp_path, "b.json", ["demo.py", "--resume"], [2, 3])
    out = tmp_path / "ab.json"
    assert results_file.main(["--merge", str(a), str(b), "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["invocations"] == 2
    assert [p["argv"] for p in doc["parts"]] == [
        ["demo.py", "--rounds", "1"],
        ["demo.py", "--resume"],
    ]
    assert [p["file"] for p in doc["parts"]] == ["a.json", "b.json"]
    assert doc["parts"][1]["load_average"]["at_end"] == [2.0, 2.0, 2.0]
    assert doc["results"] == {"params": {"n": 2}, "trials": [1, 2, 3]}
    assert doc["date"] == "2026-11-21T00:00:00+00:00"  # the first part's
    assert doc["merged"]["argv"][:2] == ["bench/results_file.py", "--merge"]
    # a merged file merges again: its parts stay parts
    c = _part(tmp_path, "c.json", ["demo.py", "--resume"], [4, 5, 6])
    again = results_file.merge([out, c])
    assert again["invocations"] == 3 and again["results"]["trials"] == [1, 2, 3, 4, 5, 6]


def test_merge_refuses_parts_that_disagree(tmp_path: Path) -> None:
    a = _part(tmp_path, "a.json", ["demo.py"], [1])
    doc = json.loads(a.read_text())
    doc["results"]["params"] = {"n": 3}
    b = tmp_path / "b.json"
    b.write_text(json.dumps(doc))
    with pytest.raises(SystemExit, match="params"):
        results_file.merge([a, b])


def test_a_resumed_run_adds_a_part() -> None:
    first: dict[str, Any] = {
        "bench": "demo",
        "invocations": 1,
        "date": "d1",
        "argv": ["demo.py"],
        "machine": {},
        "trials": [1],
    }
    second = {"bench": "demo", "invocations": 1, "date": "d2", "argv": ["demo.py", "--resume"]}
    doc = results_file.add_part(first, second)
    assert doc["invocations"] == 2 and "argv" not in doc
    assert [p["argv"] for p in doc["parts"]] == [["demo.py"], ["demo.py", "--resume"]]
    assert doc["trials"] == [1]
