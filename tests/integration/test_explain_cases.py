"""`fsbench explain` where it must fire, on real filesystems (loop image, bpftrace):

- ext4 `data=journal` against `data=ordered` on a streaming write (one 64 MiB file in
  4 KiB writes, then to disk): every data block is written twice, once to the journal and
  once home, so the device takes about twice the bytes per byte asked, and the journal
  logs far more blocks; both are named, in that direction;
- ext4 against btrfs on the fileserver personality (the engine): the CPU profiles'
  top kernel symbols differ, and the functions whose share of the samples differs most
  between the two are btrfs's own, in btrfs only.

Each asserts the mechanism's name and direction, not only that a section exists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import fsbench

pytestmark = pytest.mark.integration


def _explained(tmp: Path, fs: str, workload: str) -> dict[tuple[str, str], dict]:
    plan = tmp / "plan.toml"
    plan.write_text(
        f"""
name = "explain-case"
fs = [{fs}]
workload = [{workload}]
scale = "tiny"
reps = 1
warmup = 0
seed = 5
[target]
image_size = "1G"
workdir = "{tmp / "work"}"
"""
    )
    db = str(tmp / "e.db")
    ran = fsbench("run", str(plan), "--db", db, timeout=900)
    assert ran.returncode == 0, ran.stderr[-3000:]
    said = fsbench("explain", "1", "--db", db, "--format", "json", timeout=1800)
    assert said.returncode == 0, said.stderr[-3000:]
    return {tuple(e["configs"]): e for e in json.loads(said.stdout)["explanation"]}


def _named(e: dict) -> dict[str, dict]:
    return {m["mechanism"]: m for m in e["mechanisms"] if m["verdict"] == "different"}


@pytest.mark.alone  # intervals of n = 3 on a loop image whose host disk the others share
def test_data_journal_writes_twice_the_bytes_and_names_the_journal(tmp_path: Path) -> None:
    found = _explained(
        tmp_path,
        '{type = "ext4", mount = "data=ordered", label = "ordered"}, '
        '{type = "ext4", mount = "data=journal", label = "journal"}',
        '{name = "alloc", params = {size = "64M", method = "write-4k"}}',
    )
    named = _named(found[("ordered", "journal")])
    assert "dev_bytes_per_asked_byte" in named, sorted(named)
    assert 1.6 < named["dev_bytes_per_asked_byte"]["ratio"] < 2.5  # about twice
    assert named["dev_write_bytes"]["ratio"] > 1.6
    assert named["journal_blocks"]["ratio"] > 5  # ordered logs metadata only


@pytest.mark.alone
def test_fileserver_btrfs_against_ext4_names_btrfs_in_its_profile(tmp_path: Path) -> None:
    found = _explained(
        tmp_path,
        '{type = "ext4"}, {type = "btrfs"}',
        '{name = "fileserver", params = {threads = 2, duration = 3, warmup = 0}}',
    )
    (pair,) = found.values()
    assert pair["configs"] == ["ext4", "btrfs"]
    symbols = {c: [s["stack"] for s in pair["top"][c]["profile"]] for c in ("ext4", "btrfs")}
    assert symbols["ext4"] != symbols["btrfs"], symbols
    # The leaf symbols are memcpy and spin locks on both; the functions whose share of
    # the samples (with what they called) differs most name btrfs's code, in btrfs.
    diff = {d["function"]: d["shares"] for d in pair["profile_diff"]}
    btrfs = {f: shares for f, shares in diff.items() if f.startswith("btrfs_")}
    assert btrfs and all(b > 0.05 and e == 0 for e, b in btrfs.values()), diff
    assert _named(pair), "at least one mechanism is decided between ext4 and btrfs"
