"""The registry of trial provenance keys: every key written is known, with its type;
the store refuses the rest when a trial is written; old stores hold only known keys."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fsbench.store import trialfacts
from fsbench.store.records import TrialRecord
from fsbench.store.results import Store
from fsbench.system.errors import FsbenchError

DATA = Path(__file__).resolve().parents[1] / "data" / "stores"


def _trial(provenance: dict[str, object]) -> TrialRecord:
    return TrialRecord(
        seq=0, rep=1, cell_key="k", config="ext4", fs="ext4", mkfs_options=[],
        mount_options="", workload="alloc", params={}, status="ok", provenance=provenance,
    )  # fmt: skip


def test_every_key_says_what_it_is() -> None:
    for key in trialfacts.KEYS.values():
        assert key.meaning and key.writer and key.type, key


def test_the_store_refuses_an_unknown_or_retyped_key(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    run_id = store.create_run(
        name="t", fsbench_version="0", argv=[], plan={}, overrides={}, schedule=[],
        host={}, target={},
    )  # fmt: skip
    store.record_trials(run_id, [_trial({"flags": {"short": "0.1 s"}, "headline": ["seconds"]})])
    with pytest.raises(FsbenchError, match="'flagz' is not in fsbench.store.trialfacts"):
        store.record_trials(run_id, [_trial({"flagz": {}})])
    with pytest.raises(FsbenchError, match="'headline' is str, not list"):
        store.record_trials(run_id, [_trial({"headline": "seconds"})])
    assert len(store.get_trials(run_id)) == 1  # nothing of the refused trials was written
    store.close()


@pytest.mark.parametrize("name", ["v5.db", "v6.db"])
def test_stores_written_before_the_registry_hold_only_its_keys(name: str, tmp_path: Path) -> None:
    path = tmp_path / name
    shutil.copyfile(DATA / name, path)
    store = Store(path)
    seen = 0
    for run in store.list_runs():
        for trial in store.get_trials(run.id):
            trialfacts.check(trial.provenance)
            seen += 1
    assert seen > 0
    store.close()


def test_accessors_read_what_writers_wrote() -> None:
    prov = {
        "flags": {"short": "x"},
        "headline": ["seconds"],
        "over": {"n": 5, "of": "crashes"},
        "mkfs": {"argv": ["mkfs.ext4", "/dev/loop0"]},
        "mount": {"effective": "rw,relatime"},
    }
    trialfacts.check(prov)
    assert trialfacts.flags(prov) == {"short": "x"} and trialfacts.headline(prov) == ["seconds"]
    assert trialfacts.over(prov) == {"n": 5, "of": "crashes"}
    assert trialfacts.mkfs_argv(prov) == ["mkfs.ext4", "/dev/loop0"]
    assert trialfacts.mount_effective(prov) == "rw,relatime"
    assert trialfacts.headline({}) is None and trialfacts.flags({}) == {}
