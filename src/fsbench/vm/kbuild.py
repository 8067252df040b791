"""Kernel builds that make a bisection affordable: one config, one build directory.

The config is made once per tree: the user's own (`--config PATH`), or one of fsbench's
named configurations (vm/kconfigs.py: `default`, `minimal`): `make tinyconfig` with the
tree's fragments and fsbench's options merged in (no modules, no initrd). Every step
starts from that config and runs `make olddefconfig`, so a commit that adds or drops an
option gets Kconfig's default for it and nothing else changes.

The build directory (`make O=`) lives under the cache and is kept across steps and runs,
so a step rebuilds what its checkout changed; ccache, when installed, serves what an
earlier step already compiled. A commit built before is not built again: its bzImage is
kept, and reused once its header names the release that was built. Nor is a commit whose
difference from one built before touches only files no build reads (Documentation/,
LICENSES/, MAINTAINERS...): same sources, same config, so it gets that commit's bzImage
(its release string names the other commit; `same_as` says which). Builds run at
`nice -n 10`. A build says its CPU seconds (user + system of make and everything it ran,
from their rusage): unlike its wall time, they do not depend on what else the machine
runs.

    <cache>/ (default /var/cache/fsbench/kbuild; FSBENCH_KBUILD_CACHE names another)
      <key>/out/                the build directory (O=)
      <key>/base.config         the config every step starts from
      <key>/kernels/<commit>/   bzImage and .config of each commit built
      ccache/                   ccache's directory (CCACHE_DIR)
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from fsbench.execute.git import Git
from fsbench.system import proc
from fsbench.system.errors import FsbenchError
from fsbench.vm.cache import LogFn, content_key, locked, quiet
from fsbench.vm.kconfigs import DEFAULT, KernelConfig
from fsbench.vm.kernels import bzimage_version

KBUILD_CACHE_ENV = "FSBENCH_KBUILD_CACHE"  # another place for it (the suite's cold runs)


def kbuild_cache(environ: Mapping[str, str] = os.environ) -> Path:
    """The builds' cache: FSBENCH_KBUILD_CACHE when set, else /var/cache/fsbench/kbuild."""
    return Path(environ.get(KBUILD_CACHE_ENV) or "/var/cache/fsbench/kbuild")


KBUILD_CACHE = kbuild_cache()
BUILD_TIMEOUT = 3600.0
NICE = 10
ARCH = "x86_64"
# Paths no kernel build reads: two commits that differ only in these build the same kernel.
UNBUILT = re.compile(r"(Documentation|LICENSES)/.*|MAINTAINERS|CREDITS|README|COPYING|\.mailmap")
# How many kept builds a new commit is compared with (the latest first): a `git diff
# --name-only` each, milliseconds between neighbouring commits.
SAME_AS_CANDIDATES = 16
# Options known to change performance: a difference between the endpoints' configs is
# reported before bisecting.
CONFOUNDERS = re.compile(
    r"CONFIG_(KASAN\w*|KCSAN\w*|UBSAN\w*|LOCKDEP\w*|PROVE_\w+|DEBUG_\w+|\w+_DEBUG|"
    r"PREEMPT\w*|HZ\w*|NO_HZ\w*|KMEMLEAK\w*|SLUB_DEBUG\w*|FTRACE|FUNCTION_TRACER|"
    r"KCOV\w*|LOCK_STAT|TRACE_IRQFLAGS\w*)$"
)


@dataclass(frozen=True)
class Built:
    """One commit's build: its bzImage (and .config beside it) or why there is none."""

    commit: str
    ok: bool
    seconds: float
    bzimage: Path | None = None
    version: str = ""
    error: str = ""
    same_as: str = ""  # the commit whose build this is (they differ in unbuilt files only)
    cpu_seconds: float = 0.0  # user + system of the build's make runs (0: no make)


def read_config(path: Path) -> dict[str, str]:
    """A .config as option -> value ('n' for `# CONFIG_X is not set`)."""
    out: dict[str, str] = {}
    for line in path.read_text(errors="replace").splitlines():
        m = re.match(r"(CONFIG_\w+)=(.*)", line) or re.match(r"# (CONFIG_\w+) is not set", line)
        if m:
            out[m.group(1)] = m.group(2) if m.lastindex == 2 else "n"
    return out


def confounders(a: dict[str, str], b: dict[str, str]) -> list[str]:
    """The performance-relevant options whose values differ between two configs, as
    `CONFIG_X: a -> b` (n for unset)."""
    keys = sorted(k for k in set(a) | set(b) if CONFOUNDERS.match(k))
    return [
        f"{k}: {a.get(k, 'n')} -> {b.get(k, 'n')}" for k in keys if a.get(k, "n") != b.get(k, "n")
    ]


def ccache() -> str | None:
    return proc.which("ccache")


class KernelBuilder:
    """Builds the commits of one tree with one config in one build directory."""

    def __init__(
        self,
        tree: Path,
        cache: Path = KBUILD_CACHE,
        config: Path | KernelConfig | None = None,
        jobs: int | None = None,
        log: LogFn = quiet,
    ) -> None:
        self.tree = Path(tree).resolve()
        if not (self.tree / "Makefile").is_file() or not (self.tree / "Kconfig").is_file():
            raise FsbenchError(f"--linux {self.tree}: not a Linux source tree (no Kconfig)")
        self.cache = Path(cache)
        self.user_config = Path(config).resolve() if isinstance(config, Path) else None
        self.named = config if isinstance(config, KernelConfig) else DEFAULT
        try:
            base = self.user_config.read_text() if self.user_config else self.named.key_text()
        except OSError as exc:
            raise FsbenchError(f"--config {self.user_config}: {exc.strerror}") from None
        self.key = content_key("kbuild", str(self.tree), base, ARCH)
        self.dir = self.cache / self.key
        self.out = self.dir / "out"
        self.jobs = jobs or os.cpu_count() or 1
        self.log = log

    @property
    def base_config(self) -> Path:
        return self.dir / "base.config"

    def _env(self) -> list[str]:
        """`env` and the variables every make gets: the same build strings at every step
        (no rebuild, and ccache hits, for a date), ccache's directory in the cache."""
        env = [
            "env",
            "KBUILD_BUILD_TIMESTAMP=2000-01-01",
            "KBUILD_BUILD_USER=fsbench",
            "KBUILD_BUILD_HOST=fsbench",
        ]
        if ccache():
            env += [
                f"CCACHE_DIR={self.cache / 'ccache'}",
                f"CCACHE_BASEDIR={self.tree}",
                "CCACHE_MAXSIZE=5G",
            ]
        return env

    def _make(self, *targets: str, timeout: float = BUILD_TIMEOUT) -> proc.Result:
        argv = [*self._env(), "nice", "-n", str(NICE), "make", "-C", str(self.tree)]
        argv.append(f"O={self.out}")
        argv += [f"ARCH={ARCH}", f"-j{self.jobs}"]
        if ccache():
            argv.append("CC=ccache gcc")
        return proc.run([*argv, *targets], timeout=timeout)

    def _must(self, res: proc.Result, what: str) -> None:
        if not res.ok:
            raise FsbenchError(f"kernel build: {what} failed: {res.output[-1200:]}")

    def prepare_config(self) -> Path:
        """The config every step starts from, made once per tree and config."""
        if self.base_config.is_file():
            return self.base_config
        self.out.mkdir(parents=True, exist_ok=True)
        if self.user_config is not None:
            shutil.copy2(self.user_config, self.out / ".config")
            self._must(self._make("olddefconfig"), "make olddefconfig")
        else:
            self.log(f"kernel config {self.named.name}: {self.named.summary}")
            self._must(self._make("tinyconfig"), "make tinyconfig")
            frag = self.dir / "fsbench.config"
            frag.write_text(self.named.fragment_text())
            merge = [
                str(self.tree / "scripts/kconfig/merge_config.sh"),
                "-m",
                "-O",
                str(self.out),
                str(self.out / ".config"),
                *(str(self.tree / "kernel/configs" / name) for name in self.named.merged),
                str(frag),
            ]
            res = proc.run(["sh", *merge], cwd=self.tree, timeout=300)
            self._must(res, "merge_config.sh")
            self._must(self._make("olddefconfig"), "make olddefconfig")
            lost = self.named.missing(read_config(self.out / ".config"))
            if lost:  # an older tree: its Kconfig lacks them or their dependencies
                self.log(f"kernel config {self.named.name}: this tree gives no {', '.join(lost)}")
        shutil.copy2(self.out / ".config", self.base_config)
        return self.base_config

    def build(self, commit: str) -> Built:
        """Build the tree as checked out now (`commit` names it): the base config,
        `make olddefconfig`, `make bzImage`. A failure is a Built with its reason."""
        with locked(self.cache, f"kbuild-{self.key}"):
            done = self.dir / "kernels" / commit
            version = _kept_version(done)
            if version is not None:
                same = done / "same_as"
                same_as = same.read_text() if same.is_file() else ""
                return Built(commit, True, 0.0, done / "bzImage", version, same_as=same_as)
            if (done / "bzImage").is_file() and (done / "version").is_file():
                said = (done / "version").read_text()
                self.log(f"{commit[:12]}: the kept bzImage is not {said}; building it again")
                self.forget(commit)
            if (done / "failed").is_file():  # the compiler said no, with this config
                return Built(commit, False, 0.0, error=(done / "failed").read_text())
            alike = self._built_alike(commit)
            if alike is not None:
                return alike
            t0 = time.monotonic()
            with cpu_seconds() as cpu:
                self.prepare_config()
                shutil.copy2(self.base_config, self.out / ".config")
                res = self._make("olddefconfig", timeout=600)
                if res.ok:
                    self.log(f"building {commit[:12]} (make -j{self.jobs} bzImage, nice {NICE})")
                    res = self._make("bzImage")
            seconds = time.monotonic() - t0
            if not res.ok:
                error = _error_lines(res.output)
                if res.returncode == 2 and "error:" in error:  # not a kill or a timeout
                    done.mkdir(parents=True, exist_ok=True)
                    (done / "failed").write_text(error)
                return Built(commit, False, seconds, error=error, cpu_seconds=cpu[0])
            release = (self.out / "include/config/kernel.release").read_text().strip()
            done.mkdir(parents=True, exist_ok=True)
            shutil.copy2(self.out / "arch/x86/boot/bzImage", done / "bzImage")
            shutil.copy2(self.out / ".config", done / ".config")
            (done / "version").write_text(release)
            return Built(commit, True, seconds, done / "bzImage", release, cpu_seconds=cpu[0])

    def _built_alike(self, commit: str) -> Built | None:
        """A kept build of a commit that differs from `commit` only in files no build
        reads, kept under `commit` too (a hard link: no copy); None if there is none."""
        kernels = self.dir / "kernels"
        if not kernels.is_dir():
            return None
        built = [d for d in kernels.iterdir() if (d / "bzImage").is_file()]
        kept = sorted(built, key=lambda d: d.stat().st_mtime, reverse=True)
        git = Git(self.tree)
        for other in kept[:SAME_AS_CANDIDATES]:
            version = _kept_version(other)
            if version is None:
                continue
            diff = git.run(
                "diff", "--name-only", other.name, commit, "--", check=False, timeout=120
            )
            changed = diff.stdout.splitlines()
            if not diff.ok or not all(UNBUILT.fullmatch(path) for path in changed):
                continue
            done = kernels / commit
            done.mkdir(parents=True, exist_ok=True)
            for name in ("bzImage", ".config"):
                (done / name).unlink(missing_ok=True)
                os.link(other / name, done / name)
            (done / "same_as").write_text(other.name)
            (done / "version").write_text(version)
            return Built(commit, True, 0.0, done / "bzImage", version, same_as=other.name)
        return None

    def forget(self, commit: str) -> None:
        shutil.rmtree(self.dir / "kernels" / commit, ignore_errors=True)


@contextmanager
def cpu_seconds() -> Iterator[list[float]]:
    """The CPU seconds (user + system) of the children this process waits for inside the
    block (make and everything it runs), in the list it gives, once the block ends."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = [0.0]
    try:
        yield spent
    finally:
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        spent[0] = round(used, 1)


def _kept_version(build: Path) -> str | None:
    """The release a kept build was made as, once its bzImage's own header names it
    (checked, not trusted); None when there is no kept build or it disagrees."""
    if not (build / "bzImage").is_file() or not (build / "version").is_file():
        return None
    version = (build / "version").read_text()
    return version if bzimage_version(build / "bzImage") == version else None


def _error_lines(output: str) -> str:
    """The compiler's errors if any (the first few), else the output's tail."""
    errors = [ln for ln in output.splitlines() if "error:" in ln or "Error " in ln]
    return "\n".join(errors[:6]) if errors else output[-800:]
