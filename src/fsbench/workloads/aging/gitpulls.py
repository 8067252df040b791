"""`git-pulls` (after Conway et al., FAST'17): a real git repository on the filesystem,
advanced by `git pull` one commit at a time from a bare repository outside the target,
with automatic garbage collection off (`gc.auto 0`), as in the paper.

The history is the user's own repository (`repo=PATH`, e.g. a local Linux clone: its
first-parent history from `start`, one commit per pull), or by default one synthesized
from the source tree of the kernel-tree workloads (aging/history.py), made once and kept
in the cache by what makes it (tree, seed, pulls).
"""

from __future__ import annotations

import fcntl
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from fsbench.system import proc, sourcetree
from fsbench.system.errors import TrialFailed, Unsupported
from fsbench.workloads._trees import TreeParams
from fsbench.workloads.aging import history
from fsbench.workloads.aging.base import Recipe
from fsbench.workloads.base import Scale, TrialContext

AGING_DIR = "aging"
REPO = "repo"
GIT_TIMEOUT = 3600


class GitPullsParams(TreeParams):
    """The history's first tree is the kernel-tree workloads' source (`source`, `files`)."""

    pulls: int = Field(default=300, ge=1, le=100_000, description="git pulls, one commit each")
    repo: str | None = Field(
        default=None,
        description="a local git repository to replay (first-parent history); none: a "
        "history synthesized from the source tree (source, files)",
    )
    start: str | None = Field(
        default=None,
        description="with repo: the commit to start from (default: the first commit of its "
        "first-parent history)",
    )
    seed: int = Field(default=1, ge=0, description="seed of the synthesized history")

    @field_validator("repo")
    @classmethod
    def _a_repository(cls, value: str | None) -> str | None:
        # Refused when the plan is read, before a run exists: not at every cell's trial.
        if value is not None:
            repo = Path(value)
            if not (repo / ".git").exists() and not (repo / "HEAD").exists():
                raise ValueError(f"{value}: not a git repository")
        return value


def _git(*args: str, cwd: Path | None = None) -> str:
    res = proc.run(["git", *args], timeout=GIT_TIMEOUT, cwd=cwd)
    if not res.ok:
        last = (res.output.splitlines() or [f"exit status {res.returncode}"])[-1]
        raise TrialFailed(f"git {args[0]}: {last}", res.output[-4000:])
    return res.stdout


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One history builder at a time per cache (runs may share it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.with_suffix(".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def synthetic_history(cache_dir: Path, params: GitPullsParams) -> tuple[Path, list[str], str]:
    """The bare repository of a synthesized history (made once, cached), its commit ids
    (the tree, then one per pull) and its name."""
    tree = sourcetree.get_source(cache_dir, params.source, params.files)
    name = f"history-{tree.name}-s{params.seed}-p{params.pulls}-g1"
    bare = cache_dir / AGING_DIR / f"{name}.git"
    manifest = bare.with_suffix(".json")
    with _locked(bare):
        if manifest.exists():
            commits: list[str] = json.loads(manifest.read_text())["commits"]
            return bare, commits, name
        if bare.exists():  # an interrupted build
            proc.run(["rm", "-rf", str(bare)], timeout=600)
        sourcetree.warm(tree.tar)
        try:
            commits = history.write_history(
                bare, Path(tree.tar), tree.top, params.pulls, params.seed
            )
        except (RuntimeError, OSError) as exc:
            proc.run(["rm", "-rf", str(bare)], timeout=600)
            raise TrialFailed(f"synthesizing the git history: {exc}") from None
        manifest.write_text(json.dumps({"tree": tree.as_dict(), "commits": commits}))
    return bare, commits, name


def user_history(params: GitPullsParams) -> tuple[Path, list[str], str]:
    """The user's repository and its first-parent commits from `start`, oldest first."""
    assert params.repo is not None
    repo = Path(params.repo)
    if not (repo / ".git").exists() and not (repo / "HEAD").exists():
        raise Unsupported(f"repo={repo}: not a git repository")
    listed = _git("-C", str(repo), "rev-list", "--first-parent", "--reverse", "HEAD").split()
    if params.start:
        start = _git("-C", str(repo), "rev-parse", "--verify", f"{params.start}^{{commit}}").strip()
        if start not in listed:
            raise Unsupported(f"start={params.start}: not on {repo}'s first-parent history")
        listed = listed[listed.index(start) :]
    if len(listed) < params.pulls + 1:
        raise Unsupported(
            f"repo={repo}: {len(listed) - 1} first-parent commits after the start, "
            f"fewer than pulls={params.pulls}"
        )
    return repo, listed[: params.pulls + 1], f"{repo.name}@{listed[0][:12]}"


class GitPulls(Recipe[GitPullsParams]):
    name = "git-pulls"
    summary = "a git repository advanced by git pull, one commit at a time (Conway et al.)"
    unit = "pulls"
    scale_defaults = {
        Scale.TINY: {"pulls": 24, "source": "synthetic", "files": 800},
        Scale.QUICK: {"pulls": 300},
        Scale.FULL: {"pulls": 3000},
    }

    def __init__(self) -> None:
        self._origin: Path | None = None
        self._commits: list[str] = []
        self._history = ""
        self._done = -1  # pulls done; -1: no repository yet

    def missing(self) -> str | None:
        return None if proc.which("git") else "git not installed (apt-get install git)"

    def end(self, params: GitPullsParams) -> float:
        return float(params.pulls)

    def tree(self, ctx: TrialContext) -> Path:
        return ctx.mountpoint / AGING_DIR / REPO

    def prepare(self, ctx: TrialContext, params: GitPullsParams) -> None:
        if params.repo:
            self._origin, self._commits, self._history = user_history(params)
        else:
            self._origin, self._commits, self._history = synthetic_history(ctx.cache_dir, params)

    def advance(self, ctx: TrialContext, params: GitPullsParams, to: float) -> dict[str, Any]:
        if self._origin is None:
            raise TrialFailed("git-pulls: advance before prepare")
        repo = self.tree(ctx)
        # Pulls by commit id: a local upload-pack may hand out any commit it has.
        fetch = ["-c", "uploadpack.allowAnySHA1InWant=true"]
        if self._done < 0:
            repo.mkdir(parents=True, exist_ok=True)
            _git("init", "-q", str(repo))
            for key, value in (("gc.auto", "0"), ("maintenance.auto", "false")):
                _git("-C", str(repo), "config", key, value)
            _git("-C", str(repo), "remote", "add", "origin", str(self._origin))
            _git(*fetch, "-C", str(repo), "fetch", "-q", "origin", self._commits[0])
            _git("-C", str(repo), "checkout", "-q", "-b", "aging", self._commits[0])
            self._done = 0
        target = min(int(to), len(self._commits) - 1)
        while self._done < target:
            commit = self._commits[self._done + 1]
            _git(*fetch, "-C", str(repo), "pull", "-q", "--ff-only", "origin", commit)
            self._done += 1
        return {
            "history": self._history,
            "origin": str(self._origin),
            "pulls": self._done,
            "head": self._commits[self._done],
            "first": self._commits[0],
        }
