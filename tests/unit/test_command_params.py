"""The `command` workload's parameters as a plan gives them: argv as a list or as words
(no shell), a shell line only when written as one, metric patterns checked when the plan
is read, a working directory that cannot leave the filesystem under test; and how plans
and --set carry a parameter whose value is itself a list (never a sweep)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from fsbench.plan import model as planning
from fsbench.system import numbers
from fsbench.system.errors import FsbenchError, TrialFailed
from fsbench.workloads.command import parsed
from fsbench.workloads.command.params import CommandParams, MetricPattern

TPS = {"name": "tps", "pattern": "tps = ([0-9.]+)", "unit": "tx/s", "better": "higher"}


def refused(**params: object) -> str:
    with pytest.raises(ValidationError) as caught:
        CommandParams.model_validate(params)
    return planning.one_line(caught.value)


def test_run_is_argv_as_a_list_or_as_words_split_without_a_shell() -> None:
    assert CommandParams(run=("make", "-j2")).run == ("make", "-j2")
    given = CommandParams.model_validate({"run": "git log '--format=%h, %s' -n 3"})
    assert given.run == ("git", "log", "--format=%h, %s", "-n", "3")
    # A list as a plan file writes it, given on the command line.
    assert CommandParams.model_validate({"run": '["make", "-j2"]'}).run == ("make", "-j2")
    # $HOME, globs and ; stay words: no shell sees them.
    assert CommandParams.model_validate({"run": "echo $HOME *"}).run == ("echo", "$HOME", "*")


def test_shell_syntax_in_words_says_to_write_a_shell_line() -> None:
    said = refused(run="make > log")
    assert "'>' is shell syntax" in said and 'shell = "..."' in said
    assert "'|'" in refused(run="git log | head")
    assert "No closing quotation" in refused(run="echo 'unclosed")


def test_exactly_one_command_and_at_most_one_setup() -> None:
    assert "run and shell both given" in refused(run=["true"], shell="true")
    assert "give the command" in refused()
    assert "setup and setup_shell both given" in refused(
        run=["true"], setup=["true"], setup_shell="true"
    )
    assert "an empty command" in refused(run=[])
    assert CommandParams(shell="make && make check").shell == "make && make check"


@pytest.mark.parametrize(
    ("cwd", "said"),
    [
        ("/etc", "relative"),
        ("..", "leaves the filesystem under test"),
        ("repo/../../etc", "leaves the filesystem under test"),
    ],
)
def test_cwd_stays_inside_the_filesystem_under_test(cwd: str, said: str) -> None:
    assert said in refused(run=["true"], cwd=cwd)


def test_a_cwd_that_comes_back_inside_is_accepted() -> None:
    assert CommandParams(run=("true",), cwd="repo/../src").cwd == "repo/../src"


def test_metric_patterns_are_checked_when_the_plan_is_read() -> None:
    assert "has 0 groups: one" in refused(run=["true"], metric={**TPS, "pattern": "tps"})
    assert "has 2 groups" in refused(run=["true"], metric={**TPS, "pattern": "(a)(b)"})
    assert "pattern '([0-9]'" in refused(run=["true"], metric={**TPS, "pattern": "([0-9]"})
    assert "one every command trial reports" in refused(
        run=["true"], metric={**TPS, "name": "seconds"}
    )
    assert "lower case" in refused(run=["true"], metric={**TPS, "name": "TPS"})
    assert "better" in refused(run=["true"], metric={**TPS, "better": "more"})
    assert "given twice" in refused(run=["true"], metric=[TPS, TPS])


def test_one_metric_table_or_several_and_from_the_command_line() -> None:
    one = CommandParams.model_validate({"run": ["true"], "metric": TPS})
    assert [m.name for m in one.metric] == ["tps"]
    text = '{ name = "tps", pattern = "tps = ([0-9.]+)", unit = "tx/s", better = "higher" }'
    assert CommandParams.model_validate({"run": ["true"], "metric": text}).metric == one.metric
    two = CommandParams.model_validate(
        {"run": ["true"], "metric": [TPS, {**TPS, "name": "lat", "better": "lower"}]}
    )
    assert [m.name for m in two.metric] == ["tps", "lat"]


def test_env_names_are_names() -> None:
    assert "variable name 'A=B'" in refused(run=["true"], env={"A=B": "1"})


def test_a_metric_is_the_last_match_in_stdout_then_stderr() -> None:
    pattern = MetricPattern.model_validate(TPS)
    out = ("tps = 10.5\nprogress\ntps = 12.25\n", "tps = 99\n")
    metric = parsed(pattern, out, ["pgbench"])
    assert (metric.value, metric.unit, metric.better) == (12.25, "tx/s", "higher")
    assert parsed(pattern, ("", "tps = 99\n"), ["pgbench"]).value == 99.0


def test_a_metric_that_matches_nothing_fails_the_trial_naming_it() -> None:
    pattern = MetricPattern.model_validate(TPS)
    with pytest.raises(TrialFailed) as caught:
        parsed(pattern, ("no numbers here\n", ""), ["pgbench", "-T", "5"])
    assert caught.value.message.startswith("metric tps: 'tps = ([0-9.]+)' matched nothing")
    assert "$ pgbench -T 5" in caught.value.detail and "no numbers here" in caught.value.detail
    odd = MetricPattern.model_validate({**TPS, "pattern": "tps = (\\S+)"})
    with pytest.raises(TrialFailed, match="matched 'n/a', not a number"):
        parsed(odd, ("tps = n/a\n", ""), ["x"])


def test_set_values_split_at_commas_outside_quotes_and_brackets() -> None:
    assert planning.parse_set(["run=git log '--format=%h,%s'", "size=1M,2M"]) == {
        "run": ["git log '--format=%h,%s'"],
        "size": ["1M", "2M"],
    }
    assert planning.parse_set(['run=["make", "-j2"]', "metric={ a = 1, b = 2 }"]) == {
        "run": ['["make", "-j2"]'],
        "metric": ["{ a = 1, b = 2 }"],
    }


PLAN = """
[[fs]]
type = "ext4"
[[fs]]
type = "xfs"
[[workload]]
name = "command"
params = { run = ["tar", "xf", "a.tar"], metric = [
  { name = "files", pattern = "([0-9]+) files", better = "higher" },
  { name = "kib", pattern = "([0-9]+) KiB", unit = "KiB", better = "lower" } ] }
"""


def test_a_list_valued_parameter_is_one_value_never_a_sweep() -> None:
    plan = planning.load_toml(PLAN, "plan.toml")
    cells = planning.expand(plan)
    assert len(cells) == 2  # one per config: the argv and the metrics are one value each
    assert cells[0].params["run"] == ["tar", "xf", "a.tar"]
    assert [m["name"] for m in cells[0].params["metric"]] == ["files", "kib"]
    assert cells[0].describe() == (
        "ext4 · command run=tar xf a.tar cwd=. cache=cold flush=sync metric=files,kib"
    )


def test_set_gives_a_command_as_words_and_refuses_a_sweep_of_commands() -> None:
    plan = planning.load_toml(PLAN, "plan.toml")
    cells = planning.expand(plan, planning.parse_set(["run=make -j2"]))
    assert [c.params["run"] for c in cells] == [["make", "-j2"]] * 2
    assert planning.with_overrides(plan, {"run": ["make -j2"]}).workloads[0].params["run"] == (
        "make -j2"
    )
    with pytest.raises(FsbenchError, match="--set run: one value"):
        planning.expand(plan, planning.parse_set(["run=make -j2,make -j4"]))


def test_a_setting_reads_as_the_user_wrote_it() -> None:
    assert numbers.setting(["sh", "-c", "sort a > b"]) == "sh -c 'sort a > b'"
    assert numbers.setting([TPS, {**TPS, "name": "lat"}]) == "tps,lat"
    assert numbers.setting({"A": "1", "B": "2"}) == "A=1,B=2"
    assert numbers.setting("64M") == "64M" and numbers.setting(3) == "3"
