"""Bad input is refused before anything runs: one line on stderr (`fsbench: error: ...`),
exit 2, no run in the store, nothing made. Each case is a mistake a user makes, typed on the
real command line: options, plan files, presets, stores, inventories, tune spaces, bisect
trees and refs, kernels, knobs, runs that are not there. docs/results.md quotes how many
there are (tests/unit/test_bad_input_count.py holds it to len(CASES))."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.forkcli import ForkedCli
from tests.helpers import cli_args, cli_env

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Bad:
    """`fsbench ARGV` and what its one line must say. In ARGV and SAID, {tmp} is the case's
    own directory ({rootdev}: the device of /); `--db {tmp}/store.db` is added unless ARGV
    gives a --db."""

    id: str
    argv: tuple[str, ...]
    said: str
    files: Mapping[str, str] = field(default_factory=dict)  # written under {tmp} first
    git: tuple[str, ...] = ()  # directories under {tmp} made git trees (one commit)


def bad(
    id: str,
    *argv: str,
    said: str,
    files: Mapping[str, str] | None = None,
    git: tuple[str, ...] = (),
) -> Bad:
    return Bad(id, argv, said, files or {}, git)


# What most cases run: one filesystem, one workload; a plan's images and mounts (never
# made) go under the case's own directory.
RUN = ("run", "--workdir", "{tmp}/work")
ONE = ("--fs", "ext4", "-w", "alloc")
TINY = ("--scale", "tiny", "--reps", "1", "--warmup", "0")
ONE_CELL = (*ONE, "--set", "method=fallocate")  # alloc sweeps its methods otherwise
FIO = (*RUN, "--fs", "ext4", "--workload", "fio", "--image-size", "1G", *TINY)
VM = (*RUN, *ONE, "--target", "vm")
PLAN = ("{tmp}/plan.toml",)
FS = '[[fs]]\ntype = "ext4"\n'
WORKLOAD = '[[workload]]\nname = "alloc"\nparams = { method = "fallocate" }\n'
BOTH = FS + WORKLOAD
LINUX = {"linux/Makefile": "all:\n", "linux/Kconfig": 'mainmenu "Linux"\n'}
HOSTS = {"hosts.ini": "[lab]\nnode1 ansible_host=192.0.2.10\n"}
BISECT = ("bisect", "--linux", "{tmp}/linux")
FLEET = ("fleet", "run", *ONE, "-i", "{tmp}/hosts.ini")
RACE = ("--fs", "ext4:mount={noatime,relatime}", "-w", "alloc")


def plan(text: str) -> dict[str, str]:
    return {"plan.toml": text}


# fmt: off
CASES: list[Bad] = [
    # -- options of `fsbench run`
    bad("reps-a-word", *RUN, *ONE, "--reps", "many",
        said="--reps 'many': a number, decide or auto"),
    bad("reps-zero", *RUN, *ONE, "--reps", "0",
        said="reps must be between 1 and 1000"),
    bad("budget-a-word", *RUN, *ONE, "--budget", "soon",
        said="--budget: duration 'soon'"),
    bad("budget-zero", *RUN, *ONE, "--budget", "0",
        said="budget: Input should be greater than 0"),
    bad("margin-in-percent", *RUN, *ONE, "--margin", "5",
        said="margin: Input should be less than 1"),
    bad("margin-with-sign", *RUN, *ONE, "--margin", "5%",
        said="Invalid value for '--margin'"),
    bad("max-reps-two", *RUN, *ONE, "--max-reps", "2",
        said="max_reps 2: at least 3"),
    bad("max-reps-huge", *RUN, *ONE, "--max-reps", "5000",
        said="max_reps: Input should be less than or equal to 1000"),
    bad("seed-a-word", *RUN, "--seed", "abc",
        said="Invalid value for '--seed': "),
    bad("seed-negative", *RUN, *ONE, "--seed", "-1",
        said="seed: Input should be greater than or equal to 0"),
    bad("timeout-a-word", *RUN, "--trial-timeout", "soon",
        said="Invalid value for '--trial-timeout': "),
    bad("timeout-zero", *RUN, *ONE, "--trial-timeout", "0",
        said="trial_timeout: Input should be greater than 0"),
    bad("warmup-five", *RUN, *ONE, "--warmup", "5",
        said="warmup: Input should be less than or equal to 3"),
    bad("steady-unknown", *RUN, *ONE, "--steady", "flat",
        said="steady: Input should be 'both', 'spread' or 'slope'"),
    bad("scale-unknown", *RUN, "--scale", "huge",
        said="Invalid value for '--scale': "),
    bad("flag-misspelt", *RUN, "--repetitions", "5",
        said="No such option: --repetitions (Possible options: --reps) (see "),
    bad("flag-unknown", *RUN, "--no-such-flag",
        said="No such option: --no-such-flag (see "),
    bad("target-unknown", *RUN, *ONE, "--target", "cloud",
        said="--target 'cloud': loop or "),
    bad("flag-of-another-target", *RUN, *ONE, "--inventory", "hosts.ini",
        said="--inventory needs --target fleet (this plan's target is loop)"),
    bad("image-size-a-word", *RUN, *ONE, "--image-size", "lots",
        said="--image-size: not a size: 'lots'"),
    bad("image-1K", *RUN, "--image-size", "1K", *ONE, *TINY,
        said="a 1.0 KiB target is too small: the filesystems' own metadata takes ~"),
    bad("image-100M", *RUN, "--image-size", "100M", *ONE, *TINY,
        said="metadata takes ~128.0 MiB; give --image-size 1G or more"),
    bad("device-without-destroy", *RUN, *ONE, "--device", "/dev/nonexistent-disk",
        said="--device needs --destroy-data: every byte on /dev/nonexistent-disk is lost"),
    bad("device-not-there", *RUN, *ONE, "--device", "/dev/nonexistent-disk", "--destroy-data",
        said="--device /dev/nonexistent-disk: no such device"),
    bad("device-holding-root", *RUN, *ONE, "--device", "{rootdev}", "--destroy-data",
        said="holds the root filesystem /"),
    # -- --fs specs (the plan parser's syntax for mkfs and mount options)
    bad("fs-unknown", *RUN, "--fs", "ext5", "-w", "alloc",
        said="--fs 'ext5': unknown filesystem 'ext5'"),
    bad("fs-empty", *RUN, "--fs", "", "-w", "alloc",
        said="empty --fs value"),
    bad("fs-mount-twice", *RUN, "--fs", "ext4:mount=noatime:mount=nodiratime", "-w", "alloc",
        said="mount= given twice"),
    bad("fs-unclosed-quote", *RUN, "--fs", "ext4:mkfs=-O '^has_journal", "-w", "alloc",
        said="mkfs options \"-O '^has_journal\": No closing quotation"),
    bad("fs-unknown-key", *RUN, "--fs", "ext4:opts=noatime", "-w", "alloc",
        said="--fs 'ext4:opts=noatime': expected TYPE[:mkfs=OPTS][:mount=OPTS][:label=NAME]"),
    bad("fs-same-twice", *RUN, "--fs", "ext4,ext4", "-w", "alloc",
        said="two filesystem configs share the label 'ext4': add label=NAME"),
    # -- workloads and their parameters
    bad("workload-typo", *RUN, "--fs", "ext4", "-w", "untarr",
        said="--workload: unknown workload 'untarr'"),
    bad("workload-chain-typo", *RUN, "--fs", "ext4", "-w", "untar+tree-reed",
        said="unknown workload 'tree-reed'"),
    bad("set-no-value", *RUN, *ONE, "--set", "size",
        said="--set 'size': expected NAME=VALUE[,VALUE...]"),
    bad("set-unknown", *RUN, *ONE, "--set", "sise=64M",
        said="--set sise: no such parameter for alloc (known: method, size)"),
    bad("set-not-a-size", *RUN, *ONE, "--set", "size=huge",
        said="workload alloc: size: not a size: 'huge'"),
    bad("set-negative-size", *RUN, *ONE, "--set", "size=-64M",
        said="workload alloc: size: not a size: '-64M'"),
    bad("set-unknown-choice", *RUN, *ONE, "--set", "method=dd",
        said="workload alloc: method: Input should be 'fallocate'"),
    bad("fio-job-missing", *FIO, "--set", "profile=job=/nonexistent.fio",
        said="workload fio: fio job file /nonexistent.fio: No such file or directory"),
    bad("fio-job-no-section", *FIO, "--set", "profile=job={tmp}/notes.fio,seq-write",
        files={"notes.fio": "bs=4k\nrw=write\n"},
        said="fio job file {tmp}/notes.fio: no job section ([name]) in the job file"),
    bad("fio-job-outside", *FIO, "--set", "profile=job={tmp}/outside.fio",
        files={"outside.fio": "[w]\nrw=write\nfilename=/etc/passwd\nsize=1m\n"},
        said="filename=/etc/passwd points outside the filesystem under test"),
    # -- knobs and ages
    bad("knob-unknown", *RUN, *ONE, "--knob", "vm.dirty_ration=10",
        said="knob vm.dirty_ration: no such sysctl"),
    bad("knob-not-a-sysctl", *RUN, *ONE, "--knob", "dirty_ratio=10",
        said="unknown knob 'dirty_ratio'"),
    bad("knob-no-value", *RUN, *ONE, "--knob", "vm.dirty_ratio",
        said="--knob 'vm.dirty_ratio': expected NAME=VALUE"),
    bad("knob-a-word", *RUN, *ONE, "--knob", "vm.dirty_ratio=abc",
        said="knob vm.dirty_ratio=abc: a whole number, as "),
    bad("knob-a-fraction", *RUN, *ONE, "--knob", "vm.dirty_ratio=1.5",
        said="knob vm.dirty_ratio=1.5: a whole number, as "),
    bad("knob-two-numbers", *RUN, *ONE, "--knob", "vm.dirty_ratio=1 2",
        said="knob vm.dirty_ratio=1 2: a whole number, as "),
    bad("knob-scheduler", *RUN, *ONE, "--knob", "scheduler=cfq",
        said="knob scheduler=cfq: expected one of none, mq-deadline, bfq, kyber"),
    bad("knob-kernel", *RUN, *ONE, "--knob", "kernel=6.1",
        said="knob kernel: the kernel is chosen by the VM target"),
    bad("knob-mem-too-small", *RUN, *ONE, "--knob", "mem=1M",
        said="knob mem=1M: at least 64M"),
    bad("age-unknown", *RUN, *ONE, "--age", "old",
        said="age 'old': a recipe (git-pulls, churn) or none"),
    bad("age-fullness", *RUN, *ONE, "--age", "churn:fullness=2",
        said="age churn: fullness: Input should be less than 1"),
    bad("age-repo-missing", *RUN, *ONE, "--age", "git-pulls:repo=/nonexistent",
        said="age git-pulls: repo: /nonexistent: not a git repository"),
    bad("age-repo-not-git", *RUN, *ONE, "--age", "git-pulls:repo={tmp}/plain",
        files={"plain/README": "notes\n"},
        said="age git-pulls: repo: {tmp}/plain: not a git repository"),
    # -- plan files
    bad("plan-missing", *RUN, *PLAN,
        said="cannot read plan {tmp}/plan.toml: No such file or directory"),
    bad("plan-a-directory", *RUN, "{tmp}",
        said="cannot read plan {tmp}: Is a directory"),
    bad("plan-toml-syntax", *RUN, *PLAN,
        files=plan("fs = [ext4]\n" + WORKLOAD),
        said="plan.toml: invalid TOML: Invalid value (at line 1, column 7)"),
    bad("plan-unknown-key", *RUN, *PLAN,
        files=plan("repss = 3\n" + BOTH),
        said="plan.toml: repss: Extra inputs are not permitted"),
    bad("plan-wrong-type", *RUN, *PLAN,
        files=plan('max_reps = "ten"\n' + BOTH),
        said="plan.toml: max_reps: Input should be a valid integer"),
    bad("plan-no-fs", *RUN, *PLAN,
        files=plan(WORKLOAD),
        said="plan.toml: fs: Field required"),
    bad("plan-no-workload", *RUN, *PLAN,
        files=plan(FS),
        said="plan.toml: workload: Field required"),
    bad("plan-unknown-workload", *RUN, *PLAN,
        files=plan(FS + '[[workload]]\nname = "untarr"\n'),
        said="workload.0.name: unknown workload 'untarr'"),
    bad("plan-unknown-parameter", *RUN, *PLAN,
        files=plan(FS + '[[workload]]\nname = "alloc"\nparams = { sise = "64M" }\n'),
        said="workload alloc: unknown parameter 'sise'"),
    bad("plan-fs-unknown-key", *RUN, *PLAN,
        files=plan('[[fs]]\ntype = "ext4"\nmount_opts = "noatime"\n' + WORKLOAD),
        said="fs.0.mount_opts: Extra inputs are not permitted"),
    bad("plan-no-such-label", *RUN, *PLAN,
        files=plan(FS + '[[workload]]\nname = "alloc"\nconfigs = ["xfs"]\n'),
        said="workload alloc: no config labelled 'xfs'"),
    bad("plan-target-unknown", *RUN, *PLAN,
        files=plan(BOTH + '[target]\nkind = "cloud"\n'),
        said="target: target kind 'cloud': one of loop"),
    bad("plan-scale-unknown", *RUN, *PLAN,
        files=plan('scale = "huge"\n' + BOTH),
        said="scale: Input should be 'tiny', 'quick' or 'full'"),
    bad("plan-knob-empty", *RUN, *PLAN,
        files=plan(BOTH + '[knobs]\n"vm.dirty_ratio" = []\n'),
        said="knob vm.dirty_ratio has an empty list"),
    bad("plan-search-not-a-list", *RUN, *PLAN,
        files=plan(BOTH + "[search.ext4]\nmkfs = 5\n"),
        said="[search.ext4]: mkfs: Input should be a valid list"),
    bad("plan-json-syntax", *RUN, "{tmp}/plan.json",
        files={"plan.json": '{"fs": [{"type": "ext4"}], "workload": [{"name": "alloc"}],}'},
        said="plan.json: Invalid JSON: trailing comma"),
    bad("plan-and-preset", *RUN, *PLAN, "--preset", "quick",
        files=plan(BOTH),
        said="give a plan file or --preset, not both"),
    # -- presets
    bad("preset-unknown", *RUN, "--preset", "kernel-trees",
        said="unknown preset 'kernel-trees' (known: "),
    bad("preset-scale-unknown", *RUN, "--preset", "kernel-tree", "--scale", "medium",
        said="Invalid value for '--scale': Value error, 'medium' is not one of"),
    # -- stores and database URLs
    bad("db-cannot-be-made", *RUN, *ONE, "--db", "/proc/no-such-dir/x.db",
        said="cannot make the directory of result store /proc/no-such-dir/x.db"),
    bad("db-a-directory", *RUN, *ONE, "--db", "{tmp}",
        said="cannot open result store sqlite:///{tmp}: unable to open database file"),
    bad("db-not-a-database", *RUN, *ONE, "--db", "{tmp}/notes.txt",
        files={"notes.txt": "my notes, not a database\n" * 50},
        said="notes.txt: file is not a database"),
    bad("db-mysql", *RUN, *ONE, "--db", "mysql://root@localhost/fsbench",
        said="cannot use mysql://root@localhost/fsbench as a result store"),
    bad("db-postgresql-port", *RUN, *ONE, "--db", "postgresql://bench:pw@localhost:PORT/bench",
        said="cannot use postgresql://bench:***@localhost:PORT/bench as a result store: its port"),
    bad("db-postgresql-socket", "report", "--db", "postgresql://bench@/bench?host=/run/postgres",
        said='connection to server on socket "/run/postgres/.s.PGSQL.5432" failed'),
    # -- runs that are not there
    bad("report-no-such-run", "report", "7",
        said="no run 7 in sqlite:///{tmp}/store.db"),
    bad("report-empty-store", "report",
        said="no runs in sqlite:///{tmp}/store.db: start one with `fsbench run`"),
    bad("report-unknown-format", "report", "--format", "pdf",
        said="unknown format 'pdf' (known: "),
    bad("compare-no-such-runs", "compare", "3", "4",
        said="no run 3 in "),
    bad("compare-one-run", "compare", "3",
        said="compare needs RUN_B, or --by KNOB to compare within RUN_A"),
    bad("merge-no-such-store", "merge", "{tmp}/other.db",
        said="no store at {tmp}/other.db"),
    bad("resume-nothing", *RUN, "--resume",
        said="no unfinished run in sqlite:///{tmp}/store.db to resume"),
    bad("resume-a-word", *RUN, "--resume", "last",
        said="--resume takes a run id, not 'last'"),
    bad("resume-no-such-run", *RUN, "--resume", "12",
        said="no run 12 in "),
    bad("tune-resume-nothing", "tune", "--resume",
        said="no unfinished race of fsbench tune in "),
    bad("fleet-resume-nothing", "fleet", "run", "--resume", "-i", "{tmp}/hosts.ini",
        files=HOSTS,
        said="no unfinished run on many hosts of fsbench fleet run in "),
    bad("bisect-resume-nothing", *BISECT, "--good", "HEAD", "--bad", "HEAD", "--resume",
        *ONE_CELL,
        files=LINUX, git=("linux",),
        said="no unfinished bisection of {tmp}/linux in "),
    # -- tune: requirements and search spaces
    bad("require-no-bound", "tune", *ONE_CELL, "--require", "lat_p99_us<",
        said="--require 'lat_p99_us<': expected METRIC<VALUE (or <=, >, >=), or 'safe'"),
    bad("require-a-word", "tune", *ONE_CELL, "--require", "lat_p99_us<fast",
        said="--require 'lat_p99_us<fast': 'fast' is not a number"),
    bad("require-equals", "tune", *ONE_CELL, "--require", "seconds=5",
        said="--require 'seconds=5': expected METRIC<VALUE"),
    bad("safety-set-alone", "tune", *RACE, "--set", "method=fallocate", "--safety-set", "crashes=5",
        said="--safety-set sets the crash tests of --require safe: give both"),
    bad("brace-unclosed", "tune", "--fs", "ext4:mount=data={ordered,writeback", "-w", "alloc",
        said="'{' at column 17 is never closed"),
    bad("brace-empty", "tune", "--fs", "ext4:mount={}", "-w", "alloc",
        said="empty braces '{}' at column 12"),
    bad("tune-one-config", "tune", *ONE_CELL,
        said="fsbench tune races two configs or more; this space has one (ext4)"),
    bad("tune-search-empty", "tune", *PLAN,
        files=plan(BOTH + "[search.ext4]\nmount = []\n"),
        said="fsbench tune races two configs or more; this space has one (ext4)"),
    bad("tune-search-unknown-fs", "tune", *PLAN,
        files=plan(BOTH + '[search.ext5]\nmount = [["noatime", "relatime"]]\n'),
        said="[search.ext5]: unknown filesystem 'ext5'"),
    bad("tune-search-unknown-key", "tune", *PLAN,
        files=plan(BOTH + '[search.ext4]\nmnt = [["noatime", "relatime"]]\n'),
        said="[search.ext4]: mnt: Extra inputs are not permitted"),
    bad("tune-many-workloads", "tune", *RACE, "-w", "fs_mark",
        said="races configs on one workload under one kernel; this plan has "),
    bad("tune-max-rounds-zero", "tune", *RACE, "--set", "method=fallocate", "--max-rounds", "0",
        said="max rounds 0 is below the first look (3)"),
    # -- inventories of a fleet
    bad("inventory-missing", *FLEET,
        said="no inventory {tmp}/hosts.ini"),
    bad("inventory-bad-yaml", "fleet", "run", *ONE, "-i", "{tmp}/hosts.yml",
        files={"hosts.yml": "all:\n  hosts:\n    node1: [\n"},
        said="inventory {tmp}/hosts.yml: Ansible cannot parse it (yaml plugin: YAML parsing"),
    bad("inventory-bad-ini", *FLEET,
        files={"hosts.ini": "[lab]\nnode1 ansible_host=192.0.2.10 fsbench_workdir\n"},
        said="(ini plugin: Expected key=value host variable assignment, got: fsbench_workdir)"),
    bad("inventory-host-var", *FLEET,
        files={"hosts.ini": "[lab]\nnode1 ansible_host=192.0.2.10 fsbench_dev=/dev/sdb\n"},
        said="host node1: unknown host variable fsbench_dev"),
    bad("inventory-limit-nothing", *FLEET, "--limit", "web*",
        files=HOSTS,
        said="inventory {tmp}/hosts.ini has no hosts matching --limit 'web*'"),
    bad("fleet-device-flag", *FLEET, "--device", "/dev/sdb",
        files=HOSTS,
        said="No such option: --device"),
    bad("fleet-poll-zero", *FLEET, "--poll", "0",
        files=HOSTS,
        said="target.poll: Input should be greater than 0"),
    # -- bisect: trees and refs
    bad("bisect-not-linux", "bisect", "--linux", "{tmp}/src", "--good", "v6.1", "--bad", "v6.2",
        *ONE_CELL,
        files={"src/README": "notes\n"},
        said="--linux {tmp}/src: not a Linux source tree (no Kconfig)"),
    bad("bisect-not-git", *BISECT, "--good", "v6.1", "--bad", "v6.2", *ONE_CELL,
        files=LINUX,
        said="fatal: not a git repository"),
    bad("bisect-unknown-ref", *BISECT, "--good", "v6.1", "--bad", "HEAD", *ONE_CELL,
        files=LINUX, git=("linux",),
        said="no commit 'v6.1' in {tmp}/linux"),
    bad("bisect-config-missing", *BISECT, "--good", "HEAD", "--bad", "HEAD",
        "--config", "{tmp}/my.config", *ONE_CELL,
        files=LINUX, git=("linux",),
        said="--config {tmp}/my.config: No such file or directory"),
    bad("bisect-many-cells", *BISECT, "--good", "HEAD", "--bad", "HEAD", *ONE,
        files=LINUX, git=("linux",),
        said="fsbench bisect measures one cell (one --fs config, one --workload, no sweep)"),
    bad("bisect-max-reps-two", *BISECT, "--good", "HEAD", "--bad", "HEAD", "--max-reps", "2",
        *ONE_CELL,
        said="--max-reps 2: at least 3 (each endpoint is measured that often before the gate "),
    # -- kernels for the VM target
    bad("kernel-unknown-form", *VM, "--kernel", "0.0.1",
        said="--kernel '0.0.1': expected default, a version"),
    bad("kernel-no-file", *VM, "--kernel", "/nonexistent/bzImage",
        said="--kernel /nonexistent/bzImage: no such file or directory"),
    bad("kernel-no-package", *VM, "--kernel", "linux-image-nosuch",
        said="--kernel linux-image-nosuch: apt knows no package"),
    bad("kernel-no-version", *VM, "--kernel", "6.01",
        said="no Debian kernel package for 6.01 in the apt sources"),
    bad("kernel-tree-unbuilt", *VM, "--kernel", "{tmp}/linux",
        files=LINUX,
        said="--kernel {tmp}/linux: no bzImage, vmlinuz-* or boot/vmlinuz-* in it"),
    bad("kernel-without-vm", *RUN, *ONE, "--kernel", "6.1",
        said="--kernel needs --target vm (this plan's target is loop)"),
    bad("guest-ram-too-small", *VM, "--guest-ram", "64",
        said="target.guest_ram_mb: Input should be greater than or equal to 256"),
]
# fmt: on


def _runs(db: Path) -> int:
    """Runs in the SQLite store at `db`: 0 when there is no file, no store in it, or none."""
    if not db.is_file():
        return 0
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
    except sqlite3.DatabaseError:  # no runs table, or not a database at all
        return 0


def _root_device() -> str:
    found = subprocess.run(["findmnt", "-n", "-o", "SOURCE", "/"], capture_output=True, text=True)
    source = found.stdout.strip()
    if not source.startswith("/dev/"):
        pytest.skip(f"the root filesystem is not on a block device ({source or '?'})")
    return source


def _prepare(case: Bad, tmp: Path) -> list[str]:
    """The case's files and git trees under tmp, and its argv with {tmp} filled in."""
    for rel, text in case.files.items():
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for tree in case.git:
        git = ["git", "-C", str(tmp / tree), "-c", "user.name=t", "-c", "user.email=t@t"]
        subprocess.run([*git, "init", "-q"], check=True)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-q", "-m", "tree"], check=True)
    argv = [a.replace("{tmp}", str(tmp)) for a in case.argv]
    if "{rootdev}" in argv:
        argv[argv.index("{rootdev}")] = _root_device()
    if "--db" not in argv:
        argv += ["--db", str(tmp / "store.db")]
    return argv


@pytest.fixture(scope="module")
def cli() -> Iterator[ForkedCli]:
    """Each case's `fsbench` is a process of its own, forked from one that has imported
    the CLI (tests/forkcli.py): the same command, without a second of imports each."""
    with ForkedCli(cli_env()) as server:
        yield server


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_refused_in_one_line(case: Bad, tmp_path: Path, cli: ForkedCli) -> None:
    if os.geteuid() != 0:
        pytest.skip("the preflight runs as root (a non-root run is refused before it)")
    argv = _prepare(case, tmp_path)
    res = cli.run(*cli_args(*argv), timeout=120)
    err = res.stderr.removesuffix("\n")
    assert res.returncode == 2, res.stdout[-2000:] + res.stderr[-2000:]
    assert err and "\n" not in err, res.stderr  # one line: no traceback, no banner, no bar
    assert err.startswith("fsbench: error: "), err
    said = case.said.replace("{tmp}", str(tmp_path))
    assert said in err, err
    db = Path(argv[argv.index("--db") + 1])
    assert _runs(db) == 0, "a run was stored"
