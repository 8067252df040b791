"""git in the user's tree, as `fsbench bisect` drives it: argv lists, never shell strings."""

from __future__ import annotations

from pathlib import Path

from fsbench.system import proc
from fsbench.system.errors import FsbenchError


class Git:
    """git in the user's tree, argv lists only."""

    def __init__(self, tree: Path) -> None:
        self.tree = tree

    def run(self, *args: str, check: bool = True, timeout: float = 600) -> proc.Result:
        res = proc.run(["git", "-C", str(self.tree), *args], timeout=timeout)
        if check and not res.ok:
            raise FsbenchError(f"git {' '.join(args)}: {res.output.strip()[-600:]}")
        return res

    def commit(self, ref: str) -> str:
        spec = f"{ref}^{{commit}}"
        res = self.run("rev-parse", "--verify", "--quiet", "--end-of-options", spec, check=False)
        if res.ok:
            return res.stdout.strip()
        if res.returncode == 1 and not res.output.strip():  # --quiet: no such commit
            raise FsbenchError(f"no commit {ref!r} in {self.tree} (a typo, or not fetched yet)")
        raise FsbenchError(f"git rev-parse {spec}: {res.output.strip()[-600:]}")

    def head(self) -> str:
        return self.commit("HEAD")

    def bisecting(self) -> bool:
        return self.run("bisect", "log", check=False).ok

    def log(self) -> str:
        res = self.run("bisect", "log", check=False)
        return res.stdout if res.ok else ""

    def dirty(self) -> list[str]:
        out = self.run("status", "--porcelain", "--untracked-files=no").stdout
        return [line for line in out.splitlines() if line.strip()]

    def subject(self, commit: str) -> tuple[str, str]:
        """(subject, author date ISO) of a commit."""
        out = self.run("log", "-1", "--format=%s%x00%aI", commit).stdout.strip()
        subject, _, date = out.partition("\0")
        return subject, date

    def mark(self, verdict: str, commit: str) -> str:
        """git bisect good|bad|skip; what git said (it exits 2 when only skipped commits
        are left: that is an answer, not an error)."""
        res = self.run("bisect", verdict, commit, check=False)
        if not res.ok and "skip" not in res.output:
            raise FsbenchError(f"git bisect {verdict} {commit[:12]}: {res.output.strip()[-600:]}")
        return res.output

    def branch(self) -> str:
        """What is checked out: the branch's name, or the commit when detached."""
        res = self.run("symbolic-ref", "-q", "--short", "HEAD", check=False)
        return res.stdout.strip() if res.ok and res.stdout.strip() else self.head()
