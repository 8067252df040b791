"""The pieces of `fsbench bisect` that need no kernel build: a built-in kernel found
without a modules directory, its version read from the bzImage, the empty initrd, the
config fragment, the confounders between two configs, the report's text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fsbench.cli import report as cli_report
from fsbench.reports import bisect as report
from fsbench.reports import export, formats
from fsbench.reports.charts.points import points_chart
from fsbench.store.records import RunRecord
from fsbench.store.results import Store
from fsbench.system.errors import FsbenchError
from fsbench.system.hostkeys import Host
from fsbench.vm import images as builtin
from fsbench.vm import kbuild, kconfigs, kernels
from fsbench.vm.bisect import BisectFacts
from tests.unit.test_bisect_driver import git


def fake_bzimage(path: Path, version: str) -> None:
    head = bytearray(0x1000)
    head[0x202:0x206] = b"HdrS"
    head[0x20E:0x210] = (0x400).to_bytes(2, "little")
    text = f"{version} (fsbench@fsbench) #1 SMP".encode()
    head[0x600 : 0x600 + len(text)] = text
    path.write_bytes(bytes(head))


def test_builtin_kernel_needs_no_modules(tmp_path: Path) -> None:
    bz = tmp_path / "bzImage"
    fake_bzimage(bz, "6.1.158-g0123456789ab")
    with pytest.raises(FsbenchError, match="modules_install"):
        kernels.path_kernel(bz)  # no .config beside it: modules cannot be ruled out
    (tmp_path / ".config").write_text("CONFIG_EXT4_FS=y\n# CONFIG_MODULES is not set\n")
    k = kernels.path_kernel(bz)
    assert k.builtin and k.modules is None
    assert k.version == "6.1.158-g0123456789ab"
    assert kernels.Kernel.from_dict(k.as_dict()) == k


def test_bzimage_version_refuses_other_files(tmp_path: Path) -> None:
    (tmp_path / "x").write_bytes(b"MZ" + b"\0" * 100)
    assert kernels.bzimage_version(tmp_path / "x") is None


def test_empty_initrd_is_a_cpio_trailer() -> None:
    data = builtin.empty_initrd()
    assert data.startswith(b"070701") and b"TRAILER!!!" in data
    assert len(data) % 512 == 0


def test_fragment_builds_everything_in() -> None:
    text = kconfigs.DEFAULT.fragment_text()
    for option in ("CONFIG_EXT4_FS=y", "CONFIG_XFS_FS=y", "CONFIG_BTRFS_FS=y"):
        assert option in text
    assert "CONFIG_DM_LOG_WRITES=y" in text and "CONFIG_9P_FS=y" in text
    assert "# CONFIG_MODULES is not set" in text
    assert kconfigs.DEFAULT.merged == ("kvm_guest.config",)


def test_the_minimal_config_keeps_the_guest_and_ext4_only() -> None:
    """ext4 and the guest's devices built in, no other filesystem, no IPv6, no input."""
    text = kconfigs.MINIMAL.fragment_text()
    for option in ("EXT4_FS", "9P_FS", "VIRTIO_BLK", "SERIAL_8250_CONSOLE", "ACPI"):
        assert f"CONFIG_{option}=y" in text
    for option in ("IPV6", "INPUT", "VT"):
        assert f"# CONFIG_{option} is not set" in text
    assert "# CONFIG_MODULES is not set" in text
    assert "XFS" not in text and "BTRFS" not in text and kconfigs.MINIMAL.merged == ()
    # A tree whose Kconfig has no such option (an older kernel) is told, not refused.
    made = {k: v for k, v in kconfigs.MINIMAL.options.items() if k != "CONFIG_IO_URING"}
    assert kconfigs.MINIMAL.missing(made) == ["CONFIG_IO_URING"]
    # Builds of the two configs never share a cache directory.
    assert kconfigs.MINIMAL.key_text() != kconfigs.DEFAULT.key_text()


def test_config_names_and_paths() -> None:
    assert kconfigs.choose(None) is kconfigs.DEFAULT
    assert kconfigs.choose("minimal") is kconfigs.MINIMAL
    assert kconfigs.choose("tinyconfig+fsbench") is kconfigs.DEFAULT  # stored before names
    assert kconfigs.choose("my.config") == Path("my.config")
    for config in (kconfigs.DEFAULT, kconfigs.MINIMAL, Path("my.config")):
        assert kconfigs.choose(kconfigs.stored(config)) == config


def test_confounders(tmp_path: Path) -> None:
    a = tmp_path / "a"
    b = tmp_path / "b"
    a.write_text(
        "CONFIG_HZ=250\nCONFIG_PREEMPT_NONE=y\n# CONFIG_XFS_DEBUG is not set\nCONFIG_X=y\n"
    )
    b.write_text("CONFIG_HZ=1000\nCONFIG_PREEMPT_NONE=y\nCONFIG_XFS_DEBUG=y\nCONFIG_X=m\n")
    found = kbuild.confounders(kbuild.read_config(a), kbuild.read_config(b))
    assert found == ["CONFIG_HZ: 250 -> 1000", "CONFIG_XFS_DEBUG: n -> y"]


def test_report_text() -> None:
    steps = [
        {
            "commit": "a" * 40,
            "role": "good",
            "verdict": "",
            "gate": None,
            "build_seconds": 260.0,
            "measure_seconds": 50.0,
            "error": "",
        },
        {
            "commit": "c" * 40,
            "role": "step",
            "verdict": "skip",
            "gate": None,
            "build_seconds": 9.0,
            "measure_seconds": 0.0,
            "error": "fsync.c:140: error: x",
        },
    ]
    text = export.write(report.document(_bisect_run(steps), []), formats.TABLE)
    assert "first bad commit: dddddddddddd ext4: slower (2024-01-06)" in text
    assert "skip" in text and "fsync.c:140: error" in text
    assert "git bisect start" in text and "total 600 s" in text


def _facts(steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "linux": "/src/linux",
        "good": "a" * 40,
        "bad": "b" * 40,
        "metric": "files_per_s",
        "max_reps": 4,
        "config": "tinyconfig+fsbench",
        "build_dir": "/var/tmp/kb",
        "unit": "files/s",
        "first_bad": {"commit": "d" * 40, "subject": "ext4: slower", "date": "2024-01-06"},
        "steps": steps,
        "log": "git bisect start\n",
        "seconds": 600.0,
    }


def _bisect_run(steps: list[dict[str, Any]]) -> RunRecord:
    return RunRecord(
        id=1,
        name="bisect",
        status="finished",
        created_at="",
        finished_at=None,
        fsbench_version="",
        argv=[],
        plan={},
        overrides={},
        schedule=[],
        host=Host.read({}),
        target={"accel": "tcg"},
        kind="bisect",
        facts=_facts(steps),
    )


def test_fsbench_report_writes_a_stored_bisection_in_every_format(tmp_path: Path) -> None:
    """The bisect run kind's report through `fsbench report` (the CLI's dispatch by kind):
    the steps and the first bad commit in a table, markdown, CSV, JSON and HTML."""
    step = {"commit": "c" * 40, "role": "step", "verdict": "bad", "gate": None,
            "build_seconds": 9.0, "measure_seconds": 31.0, "seqs": []}  # fmt: skip
    store = Store(tmp_path / "r.db")
    run_id = store.create_run(
        name="bisect", fsbench_version="0", argv=[], plan={}, overrides={}, schedule=[],
        host={}, target={"accel": "tcg"}, kind="bisect", facts=_facts([step]),
    )  # fmt: skip
    BisectFacts.model_validate(store.get_run(run_id).facts)  # the kind's own model reads it
    for fmt in formats.REPORT:
        out = tmp_path / f"report.{fmt}"
        cli_report.report(run_id, fmt, out, False, None, str(tmp_path / "r.db"))
        written = out.read_text()
        assert "c" * 12 in written, fmt
        if fmt == formats.JSON:
            doc = json.loads(written)
            assert doc["first_bad"]["commit"] == "d" * 40 and doc["steps"][0]["verdict"] == "bad"
        elif fmt == formats.CSV:
            assert written.splitlines()[1].startswith("c" * 40 + ",step,0,")
        else:
            assert "dddddddddddd ext4: slower" in written, fmt
            assert "budget: up to 4 repetitions per commit" in written, fmt
    assert "<table" in (tmp_path / "report.html").read_text()
    assert "| commit | role |" in (tmp_path / "report.md").read_text()


def test_chart_draws_the_commits_in_history_order(tmp_path: Path) -> None:
    data = {
        "metric": "seconds",
        "unit": "s",
        "order": ["a" * 40, "c" * 40, "b" * 40],
        "steps": [
            {"commit": "a" * 40, "role": "good", "n": 4, "mean": 1.0, "ci95": [0.9, 1.1]},
            {"commit": "b" * 40, "role": "bad", "n": 4, "mean": 7.0, "ci95": [6.8, 7.2]},
            {"commit": "c" * 40, "role": "step", "n": 3, "mean": 7.1, "ci95": [6.9, 7.3],
             "verdict": "bad"},
        ],
    }  # fmt: skip
    chart = report.chart(data)
    assert [p.label for p in chart.points] == ["c" * 7]  # the step, at its place in history
    assert [p.x for p in chart.points] == [1] and [b.label for b in chart.bands] == [
        "good (95% CI)",
        "bad (95% CI)",
    ]
    drawn = points_chart(chart, tmp_path).path("svg")
    assert drawn is not None
    svg = drawn.read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg


def _commit(tree: Path, path: str, text: str) -> str:
    (tree / path).parent.mkdir(parents=True, exist_ok=True)
    (tree / path).write_text(text)
    git(tree, "add", path)
    git(tree, "commit", "-q", "-m", path)
    return git(tree, "rev-parse", "HEAD").strip()


def test_a_commit_that_changes_only_unbuilt_files_runs_the_kernel_already_built(
    tmp_path: Path,
) -> None:
    """Documentation/ only: the kept kernel, linked, no make. Code: a build (here the
    tree's make fails at once, so the attempt shows). A damaged kept kernel is not used."""
    tree = tmp_path / "linux"
    tree.mkdir()
    git(tree, "init", "-q", "-b", "main")
    (tree / "Kconfig").write_text("")
    base = _commit(tree, "Makefile", "olddefconfig:\n\tfalse\n")
    doc = _commit(tree, "Documentation/fs.rst", "more\n")
    doc_too = _commit(tree, "MAINTAINERS", "someone\n")
    code = _commit(tree, "fs/ext4/fsync.c", "int x;\n")
    builder = kbuild.KernelBuilder(tree, cache=tmp_path / "kb")
    builder.out.mkdir(parents=True)
    builder.base_config.write_text("CONFIG_EXT4_FS=y\n")
    kept = builder.dir / "kernels" / base
    kept.mkdir(parents=True)
    fake_bzimage(kept / "bzImage", "6.1.0-g" + base[:12])
    (kept / "version").write_text("6.1.0-g" + base[:12])
    (kept / ".config").write_text("CONFIG_EXT4_FS=y\n")

    for commit in (doc, doc_too, doc):  # the second time from its own kept link
        built = builder.build(commit)
        assert built.ok and built.seconds == 0.0, built
        assert built.same_as in (base, doc) and built.version == "6.1.0-g" + base[:12]
        assert (builder.dir / "kernels" / commit / "bzImage").stat().st_ino == (
            kept / "bzImage"
        ).stat().st_ino
    assert (builder.dir / "kernels" / doc / "same_as").read_text() == base

    built = builder.build(code)  # fsync.c changed: built, not borrowed
    assert not built.ok and built.same_as == "" and built.error

    (builder.dir / "kernels" / doc).rename(tmp_path / "gone")
    (builder.dir / "kernels" / doc_too).rename(tmp_path / "gone-too")
    (kept / "version").write_text("6.1.0-other")  # the header no longer matches
    assert not builder.build(doc).ok  # so a build is attempted, and this tree's make fails
