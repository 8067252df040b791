"""The search space of `fsbench tune`: braces in --fs values and the [search] table."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from fsbench.cli import planflags
from fsbench.execute import schedule
from fsbench.execute.race.driver import split
from fsbench.plan import model as planning
from fsbench.plan import presets
from fsbench.plan.model import load_plan_file, parse_fs_spec
from fsbench.plan.space import (
    describe,
    expand_braces,
    expand_fs_spec,
    expand_space,
    search_configs,
)
from fsbench.system.errors import FsbenchError


def specs(text: str) -> list[str]:
    return [c.spec for c in expand_fs_spec(text)]


def test_the_issues_examples() -> None:
    assert specs("ext4:mount=data={ordered,writeback},commit={5,30,60}") == [
        "ext4:mount=data=ordered,commit=5",
        "ext4:mount=data=ordered,commit=30",
        "ext4:mount=data=ordered,commit=60",
        "ext4:mount=data=writeback,commit=5",
        "ext4:mount=data=writeback,commit=30",
        "ext4:mount=data=writeback,commit=60",
    ]
    assert specs("xfs:mkfs=-b size={4k,16k}") == ["xfs:mkfs=-b size=4k", "xfs:mkfs=-b size=16k"]


def test_expanded_strings_are_valid_fs_values() -> None:
    for config in expand_fs_spec("ext4:mkfs=-I {128,256}:mount=data={ordered,writeback}"):
        assert parse_fs_spec(config.spec) == [config]
    config = expand_fs_spec("ext4:mkfs=-I {256}:mount=data=writeback")[0]
    assert config.mkfs == ("-I", "256")
    assert config.mount == "data=writeback"


def test_braces_nest_and_multiply() -> None:
    assert expand_braces("{a,b{1,2}}x") == ["ax", "b1x", "b2x"]
    assert expand_braces("{a,b}{1,2}") == ["a1", "a2", "b1", "b2"]
    assert expand_braces("{a,{b,c}}") == ["a", "b", "c"]
    assert expand_braces("no braces, commas kept") == ["no braces, commas kept"]
    assert len(expand_fs_spec("{ext4,xfs}:mount={noatime,relatime}")) == 4


def test_an_empty_alternative_leaves_the_option_out() -> None:
    assert specs("ext4:mount=data=ordered,{,nodelalloc}") == [
        "ext4:mount=data=ordered",
        "ext4:mount=data=ordered,nodelalloc",
    ]
    assert specs("ext4:mount={,noatime}") == ["ext4", "ext4:mount=noatime"]


def test_a_value_without_braces_is_what_parse_fs_spec_gives() -> None:
    assert expand_fs_spec("ext4,xfs") == parse_fs_spec("ext4,xfs")
    assert expand_fs_spec("ext4:mkfs=-I 256:mount=data=writeback") == parse_fs_spec(
        "ext4:mkfs=-I 256:mount=data=writeback"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ext4:mount=data={ordered,writeback", "column 17 is never closed"),
        ("ext4:mount=data=ordered}", "column 24 closes no '{'"),
        ("ext4:mount=data={}", "empty braces '{}' at column 17"),
        ("ext4:mount={a,{b}", "column 12 is never closed"),
        ("{ext4,nofs}", "nofs"),
        ("ext4:mount=data={a,b}:label=x", "label 'x' names more than one config"),
    ],
)
def test_errors_are_one_clear_line(text: str, message: str) -> None:
    with pytest.raises(FsbenchError) as caught:
        expand_fs_spec(text)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_identical_results_are_kept_once() -> None:
    assert specs("ext4:mount=data={ordered,ordered,writeback}") == [
        "ext4:mount=data=ordered",
        "ext4:mount=data=writeback",
    ]
    space = expand_space(["ext4:mount=data={ordered,writeback}", "ext4:mount=data=ordered", "xfs"])
    assert space.specs == ["ext4:mount=data=ordered", "ext4:mount=data=writeback", "xfs"]
    assert space.duplicates == 1


SEARCH = """
[search.ext4]
mkfs = [["-I 128", "-I 256"]]
mount = [["data=ordered", "data=writeback"], ["commit=5", "commit=30"], ["", "nodelalloc"]]

[search.xfs]
mkfs = [["-b size=4096", "-b size=16384"]]
mount = "logbsize=256k"

[search.ext4-nojournal]
type = "ext4"
mkfs = ["-O ^has_journal", ["-I 128", "-I 256"]]
"""


def test_the_search_table_is_the_product_of_its_dimensions() -> None:
    table = tomllib.loads(SEARCH)["search"]
    configs = search_configs(table)
    ext4 = [c for c in configs if c.type == "ext4" and "^has_journal" not in c.mkfs]
    assert len(ext4) == 2 * 2 * 2 * 2
    assert ext4[0].spec == "ext4:mkfs=-I 128:mount=data=ordered,commit=5"
    assert ext4[1].spec == "ext4:mkfs=-I 128:mount=data=ordered,commit=5,nodelalloc"
    xfs = [c.spec for c in configs if c.type == "xfs"]
    assert xfs == [
        "xfs:mkfs=-b size=4096:mount=logbsize=256k",
        "xfs:mkfs=-b size=16384:mount=logbsize=256k",
    ]
    nojournal = [c.mkfs for c in configs if "^has_journal" in c.mkfs]
    assert nojournal == [("-O", "^has_journal", "-I", "128"), ("-O", "^has_journal", "-I", "256")]
    assert len(configs) == 16 + 2 + 2


def test_search_and_braces_give_the_same_configs() -> None:
    table = {"ext4": {"mount": [["data=ordered", "data=writeback"], ["commit=5", "commit=30"]]}}
    braces = expand_fs_spec("ext4:mount=data={ordered,writeback},commit={5,30}")
    assert search_configs(table) == braces
    space = expand_space(["ext4:mount=data={ordered,writeback},commit={5,30}"], table)
    assert len(space) == 4
    assert space.duplicates == 4


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"ext4": {"mount": [[]]}}, "mount dimension 1 has no alternatives"),
        ({"ext4": {"mkfs": [["-I 128"]], "mnt": []}}, "mnt"),
        ({"nofs": {"mount": ["noatime"]}}, "nofs"),
        ({"ext4": {"mkfs": [["-O 'unclosed"]]}}, "mkfs options"),
    ],
)
def test_search_errors(table: dict[str, object], message: str) -> None:
    with pytest.raises(FsbenchError) as caught:
        search_configs(table)
    assert message in str(caught.value)
    assert str(caught.value).startswith("[search.")


def test_the_space_is_counted_before_it_runs() -> None:
    space = expand_space(
        ["ext4:mount=data={ordered,writeback},commit={5,30,60}", "xfs:mkfs=-b size={4k,16k}"],
        {"xfs": {"mkfs": [["-b size=4k"]]}, "btrfs": {"mount": [["compress=zstd", ""]]}},
    )
    summary = describe(space)
    assert summary.per_type == {"ext4": 6, "xfs": 2, "btrfs": 2}
    assert summary.total == 10
    assert summary.duplicates == 1
    assert summary.lines() == [
        "ext4: 6 configs",
        "xfs: 2 configs",
        "btrfs: 2 configs",
        "total: 10 configs (1 duplicate dropped)",
    ]
    assert summary.specs[-1] == "btrfs"


def test_an_empty_space_is_an_error() -> None:
    with pytest.raises(FsbenchError, match="empty"):
        expand_space([], {})


def test_a_plan_keeps_its_search_space_and_run_builds_its_grid(tmp_path: Path) -> None:
    """`[search]` is a field of the plan: a tune preset is a preset like any other
    (`fsbench list presets`), `fsbench run` of it runs the whole grid (its own configs
    first, each config once), and a bad table is refused when the plan is read."""
    built = planflags.build_plan(planflags.PlanFlags(preset="tune-ext4-options"))
    assert built.search is not None and built.search["ext4"]["mkfs"]
    assert len(built.fs) == 20 and built.fs[0].spec == "ext4"
    assert len({c.spec for c in built.fs}) == 20
    given = planflags.build_plan(planflags.PlanFlags(preset="tune-ext4-options", fs=["xfs"]))
    assert [c.spec for c in given.fs] == ["xfs"]  # --fs replaces the plan's configs
    assert "tune-ext4-options" in presets.preset_names()
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[[fs]]\ntype = "ext4"\n[[workload]]\nname = "fs_mark"\n'
        '[search.ext4]\nmount = [[]]\n'
    )  # fmt: skip
    with pytest.raises(FsbenchError, match=r"^\[search.ext4\].*no alternatives"):
        load_plan_file(bad)


def test_a_plain_tune_command_races_once_per_value_the_scale_sweeps() -> None:
    """`fsbench tune --fs ext4,xfs,btrfs --workload fileserver --scale tiny`: the tiny
    scale sweeps fileserver's threads, so the space makes one race per thread count, each
    with the --set that narrows the plan to it (a resumed race expands its own group)."""
    flags = planflags.flags_of(
        {"fs": ["ext4", "xfs", "btrfs"], "workload": ["fileserver"], "scale": "tiny"}
    )
    built = planflags.build(flags)
    space, planned = split(built.cells, duplicates=2)
    assert len(planned) == len(schedule.groups(built.cells)) > 1
    # The space as each race keeps it: how many races, over which parameter, what dropped.
    assert (space.races, space.by, space.duplicates) == (len(planned), ["threads"], 2)
    assert space.budget(600.0) == 600.0 / len(planned) and space.budget(None) is None
    swept = {tuple(narrow) for _, narrow in planned}
    assert swept == {("threads",)}
    for cells, narrow in planned:
        assert sorted(c.config.display for c in cells) == ["btrfs", "ext4", "xfs"]
        again = planning.expand(built.plan, {**built.overrides, **narrow})
        assert [c.key for c in again] == [c.key for c in cells]
    assert sorted(int(n["threads"][0]) for _, n in planned) == sorted(
        {c.params["threads"] for c in built.cells}
    )


def test_a_race_takes_one_workload() -> None:
    built = planflags.build(
        planflags.flags_of({"fs": ["ext4", "xfs"], "workload": ["fs_mark", "alloc"]})
    )
    with pytest.raises(FsbenchError, match="one workload under one kernel"):
        split(built.cells)
